"""Same inputs and seed, same numbers, in any process: one simulated point computed in two fresh processes (empty runs folders,
nothing kept) is bit-identical; and a point the engine cannot compute bit-identically (KV routing over several workers, whose
ties Dynamo 1.6.1 breaks with an unseeded generator) reads the same in every later process, from the point the first one kept."""
import json, os, subprocess, sys
from pathlib import Path

CODE = """
import json, sys
from workbench.targets.sim import SimTarget
from workbench.variants import recipe_variant
model, topology, c = sys.argv[1], sys.argv[2] or None, int(sys.argv[3])
r = SimTarget(requests=200, progress=False).point(recipe_variant(model, topology), c, telemetry_ms=None)
print('RESULT ' + json.dumps({'metrics': {k: m.model_dump() for k, m in r.metrics.items()}, 'reuse': r.prefix_cache_hit_rate,
                              'band': r.error_band}))
"""

def _point(runs:Path, model:str, topology:str, c:int) -> dict:
    "The point's numbers as a fresh process computes them with runs folder `runs` (caches shared, points not)."
    env = {**os.environ, 'WORKBENCH_RUNS': str(runs)}
    out = subprocess.run([sys.executable, '-c', CODE, model, topology, str(c)], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(next(l for l in out.stdout.splitlines() if l.startswith('RESULT '))[7:])

def _runs(tmp_path:Path, name:str) -> Path:
    "A runs folder that shares the checkout's profile and pilot caches but keeps its own points."
    from workbench.core import runs_dir
    d = tmp_path/name; (d/'cache').mkdir(parents=True)
    for sub in ('profiles', 'prefix', 'traces', 'standins', 'calibrations'):
        src = runs_dir()/'cache'/sub; src.mkdir(parents=True, exist_ok=True); (d/'cache'/sub).symlink_to(src.resolve())
    return d

def test_fresh_processes_agree(tmp_path):
    "Motif 3's aggregated recipe point (one worker, MTP drafts drawn with a fixed seed) in two fresh processes: bit for bit."
    a, b = (_point(_runs(tmp_path, n), 'motif-3', 'agg', 11) for n in ('a', 'b'))
    assert a == b

def test_kept_point_reads_back(tmp_path):
    "The 3P1D recipe (KV router over three prefill workers): a second process reads the first one's kept point, bit for bit."
    runs = _runs(tmp_path, 'shared')
    first, second = _point(runs, 'motif-3', 'disagg-3p1d', 16), _point(runs, 'motif-3', 'disagg-3p1d', 16)
    assert first == second and list((runs/'cache'/'points').glob('*.json'))
