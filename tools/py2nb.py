"Author notebooks as jupytext percent scripts: convert `X.py` (cells split by `# %%`) to nbs/X.ipynb."
import sys
from pathlib import Path
import jupytext, nbformat

KERNEL = {'kernelspec': {'display_name': 'python3', 'language': 'python', 'name': 'python3'}}

def convert(src: Path, dst: Path):
    "Write `src` as a clean notebook at `dst` with the python3 kernelspec."
    nb = jupytext.read(src, fmt='py:percent')
    nb.metadata = dict(KERNEL)
    for c in nb.cells:
        tags = c.metadata.get('tags')
        c.metadata = {'tags': tags} if tags else {}
    dst.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dst)
    print(f'{src} -> {dst}')

if __name__ == '__main__':
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
