"The workbench package has no import cycle (function-level imports included), and the checker finds one when there is."
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]/'tools'))
import import_graph as ig

def test_no_import_cycle():
    "Every module imports only modules below it: the import graph of workbench/ is acyclic."
    g = ig.graph()
    assert 'workbench.study' in g and 'workbench.targets.sim' in g
    assert ig.cycles(g) == [], ig.cycles(g)
    assert ig.layers(g)[0], 'no bottom layer'

def test_cycle_is_found():
    "A circle through a function-level import is reported (the checker can fail)."
    g = {'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}
    assert ig.cycles(g) == [['a', 'b', 'c']]

def test_function_level_imports_count(tmp_path, monkeypatch):
    "An import inside a function is an edge of the graph."
    pkg = tmp_path/'workbench'; pkg.mkdir()
    (pkg/'__init__.py').write_text('')
    (pkg/'low.py').write_text('def f():\n    from .high import g\n    return g\n')
    (pkg/'high.py').write_text('from .low import f\n')
    monkeypatch.setattr(ig, 'ROOT', tmp_path); monkeypatch.setattr(ig, 'PKG', pkg)
    g = ig.graph()
    assert g['workbench.low'] == {'workbench.high'} and ig.cycles(g) == [['workbench.high', 'workbench.low']]
