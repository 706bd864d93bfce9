"""Run-to-run spread of a live local point: the measurement behind `reproduce.HOST_SPREAD`.

Runs the Motif 3 recipe on the local target (mocker workers, B200 step timing) at concurrency 1,
8 requests, OSL 16 -- the point the reproduce notebook runs twice -- `--repeats` times, and prints
per run TTFT p50, ITL p50, tok/s/GPU and the host's load per core, then each statistic's relative
standard deviation across runs, and the CPU seconds beside the wall time.

Usage: .venv/bin/python bench/local_repeat.py [--repeats 8]
Load the host on purpose to see the loaded figure, e.g. two `python3 -c "while True: pass"` loops,
a numpy matmul loop and `dd ... conv=fsync` in a loop (a CI-like load of about 3 per core).
"""
import argparse, os, statistics, tempfile, time
from workbench.base.core import env_set
from workbench.domain.loading import load_recipe
from workbench.domain.variants import recipe_variant
from workbench.targets.local import LocalTarget
from workbench.studies.reproduce import load_per_core

STATS = (('time_to_first_token', 'p50', 'TTFT p50 (ms)'), ('inter_token_latency', 'p50', 'ITL p50 (ms)'), (None, None, 'tok/s/GPU'))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--repeats', type=int, default=8)
    a = ap.parse_args()
    v = recipe_variant(load_recipe('motif-3'))
    rows, w0, c0 = [], time.time(), time.process_time()
    with tempfile.TemporaryDirectory() as d, env_set(WORKBENCH_RUNS=d):
        for i in range(a.repeats):
            t = LocalTarget(osl=16, requests_per_point=8, warmup=0, progress=False)
            try: [r] = t.run(v, [1])
            finally: t.teardown()
            row = {label: (r.output_tok_s_per_gpu if m is None else r.value(m, s)) for m, s, label in STATS}
            rows.append({**row, 'load/core': load_per_core()})
            print(f'run {i}: ' + ', '.join(f'{k} {x:.2f}' for k, x in rows[-1].items()), flush=True)
    for _, _, label in STATS:
        xs = [r[label] for r in rows]
        print(f'{label:14s} mean {statistics.mean(xs):8.2f}  relative sd {100*statistics.stdev(xs)/statistics.mean(xs):4.1f}%  '
              f'range {min(xs):.2f}-{max(xs):.2f}')
    print(f'wall {time.time()-w0:.0f} s, CPU {time.process_time()-c0:.1f} s (this process; the graph runs in its own), '
          f'load per core {min(r["load/core"] for r in rows):.2f}-{max(r["load/core"] for r in rows):.2f}')


if __name__ == '__main__':
    main()
