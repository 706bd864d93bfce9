"""Benchmark: one full sim study of one model (baseline + recipe + 12 one-group variants x 4 concurrencies).

Prints wall time, CPU time (this process and its workers) and simulated requests per CPU-second, split
into the one-off work (timing profiles from aiconfigurator; the pilot replay that prices prefill
chunking; the prices themselves come from the shipped validation) and the replays (straight through the
engine, not the point cache). Goal: >= 20,000 simulated requests per CPU-second.

    .venv/bin/python bench/sim_study.py [--model motif-3] [--requests 500] [--jobs 2] [--warm]

By default the caches (profiles, calibrations, traces) start empty in a temporary WORKBENCH_RUNS, so
the numbers include building every profile; --warm reuses runs/cache as it is. Wall time depends on
what else the machine runs; CPU time does not (much).
"""
import argparse, os, resource, sys, tempfile, time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing as mp

VARIANTS = [  # the 12 one-group variants (a Motif-3-shaped set; a variant a recipe cannot take is skipped with its reason)
    ('parallelism', dict(tensor_parallel_size=4)), ('parallelism', dict(expert_parallel=False)), ('parallelism', dict(replicas=2)),
    ('routing', dict(mode='kv')), ('routing', dict(mode='random')),
    ('cache', dict(block_size=64)), ('cache', dict(max_num_seqs=64)), ('cache', dict(max_num_batched_tokens=16384)), ('cache', dict(prefix_caching=False)),
    ('speculative', dict(num_tokens=3, acceptance_length=2.21, acceptance_length_source='published k=3 on SPEED-Bench coding')),
    ('speculative', dict(method='none', num_tokens=None, acceptance_length=None, acceptance_length_source=None)),
    ('topology', dict(topology='disagg')),
]

def variants(model, quiet=True):
    "Baseline, recipe and the one-group variants this recipe accepts."
    from workbench.domain.variants import recipe_variant, baseline, variant
    rv = recipe_variant(model); out = [baseline(model), rv]
    for g, ch in VARIANTS:
        try: out.append(variant(rv, g, **ch))
        except Exception as e:
            if not quiet: print(f'skipped {g} {ch}: {e}', file=sys.stderr)
    return out

def _setup(model, requests, i):
    "(variant, simulator setup, prices) of variant i; None for a variant the sim does not model."
    from workbench.targets.sim import SimTarget
    from workbench.sim.trust import unmodelled
    v = variants(model)[i]
    if unmodelled(v): return None
    tgt = SimTarget(requests=requests, progress=False)
    return v, tgt.setup(v)[0], tgt.pricing(v)[0]

def prepare(args):
    "Build the timing profiles of variant i, then its pilot replay (the prefill prices), in a worker process: (profile cpu, pilot cpu)."
    model, requests, i = args
    from workbench.sim.engine import engine_args, pool_prefill_prices
    c = time.process_time()
    if (s := _setup(model, requests, i)) is None: return 0.0, 0.0
    v, st, p = s
    for w in st.workers: engine_args(st, w, p)
    c1 = time.process_time()
    pool_prefill_prices(st)
    return c1 - c, time.process_time() - c1

def replay(args):
    "Simulate variant i at every concurrency in a worker process, straight through the engine (no point cache): (rows, cpu)."
    model, requests, i, concs = args
    from workbench.sim.engine import simulate
    if (s := _setup(model, requests, i)) is None: return [], 0.0
    v, st, p = s
    c = time.process_time()
    rows = [(v.name, r.concurrency, r.request_count, r.output_tok_s_per_gpu) for r in (simulate(st, k, pricing=p) for k in concs)]
    return rows, time.process_time() - c

def cpu():
    "CPU seconds of this process plus its finished children."
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--model', default='motif-3')
    ap.add_argument('--requests', type=int, default=500)
    ap.add_argument('--concurrencies', default='4,8,16,32')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--warm', action='store_true', help='reuse runs/cache instead of a fresh cache')
    a = ap.parse_args()
    if not a.warm: os.environ['WORKBENCH_RUNS'] = tempfile.mkdtemp(prefix='sim-study-')
    os.environ.setdefault('DYN_LOG', 'error')
    concs = [int(c) for c in a.concurrencies.split(',')]
    t0, c0 = time.time(), cpu()
    vs = variants(a.model, quiet=False)
    with ProcessPoolExecutor(a.jobs, mp_context=mp.get_context('spawn')) as pool:   # spawn: never fork a live engine runtime
        prep = list(pool.map(prepare, [(a.model, a.requests, i) for i in range(len(vs))]))
        prof_cpu, pilot_cpu = sum(p for p, _ in prep), sum(q for _, q in prep)
        t1 = time.time()
        out = list(pool.map(replay, [(a.model, a.requests, i, concs) for i in range(len(vs))]))
        rows, rep_cpu = [r for rs, _ in out for r in rs], sum(c for _, c in out)
    t2, c2 = time.time(), cpu()
    reqs = sum(r[2] for r in rows)
    print(f'model {a.model}: {len(vs)} variants x {len(concs)} concurrencies = {len(rows)} points, {reqs} simulated requests '
          f'({a.requests}/point), {a.jobs} worker processes, {"warm" if a.warm else "cold"} caches')
    print(f'one-off: profiles cpu {prof_cpu:5.2f} s, pilot replays cpu {pilot_cpu:5.2f} s; wall {t1-t0:6.2f} s')
    print(f'replays: wall {t2-t1:6.2f} s, cpu {rep_cpu:6.2f} s in the workers -> {reqs/rep_cpu:,.0f} simulated requests per CPU-second '
          f'(goal >= 20,000)')
    print(f'whole study: wall {t2-t0:6.2f} s, cpu {c2-c0:6.2f} s incl. process start-up (target: under 20 s on 2 cores; '
          f'this machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})')
    best = max((r for r in rows if r[3] is not None), key=lambda r: r[3])   # not-modelled variants are skipped: they have no number
    print(f'highest simulated tok/s/GPU: {best[0]} c{best[1]} {best[3]:.1f}')

if __name__ == '__main__':
    main()
