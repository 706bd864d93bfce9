"""Print the import graph of the `workbench` package, layer by layer, and fail on any cycle or on an import that climbs
up the folder order (each folder of workbench/ imports only the folders before it in `FOLDERS`, and itself).

Every `import` statement counts, at module level or inside a function (a function-level import that
closes a circle only hides it until the function runs). Usage: `python tools/import_graph.py [--dot]`.
"""
import ast, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT/'workbench'

FOLDERS = ['base', 'domain', 'sim', 'tracking', 'checks', 'targets', 'studies', 'search', 'evidence', 'cli']
FRONT_DOORS = {'sim'}   # folders the rest of the package may use only through their `__init__`

def folder_of(mod:str) -> str:
    "The top folder of workbench module `mod` (`workbench.targets.k8s.deploy` -> `targets`; `workbench.cli` -> `cli`)."
    return mod.split('.')[1] if mod.count('.') else ''

def upward(g:dict[str, set[str]]) -> list[str]:
    "Every import from a folder to a folder after it in `FOLDERS` (a module outside every folder is reported too)."
    out = []
    for m in sorted(g):
        if m == 'workbench': continue
        if folder_of(m) not in FOLDERS: out.append(f'{m} is in no folder of {FOLDERS}'); continue
        for d in sorted(g[m]):
            if folder_of(d) not in FOLDERS or FOLDERS.index(folder_of(d)) > FOLDERS.index(folder_of(m)):
                out.append(f'{m} imports {d}: {folder_of(m)}/ may import only {", ".join(FOLDERS[:FOLDERS.index(folder_of(m)) + 1])}')
            elif folder_of(d) in FRONT_DOORS and folder_of(d) != folder_of(m) and d != f'workbench.{folder_of(d)}':
                out.append(f'{m} imports {d}: outside {folder_of(d)}/, use its front door `workbench.{folder_of(d)}`')
    return out

def module_name(path:Path) -> str:
    "Dotted module name of a file under workbench/ (a package's __init__ is the package)."
    parts = list(path.relative_to(ROOT).with_suffix('').parts)
    if parts[-1] == '__init__': parts = parts[:-1]
    return '.'.join(parts)

def _resolve(mod:str, node:ast.ImportFrom, is_pkg:bool) -> str:
    "The absolute module an `ImportFrom` names."
    if not node.level: return node.module or ''
    base = mod.split('.') if is_pkg else mod.split('.')[:-1]
    base = base[:len(base) - (node.level - 1)]
    return '.'.join(base + ([node.module] if node.module else []))

def imports_of(path:Path, modules:set[str], packages:set[str]=frozenset({'workbench'})) -> set[str]:
    """The workbench modules that the file at `path` imports anywhere (module level or inside functions): a name imported
    from a package is an edge to the submodule it names, else to the package (its `__init__`, a front door)."""
    mod, is_pkg = module_name(path), path.name == '__init__.py'
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import): names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(mod, node, is_pkg)
            names = [f'{base}.{a.name}' if f'{base}.{a.name}' in modules else base for a in node.names]
        else: continue
        for n in names:
            while n and n not in modules: n = n.rpartition('.')[0]   # `from .targets import sim` -> workbench.targets.sim
            if n and n != mod and n not in packages: out.add(n)
    return out

def graph() -> dict[str, set[str]]:
    "Module -> the workbench modules it imports (a package's `__init__` is the package: a front door, or empty)."
    files = [p for p in sorted(PKG.rglob('*.py')) if p.name != '_modidx.py']
    modules = {module_name(p) for p in files}
    return {module_name(p): imports_of(p, modules) for p in files}

def cycles(g:dict[str, set[str]]) -> list[list[str]]:
    "Every strongly connected group of more than one module, or a module importing itself (Tarjan)."
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in g.get(v, ()):
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1 or v in g.get(v, ()): out.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in g:
        if v not in index: visit(v)
    return out

def layers(g:dict[str, set[str]]) -> list[list[str]]:
    "Modules by layer: layer 0 imports no workbench module; layer k imports only modules of lower layers."
    level = {}
    def depth(v, seen=()):
        if v in level: return level[v]
        if v in seen: raise ValueError(f'cycle through {v}')
        level[v] = 1 + max((depth(w, seen + (v,)) for w in g.get(v, ())), default=-1)
        return level[v]
    for v in g: depth(v)
    out = [[] for _ in range(max(level.values()) + 1)]
    for v, k in sorted(level.items()): out[k].append(v)
    return out

def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    g = graph()
    if cs := cycles(g):
        for c in cs: print('import cycle: ' + ' <-> '.join(c))
        return 1
    if up := upward(g):
        for u in up: print('import against the folder order: ' + u)
        return 1
    if '--dot' in argv:
        print('digraph workbench {'); [print(f'  "{a}" -> "{b}";') for a in sorted(g) for b in sorted(g[a])]; print('}')
        return 0
    for k, mods in enumerate(layers(g)):
        for m in mods: print(f'L{k} {m:28} -> {", ".join(sorted(x.removeprefix("workbench.") for x in g[m])) or "-"}')
    return 0

if __name__ == '__main__': sys.exit(main())
