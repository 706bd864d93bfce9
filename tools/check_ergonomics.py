"""Ergonomics of the generated package, checked in `make lint-nbs` (as aiperf's tools/check_ergonomics.py does for aiperf).

Rules: a function is at most 80 lines; it takes at most 4 positional parameters (`self`/`cls` not counted),
the rest keyword-only; class names are unique across the package, and so are the other public top-level names (functions
and constants; `main`, a script's entry point, excepted); a module is at most 500 lines; a line is at most
120 characters (nbdev writes two things itself, left out: the module docstring, from the notebook's description, and
`__all__`).
`tools/ergonomics_baseline.txt` lists known exceptions, one `rule path:name` a line; an entry that no longer
fails must be removed from it. Usage: `python tools/check_ergonomics.py [--print-baseline]`.
"""
import ast, sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT/'workbench'
BASELINE = Path(__file__).with_name('ergonomics_baseline.txt')
MAX_FN_LINES, MAX_POSITIONAL, MAX_MODULE_LINES, MAX_LINE = 80, 4, 500, 120

def _files():
    return [p for p in sorted(PKG.rglob('*.py')) if p.name not in ('_modidx.py', '__init__.py')]

def _positional(fn) -> int:
    "Positional parameters of `fn`, not counting self/cls."
    ps = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    return len(ps) - (1 if ps and ps[0] in ('self', 'cls') else 0)

def _defs(tree, prefix=''):
    "(qualified name, node) of every class and function in `tree`, nested ones included (`Class.method`, `outer.inner`)."
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            yield name, node
            yield from _defs(node, name + '.')
        else: yield from _defs(node, prefix)

def _generated_lines(tree) -> set[int]:
    "Line numbers nbdev writes itself: the module docstring and the `__all__` assignment."
    out = set()
    for node in tree.body:
        doc = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        if (doc and node is tree.body[0]) or (isinstance(node, ast.Assign) and any(getattr(t, 'id', '') == '__all__' for t in node.targets)):
            out |= set(range(node.lineno, node.end_lineno + 1))
    return out

def long_lines(src:str, tree) -> list[int]:
    "Line numbers (1-based) longer than `MAX_LINE`, nbdev's own lines left out."
    gen = _generated_lines(tree)
    return [i for i, l in enumerate(src.splitlines(), 1) if len(l) > MAX_LINE and i not in gen]

ENTRY_POINTS = {'main'}

def _public(tree):
    "Public top-level function and constant names of a module (classes have their own rule)."
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)): yield node.name
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(t, ast.Name) and t.id != '__all__': yield t.id

def violations(files=None) -> list[str]:
    "Every rule broken in `files`, as 'rule path:name (detail)' keyed by 'rule path:name'."
    out, classes, names = [], defaultdict(list), defaultdict(list)
    for p in files or _files():
        rel = p.relative_to(ROOT).as_posix()
        src = p.read_text()
        n, tree = len(src.splitlines()), ast.parse(src, rel)
        if n > MAX_MODULE_LINES: out.append(f'module-lines {rel}:{p.stem} ({n} lines > {MAX_MODULE_LINES})')
        if ls := long_lines(src, tree): out.append(f'line-length {rel}:{p.stem} ({len(ls)} line(s) > {MAX_LINE}: lines {ls[:5]})')
        for name in set(_public(tree)) - ENTRY_POINTS:
            if not name.startswith('_'): names[name].append(rel)
        for name, node in _defs(tree):
            if isinstance(node, ast.ClassDef): classes[node.name].append(rel); continue
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FN_LINES: out.append(f'function-lines {rel}:{name} ({lines} lines > {MAX_FN_LINES})')
            if (k := _positional(node)) > MAX_POSITIONAL:
                out.append(f'positional-params {rel}:{name} ({k} positional > {MAX_POSITIONAL}: make the rest keyword-only)')
    for name, where in sorted(classes.items()):
        if len(where) > 1: out.append(f'class-names {where[0]}:{name} (also in {", ".join(where[1:])})')
    for name, where in sorted(names.items()):
        if len(where) > 1: out.append(f'public-names {sorted(where)[0]}:{name} (also in {", ".join(sorted(where)[1:])}: '
                                      'one name, one thing)')
    return out

def key(v:str) -> str: return v.split(' (')[0]

def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    vs = violations()
    if '--print-baseline' in argv:
        print('\n'.join(sorted(key(v) for v in vs))); return 0
    base = {l.split('#')[0].strip() for l in BASELINE.read_text().splitlines()} - {''} if BASELINE.exists() else set()
    new = [v for v in vs if key(v) not in base]
    stale = sorted(base - {key(v) for v in vs})
    for v in new: print(f'ergonomics: {v}')
    for s in stale: print(f'ergonomics: {s} is fixed: remove it from {BASELINE.relative_to(ROOT)}')
    if new or stale: return 1
    print(f'ergonomics ok ({len(vs)} baselined exception(s) in {BASELINE.relative_to(ROOT)})')
    return 0

if __name__ == '__main__': sys.exit(main())
