"""Stability of the simulator: the same question with another seed or sample size must give the same answer within noise.

For each model: the phase factors fitted on the calibration workload drawn with three seeds, and, with the shipped
factors, the recipe's throughput/TTFT/per-user speed at its published concurrency and its SLA-constrained maximum at
three seeds and two request counts. Prints every number and the spread (max/min - 1); the goal is < 5%.

Usage: .venv/bin/python bench/sim_stability.py [--models motif-3 ...] [--seeds 1 2 3] [--requests 500 1805] [--no-fits]
Takes about 10 minutes per model on 2 cores when the calibrations are not cached (runs/cache/calibrations).
"""
import argparse, time
import pandas as pd
from workbench.domain.loading import load_recipe, list_recipes
from workbench.domain.variants import recipe_variant
from workbench.domain.sla import search_sla_max
from workbench.targets import sim
from workbench.sim.engine import simulate

def fits(model:str, seeds) -> list[dict]:
    "Phase factors fitted on the calibration workload drawn with each seed."
    out = []
    for s in seeds:
        sim.CAL_SEED = s
        t0 = time.time(); cal = sim.calibration(model)
        out.append(dict(model=model, seed=s, prefill=cal.factors.prefill, decode=cal.factors.decode, fit_s=round(time.time() - t0)))
    sim.CAL_SEED = 1
    return out

def predictions(model:str, seeds, requests) -> list[dict]:
    "Recipe point at the published concurrency, and the SLA-constrained maximum, per seed and request count (shipped factors)."
    rec = load_recipe(model); rv = recipe_variant(rec); f, _ = sim.model_factors(rec)
    c = next((p.concurrency for p in rec.published if p.label == 'recipe' and p.topology == rv.topology_name and p.concurrency), 8)
    out = []
    for n in requests:
        for s in seeds:
            st, _ = sim.variant_setup(rv, requests=n, seed=s)
            r = simulate(st, c, factors=f, telemetry_ms=None)
            m = search_sla_max(lambda k: simulate(st, k, factors=f, telemetry_ms=None), rec.sla)
            out.append(dict(model=model, requests=n, seed=s, tok_s_gpu=r.output_tok_s_per_gpu, ttft_p50=r.value('time_to_first_token', 'p50'),
                            user_p50=r.value('output_token_throughput_per_user', 'p50'), sla_max_tok_s_gpu=m.output_tok_s_per_gpu,
                            reuse=r.prefix_cache_hit_rate))
    return out

def spread(df:pd.DataFrame, by, cols) -> pd.DataFrame:
    "max/min - 1 of each column within each group."
    g = df.groupby(by)[cols]
    return (g.max()/g.min() - 1).map(lambda x: f'{100*x:.1f}%')

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--models', nargs='*'); ap.add_argument('--seeds', nargs='*', type=int, default=[1, 2, 3])
    ap.add_argument('--requests', nargs='*', type=int, default=[500, 1805]); ap.add_argument('--no-fits', action='store_true')
    a = ap.parse_args()
    pd.set_option('display.width', 200)
    for m in a.models or list_recipes():
        t0 = time.time()
        if not a.no_fits:
            fdf = pd.DataFrame(fits(m, a.seeds))
            print(fdf.round(3).to_string(index=False)); print('factor spread across calibration seeds:', spread(fdf, 'model', ['prefill', 'decode']).to_dict('records'))
        pdf = pd.DataFrame(predictions(m, a.seeds, a.requests))
        print(pdf.round(2).to_string(index=False))
        print('prediction spread across seeds, per request count:')
        print(spread(pdf, ['model', 'requests'], ['tok_s_gpu', 'ttft_p50', 'user_p50', 'sla_max_tok_s_gpu']).to_string())
        print('prediction spread across seeds and request counts:')
        print(spread(pdf, 'model', ['tok_s_gpu', 'ttft_p50', 'user_p50', 'sla_max_tok_s_gpu']).to_string())
        print(f'{m}: {time.time() - t0:.0f} s\n', flush=True)
