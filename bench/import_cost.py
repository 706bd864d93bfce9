"""Benchmark: what the workbench costs beyond the simulator's own work (issue 15, item 10).

Prints, with the goals beside them:
  first cell   the study notebook's parameters and first code cell, read from the notebook, in a fresh process   goal <= 2 s
  import sim   `import workbench.targets.sim` in a fresh process
  warm study   a small sim study in one process whose profile, calibration and trace caches are warm: wall time
               minus the time spent inside the replay engine (`workbench.sim.engine.replay`)                    goal <= 2 s
  demo         with --demo, `workbench demo` end to end (the notebook run by papermill), in an empty runs folder goal <= 30 s
  warm demo    with --demo, the same command again: every point reused                                           goal <= 15 s
Each fresh-process figure is the best of --repeat runs (the machine is shared; the best run is the one least
disturbed by others). `make demo` on a fresh clone adds `make venv` (about 15 s with a warm package cache).

    .venv/bin/python bench/import_cost.py [--repeat 3] [--demo]
"""
import argparse, os, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

STUDY = ROOT/'nbs'/'studies'/'motif_3.ipynb'

def first_cell(nb:Path=STUDY) -> str:
    "The study notebook's parameters cell and first code cell, as they are, wrapped to print their seconds."
    import json
    cells = [''.join(c['source']) for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'code']
    return 'import time; t0 = time.perf_counter()\n' + cells[0] + '\n' + cells[1] + '\nprint(time.perf_counter() - t0)\n'

IMPORT_SIM = 'import time; t0 = time.perf_counter(); import workbench.targets.sim; print(time.perf_counter() - t0)'

def fresh(code:str, repeat:int) -> float:
    "Best of `repeat` fresh-process timings of `code` (which prints its own seconds)."
    return min(float(subprocess.run([PY, '-c', code], capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()[-1])
               for _ in range(repeat))

def warm_study(repeat:int=3) -> tuple[float, float, int]:
    "(wall, seconds inside the replay engine, points) of a small study in this process with warm caches (best of `repeat`)."
    import workbench.sim.engine as sim
    from workbench.tracking import runs as tracking
    from workbench.studies.study import run_study
    spent = [0.0]
    real = sim.replay
    def timed(*a, **k):
        t = time.perf_counter()
        try: return real(*a, **k)
        finally: spent[0] += time.perf_counter() - t
    sim.replay = timed
    kw = dict(groups=['speculative', 'cache'], concurrencies=[4, 8], request_count=120, progress=False, target_options={'progress': False})
    runs = []
    with tempfile.TemporaryDirectory() as d:
        run_study('motif-3', tracking_uri=tracking.fresh_store(Path(d)/'warmup.db'), **kw)        # fills the caches and imports
        for i in range(repeat):                                                                   # fresh stores: every point runs
            spent[0] = 0.0
            t = time.perf_counter()
            out = run_study('motif-3', tracking_uri=tracking.fresh_store(Path(d)/f'measured{i}.db'), **kw)
            runs.append((time.perf_counter() - t, spent[0], out.ran))
    sim.replay = real
    return min(runs, key=lambda r: r[0] - r[1])

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--demo', action='store_true', help='also time `workbench demo` (about a minute of simulation)')
    a = ap.parse_args()
    os.environ.setdefault('DYN_LOG', 'error')
    print(f'first cell   {fresh(first_cell(), a.repeat):6.2f} s   (goal <= 2 s; {STUDY.name}: parameters + first code cell, read from the notebook, best of {a.repeat} fresh processes)')
    print(f'import sim   {fresh(IMPORT_SIM, a.repeat):6.2f} s   (best of {a.repeat} fresh processes)')
    wall, rep, n = warm_study(a.repeat)
    print(f'warm study   {wall - rep:6.2f} s   of workbench time beyond the replays (goal <= 2 s): wall {wall:.2f} s, '
          f'replay engine {rep:.2f} s, {n} points, in-process with warm caches')
    if a.demo:
        with tempfile.TemporaryDirectory() as d:
            for what, goal in (('demo', '30 s; `workbench demo` in an empty runs folder, without make venv'),
                               ('warm demo', '15 s; the same again: every point reused from MLflow')):
                t, c = time.perf_counter(), os.times()
                subprocess.run([str(Path(PY).with_name('workbench')), 'demo', '-q'], cwd=ROOT, check=True, capture_output=True,
                               env={**os.environ, 'WORKBENCH_RUNS': d})
                cpu = sum(os.times()[2:4]) - sum(c[2:4])
                print(f'{what:12s} {time.perf_counter() - t:6.2f} s   ({cpu:.1f} CPU-s in its processes; goal <= {goal})')
    print(f'machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}')

if __name__ == '__main__': main()
