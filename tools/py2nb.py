"Author notebooks as jupytext percent scripts: convert `X.py` (cells split by `# %%`) to nbs/X.ipynb."
import sys
from pathlib import Path
import jupytext, nbformat

KERNEL = {'kernelspec': {'display_name': 'python3', 'language': 'python', 'name': 'python3'}}

def _old_ids(dst: Path) -> dict:
    "Cell source -> id in the notebook being replaced (unchanged cells keep their ids, so diffs stay small)."
    if not dst.exists(): return {}
    out = {}
    for c in nbformat.read(dst, as_version=4).cells: out.setdefault((c.cell_type, c.source), c.get('id'))
    return out

def convert(src: Path, dst: Path):
    "Write `src` as a clean notebook at `dst` with the python3 kernelspec."
    nb = jupytext.read(src, fmt='py:percent')
    ids, used = _old_ids(dst), set()
    nb.metadata = dict(KERNEL)
    for c in nb.cells:
        tags = c.metadata.get('tags')
        c.metadata = {'tags': tags} if tags else {}
        old = ids.get((c.cell_type, c.source))
        if old and old not in used: c['id'] = old; used.add(old)
    dst.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dst)
    print(f'{src} -> {dst}')

if __name__ == '__main__':
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
