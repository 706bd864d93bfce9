"""Benchmark: one full deployment search of one model on the sim target, from nothing to the frontier.

Prints the wall and CPU time to the frontier (search, then the refinement of the best configurations
and the recipe's references), how many configurations and points were simulated, configurations per
second, and where the search lands against the recipe. Goal: under 60 s to the frontier on 2 cores.
MLflow logging, the chart and the winner's manifests (what `workbench search` adds) are timed apart.

    .venv/bin/python bench/search.py [--models motif-3 ...|all] [--budget-s 50] [--requests 300] [--gpus 8] [--log]

With several models (or `all`) it also prints, for each, where the search (started from the model's
baseline) lands against the recipe: the check that the search finds what the recipe found.

Caches (timing profiles, calibrations, traces) are the ones in runs/cache, as a user's second search
finds them; the first search of a model on a fresh clone also fits its calibration (when the shipped
validation does not match) and builds its profiles. Wall time depends on what else the machine runs.
"""
import argparse, os, resource, sys, tempfile, time

def cpu_s() -> float:
    "CPU seconds of this process and its finished children."
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--models', nargs='+', default=['motif-3']); p.add_argument('--budget-s', type=float, default=50)
    p.add_argument('--requests', type=int, default=300); p.add_argument('--gpus', type=int); p.add_argument('--seed', type=int, default=42)
    p.add_argument('--log', action='store_true', help='also time MLflow logging, chart and winner (a throw-away store)')
    p.add_argument('--workers', type=int, default=1, help='search processes sharing one optuna study (default 1)')
    a = p.parse_args(argv)
    from workbench.domain.loading import list_recipes
    landings = [bench(m, a) for m in (list_recipes() if a.models == ['all'] else a.models)]
    if len(landings) > 1: print('\nwhere each search lands:\n' + '\n'.join(landings))
    return 0

def bench(model:str, a) -> str:
    "Search `model` once, print the timings; returns where it lands against the recipe."
    a.model = model
    t0, c0 = time.monotonic(), cpu_s()
    from workbench.search.explore import search, landing
    from workbench.targets.sim import SimTarget
    from workbench.domain.variants import recipe_variant
    SimTarget(progress=False).pricing(recipe_variant(a.model))      # prices: the shipped validation, or a fit made once (timed apart)
    t1, c1 = time.monotonic(), cpu_s()
    out = search(a.model, gpus=a.gpus, budget_s=a.budget_s, requests=a.requests, seed=a.seed, workers=a.workers)
    t2, c2 = time.monotonic(), cpu_s()
    n, pts = out.configs_evaluated, len(out.points)
    print(f'model {a.model}, {out.space.gpus} GPUs, {a.requests} requests per point, budget {a.budget_s:g} s, strategy {out.strategy}')
    print(f'imports + calibration: {t1 - t0:.1f} s wall, {c1 - c0:.1f} s CPU')
    print(f'to the frontier: {t2 - t1:.1f} s wall ({out.search_s:.1f} s the recipe references and the search + {out.refine_s:.1f} s refining the best), {c2 - c1:.1f} s CPU')
    print(f'{out.trials} trials, {n} configurations, {pts} points, {len(out.evaluator.refused)} refused; '
          f'{n/(t2 - t1):.2f} configurations/s, {pts/(t2 - t1):.2f} points/s; {len(out.frontier)} points on the frontier')
    print(f'goal: under 60 s to the frontier: {"met" if t2 - t1 < 60 else "NOT met"}')
    print(landing(out))
    if a.log:
        from workbench.search.run import log_points, log_tables, frontier_chart, write_winner
        from workbench.tracking import runs as tracking
        from workbench.studies import report
        from workbench.studies.charts import save_chart
        d = tempfile.mkdtemp()
        with tracking.study_run(a.model, 'bench-search', params={'bench': True}, tracking_uri=f'sqlite:///{d}/mlflow.db') as s:
            t3 = time.monotonic(); log_points(s, out); log_tables(s, out); t4 = time.monotonic()
            save_chart(frontier_chart(out), f'{d}/frontier'); write_winner(out, f'{d}/winner'); t5 = time.monotonic()
        print(f'MLflow logging of {pts} points: {t4 - t3:.1f} s ({(t4 - t3)/max(1, pts)*1000:.0f} ms/point); chart + winner manifests: {t5 - t4:.1f} s')
    return f'{model}: {landing(out)}'

if __name__ == '__main__': sys.exit(main())
