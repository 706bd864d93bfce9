"The ergonomics check passes on the package (baseline included) and fails on a module that breaks its rules."
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]/'tools'))
import check_ergonomics as ce

def test_package_passes():
    "No rule is broken beyond the baseline, and no baseline entry is stale."
    assert ce.main([]) == 0

def test_rules_fail(tmp_path, monkeypatch):
    """Each rule reports its breach: long function, five positional parameters, a repeated class name, a public function or
    constant named in two modules (`main` and private names excepted), a module over 500 lines, a line over 120 characters
    (nbdev's own module docstring and `__all__` are left out)."""
    pkg = tmp_path/'workbench'; pkg.mkdir()
    body = '\n'.join(f'    x{i} = {i}' for i in range(85))
    (pkg/'a.py').write_text(f'class Dup: pass\ndef long():\n{body}\n    return 0\ndef many(a, b, c, d, e): pass\ndef ok(a, b, c, d, *, e): pass\n')
    (pkg/'b.py').write_text('class Dup: pass\n' + '_x = 1\n'*500)
    (pkg/'c.py').write_text('"' + 'd'*130 + '"\n__all__ = [' + "'n', "*40 + ']\n_x = 1\n' + '_y = 1' + ' '*120 + '# z\n')
    (pkg/'d.py').write_text('_x = 1\n'*500)
    (pkg/'e.py').write_text('def ok(): pass\ndef main(): pass\ndef _own(): pass\nLIMIT = 3\n')
    (pkg/'f.py').write_text('def main(): pass\ndef _own(): pass\nLIMIT = 4\n')
    monkeypatch.setattr(ce, 'ROOT', tmp_path); monkeypatch.setattr(ce, 'PKG', pkg)
    got = sorted(ce.key(v) for v in ce.violations())
    assert got == ['class-names workbench/a.py:Dup', 'function-lines workbench/a.py:long', 'line-length workbench/c.py:c',
                   'module-lines workbench/b.py:b', 'positional-params workbench/a.py:many',
                   'public-names workbench/a.py:ok', 'public-names workbench/e.py:LIMIT'], got
    assert 'lines [4]' in next(v for v in ce.violations() if v.startswith('line-length'))   # the docstring and __all__ are not counted

def test_examples_check_fails(tmp_path):
    "An exported function with no asserting cell before the next export is reported; one with an example is not."
    import json
    import check_examples as cx
    cell = lambda src: {'cell_type': 'code', 'source': src, 'metadata': {}, 'outputs': [], 'execution_count': None}
    nb = tmp_path/'x.ipynb'
    nb.write_text(json.dumps({'cells': [cell('#| export\ndef shown(): return 1'), cell('test_eq(shown(), 1)'),
                                        cell('#| export\ndef hidden(): return 2'), cell('#| export\ndef last(): return 3'), cell('print(last())')]}))
    assert cx.missing(nb) == ['hidden', 'last']
