"Every library notebook (nbs/NN_folder/..., one folder per package folder) is a test: run each one with nbdev's test runner so pytest reports per notebook."
import os
from pathlib import Path
import pytest
from nbdev.config import get_config
from nbdev.test import test_nb as run_nb

NBS = Path(__file__).resolve().parents[1]/'nbs'
FLAGS = os.environ.get('NBDEV_TEST_FLAGS', '').split()
SKIP = get_config(path=NBS.parent).tst_flags.split()     # settings.ini: cells with these flags run only when forced
NOTEBOOKS = sorted(p for p in NBS.glob('[0-9]*/**/*.ipynb') if not p.name.startswith('_') and '.ipynb_checkpoints' not in p.parts)

@pytest.mark.parametrize('nb', NOTEBOOKS, ids=[str(p.relative_to(NBS).with_suffix('')) for p in NOTEBOOKS])
def test_notebook(nb, monkeypatch):
    "Run every cell of `nb` (cells flagged notest, or with a flag not in NBDEV_TEST_FLAGS, are skipped)."
    monkeypatch.chdir(NBS)
    ok, _ = run_nb(nb, skip_flags=SKIP, force_flags=FLAGS, do_print=False)
    assert ok, f'{nb.name} failed: see the traceback above'
