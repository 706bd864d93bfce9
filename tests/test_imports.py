"The workbench package has no import cycle (function-level imports included) and keeps its folder order; the checker finds both."
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]/'tools'))
import import_graph as ig

def test_no_import_cycle():
    "Every module imports only modules below it: the import graph of workbench/ is acyclic."
    g = ig.graph()
    assert 'workbench.studies.study' in g and 'workbench.targets.sim' in g
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

def test_folder_order():
    "Each folder imports only the folders before it (base, domain, sim, tracking, checks, targets, studies, search, evidence, cli)."
    assert ig.upward(ig.graph()) == []

def test_upward_import_is_found():
    "A domain module importing a target climbs the order and is reported; a sibling import is not (the checker can fail)."
    g = {'workbench.domain.results': {'workbench.targets.sim', 'workbench.domain.sla'}, 'workbench.domain.sla': set(),
         'workbench.targets.sim': {'workbench.domain.results'}, 'workbench.loose': set()}
    up = ig.upward(g)
    assert len(up) == 2 and 'workbench.domain.results imports workbench.targets.sim' in up[0] and 'workbench.loose is in no folder' in up[1]

def test_front_door():
    "Outside sim/, a module imports the simulator through `workbench.sim` only; reaching into `workbench.sim.engine` is reported."
    g = {'workbench.targets.sim': {'workbench.sim.engine', 'workbench.sim'}, 'workbench.sim': {'workbench.sim.engine'},
         'workbench.sim.engine': set(), 'workbench.sim.recipe': {'workbench.sim.engine'}}
    up = ig.upward(g)
    assert up == ['workbench.targets.sim imports workbench.sim.engine: outside sim/, use its front door `workbench.sim`'], up
    assert 'workbench.sim' in ig.graph() and ig.graph()['workbench.sim'] >= {'workbench.sim.engine', 'workbench.sim.recipe'}
