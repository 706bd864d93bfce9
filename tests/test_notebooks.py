"Every library notebook is a test: run each one with nbdev's test runner so pytest reports per notebook."
import os
from pathlib import Path
import pytest
from nbdev.config import get_config
from nbdev.test import test_nb as run_nb

NBS = Path(__file__).resolve().parents[1]/'nbs'
FLAGS = os.environ.get('NBDEV_TEST_FLAGS', '').split()
SKIP = get_config(path=NBS.parent).tst_flags.split()     # settings.ini: cells with these flags run only when forced
NOTEBOOKS = sorted(p for p in NBS.glob('*.ipynb') if not p.name.startswith('_'))

@pytest.mark.parametrize('nb', NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook(nb, monkeypatch):
    "Run every cell of `nb` (cells flagged notest, or with a flag not in NBDEV_TEST_FLAGS, are skipped)."
    monkeypatch.chdir(NBS)
    ok, _ = run_nb(nb, skip_flags=SKIP, force_flags=FLAGS, do_print=False)
    assert ok, f'{nb.name} failed: see the traceback above'
