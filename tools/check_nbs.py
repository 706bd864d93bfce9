"Fail when nbdev_clean or nbdev_export would change tracked files (notebooks dirty or out of sync)."
import subprocess, sys
from pathlib import Path

root = Path(__file__).resolve().parents[1]
bindir = Path(sys.executable).parent

def _run(*cmd):
    "Run a command in the repo root, failing loudly."
    subprocess.run(cmd, cwd=root, check=True)

def _changed():
    "Tracked or new files under nbs/ and workbench/ that differ from git."
    out = subprocess.run(['git', 'status', '--porcelain', '--', 'nbs', 'workbench'], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    return out.strip()

before = _changed()
_run(str(bindir / 'nbdev_clean'))
_run(str(bindir / 'nbdev_export'))
after = _changed()
if after != before:
    print('Notebooks are dirty or out of sync with workbench/: run `nbdev_export && nbdev_clean` and commit.')
    subprocess.run(['git', '--no-pager', 'diff', '--stat', '--', 'nbs', 'workbench'], cwd=root)
    print(after)
    sys.exit(1)
print('notebooks clean and in sync with the package')
