"""Export, then example: every `#| export` cell of a library notebook is followed (before the next exported cell)
by a code cell that asserts something (`test_eq`, `test_fail`, `test_close`, `test`, `assert`), as in
nbs/06_studies/00_report.ipynb and nbs/05_targets/02_sim.ipynb. A cell that only imports is not an export that needs one.
`tools/examples_baseline.txt` lists known exceptions as `notebook:name`, one a line (remove a line once fixed).
Usage: `python tools/check_examples.py [NOTEBOOK ...]`; prints what is missing and exits 1 if anything is.
"""
import json, re, sys
from pathlib import Path

NBS = Path(__file__).resolve().parents[1]/'nbs'
BASELINE = Path(__file__).with_name('examples_baseline.txt')
ASSERTS = re.compile(r'\b(test_eq|test_fail|test_close|test_ne|test_is|test|assert)\b')
DEFS = re.compile(r'^(?:def|class|async def)\s+(\w+)|^(\w+)\s*=', re.M)

def _src(c): return ''.join(c['source']) if isinstance(c['source'], list) else c['source']

def missing(nb:Path) -> list[str]:
    "Names exported by cells of `nb` that no asserting code cell follows before the next export."
    cells = [c for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'code']
    out, pending = [], []
    for c in cells:
        s = _src(c)
        first = s.lstrip().splitlines()[0] if s.strip() else ''
        if re.match(r'#\|\s*export', first):
            body = '\n'.join(l for l in s.splitlines() if not l.startswith(('#|', 'from ', 'import ')))
            names = [a or b for a, b in DEFS.findall(body) if not (a or b).startswith('_') or (a or b) == '__init__']
            if pending: out += pending
            pending = names
        elif pending and ASSERTS.search(s): pending = []
    return out + pending

def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    nbs = [Path(a).resolve() for a in argv] or sorted(p for p in NBS.glob('[0-9]*/**/*.ipynb') if not p.name.startswith('_')
                                                      and '.ipynb_checkpoints' not in p.parts)
    base = {l.split('#')[0].strip() for l in BASELINE.read_text().splitlines()} - {''} if BASELINE.exists() else set()
    found = {f'{nb.relative_to(NBS)}:{n}' for nb in nbs for n in missing(nb)}
    bad, stale = sorted(found - base), sorted(b for b in base - found if not argv)
    for b in bad: print(f'{b}: no asserting example after this export')
    for b in stale: print(f'{b}: has an example now: remove it from {BASELINE.name}')
    if not bad and not stale: print(f'every export of {len(nbs)} notebook(s) is followed by an asserting example ({len(base)} baselined)')
    return 1 if bad or stale else 0

if __name__ == '__main__': sys.exit(main())
