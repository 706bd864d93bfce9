"""Per-point overhead of the live local target beyond AIPerf's own fixed cost.

For each point it separates:
  benchmark  - AIPerf's measured benchmark_duration (the load itself),
  aiperf_fixed - AIPerf process wall time minus benchmark_duration (its start-up, dataset, export),
  workbench  - run_points wall time minus the AIPerf process wall time (liveness checks, two /metrics
               scrapes, export parsing),
and, per graph, start-up (until every worker is registered), smoke check, and shutdown time.

Usage: .venv/bin/python bench/local_overhead.py [--points 1,4,8] [--workers 2] [--out runs/bench/local_overhead.json]
Timing uses the synthetic fixture profile (a test fixture, not B200 timing): the numbers measure this
host and the workbench, not a model.
"""
import argparse, json, os, time
from pathlib import Path
from workbench.base.core import runs_dir
from workbench.targets.aiperf import AIPerfSpec, load_aiperf_export
from workbench.targets.modelfolder import local_model
from workbench.targets.local import LocalGraph, fixture_profile, run_points
from workbench.targets.workers import WorkerSpec, smoke_check


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--points', default='1,4,8', help='comma-separated concurrencies')
    ap.add_argument('--workers', type=int, default=2)
    ap.add_argument('--requests-per-concurrency', type=int, default=4)
    ap.add_argument('--out', default=str(runs_dir()/'bench'/'local_overhead.json'))
    a = ap.parse_args()
    conc = [int(x) for x in a.points.split(',')]
    t0 = time.time(); model = local_model(); t_model = time.time() - t0
    profile = fixture_profile(runs_dir()/'cache'/'fixture_profile_v1.npz')
    spec = AIPerfSpec(isl=256, osl=16, random_seed=3)
    rows = []
    g = LocalGraph([WorkerSpec(count=a.workers)], router_mode='kv', profile_npz=profile, model=model)
    t0 = time.time(); g.start(); t_start = time.time() - t0
    try:
        t0 = time.time(); v = smoke_check(g.url, g.model_name); t_smoke = time.time() - t0
        assert v.passed, v.failures()
        for c in conc:
            t0 = time.time()
            [r] = run_points(g, spec.at(c, request_count=a.requests_per_concurrency*c), smoke=False, progress=False)
            wall = time.time() - t0
            bd = load_aiperf_export(r.extra['export']).benchmark_duration.avg
            ap_wall = r.extra['aiperf_wall_s']
            rows.append(dict(concurrency=c, requests=r.request_count, point_wall_s=wall, aiperf_wall_s=ap_wall,
                             benchmark_s=bd, aiperf_fixed_s=ap_wall-bd, workbench_s=wall-ap_wall))
    finally:
        t0 = time.time(); g.stop(); t_stop = time.time() - t0
    out = dict(host_cpus=os.cpu_count(), loadavg_end=os.getloadavg(), model_build_or_reuse_s=t_model,
               graph_start_s=t_start, smoke_s=t_smoke, graph_stop_s=t_stop, workers=a.workers, points=rows)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True); Path(a.out).write_text(json.dumps(out, indent=1))
    print(f'graph start {t_start:.2f} s, smoke {t_smoke:.2f} s, stop {t_stop:.2f} s, model {t_model:.2f} s '
          f'(load avg at end {out["loadavg_end"][0]:.1f} on {out["host_cpus"]} CPUs)')
    print(f'{"c":>4} {"reqs":>5} {"point":>7} {"aiperf":>7} {"bench":>7} {"aip-fixed":>9} {"workbench":>9}   (seconds)')
    for r in rows:
        print(f'{r["concurrency"]:>4} {r["requests"]:>5} {r["point_wall_s"]:>7.2f} {r["aiperf_wall_s"]:>7.2f} {r["benchmark_s"]:>7.2f} '
              f'{r["aiperf_fixed_s"]:>9.2f} {r["workbench_s"]:>9.3f}')
    print(f'written to {a.out}')


if __name__ == '__main__':
    main()
