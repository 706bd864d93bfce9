"""What moves the shape of Motif 3's historical round-robin disaggregated sweep (1P1D and 2P1D at c8/16/32) in the sim:
the KV link between the pools, and the price of a prefill. A diagnostic for issue 32, not a fit: it prints, per setting,
1P1D tok/s/GPU growth c16 -> c32, 1P1D TTFT p50 growth c8 -> c32, 2P1D over 1P1D at c32, and the aggregated recipe's
point at c11 beside its published numbers, then the CPU seconds, wall time and load.

    .venv/bin/python bench/sweep_sensitivity.py [--requests 600] [--gbps 3,0.3,10000] [--prefill 1,1.5,2,3]

Each point runs straight through the engine (no point cache); profiles and pilots are cached under runs/cache."""
import argparse, os, resource, time
from workbench.domain.loading import load_recipe
from workbench.domain.metrics import REQUEST_THROUGHPUT, TTFT, USER_TPS
from workbench.domain.variants import recipe_variant
from workbench.sim import CAL_SEED, model_pricing, simulate, variant_setup

CONCURRENCIES = (8, 16, 32)

def sweep(st, pricing, gbps=None) -> dict:
    """(prefill replicas, concurrency) -> (tok/s/GPU, TTFT p50 ms, KV transfer p50 ms, requests/s) on round-robin
    1P1D and 2P1D."""
    out = {}
    for n in (1, 2):
        pre = st.pool('prefill').model_copy(update={'replicas': n})
        upd = {'router': 'round-robin', 'workers': (pre, st.pool('decode'))}
        if gbps is not None: upd['kv_transfer_gbps'] = gbps
        s = st.model_copy(update=upd)
        for c in CONCURRENCIES:
            r = simulate(s, c, pricing=pricing, telemetry_ms=None)
            xfer = r.extra['replay_signals'].get('kv_transfer_p50_ms')
            out[n, c] = (r.output_tok_s_per_gpu, r.value(TTFT, 'p50'), xfer,
                         r.value(REQUEST_THROUGHPUT, 'avg'))
    return out

def shape_line(label:str, row:dict) -> str:
    "One printed line: the sweep's numbers and its three shape ratios."
    tps = lambda n: '/'.join(f'{row[n, c][0]:.0f}' for c in CONCURRENCIES)
    return (f'{label:13} 1P1D {tps(1):>11} tok/s/GPU  2P1D {tps(2):>11}  '
            f'1P1D c16->c32 {row[1, 32][0]/row[1, 16][0] - 1:+4.0%}  '
            f'TTFT c8->c32 {row[1, 32][1]/row[1, 8][1]:5.1f}x ({row[1, 32][1]/1000:.1f} s)  '
            f'2P/1P c32 {row[2, 32][0]/row[1, 32][0] - 1:+4.0%}  1P1D c32: KV xfer p50 {row[1, 32][2] or 0:.0f} ms, '
            f'{1000/row[1, 32][3]:.0f} ms per request')

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--requests', type=int, default=600)
    ap.add_argument('--gbps', default='3,0.3,10000', help='per-transfer KV bandwidths (GB/s) to try')
    ap.add_argument('--prefill', default='1,1.5,2,3', help="multipliers on Motif's calibrated prefill factor")
    a = ap.parse_args()
    t0, c0 = time.time(), time.process_time()
    rec = load_recipe('motif-3'); pricing, basis = model_pricing(rec)
    st, _ = variant_setup(recipe_variant(rec, 'disagg'), requests=a.requests, seed=CAL_SEED)
    agg, _ = variant_setup(recipe_variant(rec, 'agg'), requests=a.requests, seed=CAL_SEED)
    print(f'motif-3, {a.requests} requests, seed {CAL_SEED}; pricing: {basis}; the recipe path: '
          f'{st.kv_transfer_gbps:g} GB/s per transfer')
    print('the KV link (per-transfer bandwidth; the engine runs transfers side by side, not queued on a link):')
    for g in (float(x) for x in a.gbps.split(',')): print(shape_line(f'{g:g} GB/s', sweep(st, pricing, g)))
    print("the price of a prefill (a multiplier on the calibrated prefill factor), with the aggregated recipe at c11 "
          "(published 294 tok/s/GPU, 66.3 tok/s/user, TTFT 388 ms):")
    for m in (float(x) for x in a.prefill.split(',')):
        f = pricing.factors.model_copy(update={'prefill': pricing.factors.prefill*m})
        p = pricing.model_copy(update={'factors': f})
        r = simulate(agg, 11, pricing=p, telemetry_ms=None)
        print(shape_line(f'prefill x{m:g}', sweep(st, p)) + f'  | agg c11 {r.output_tok_s_per_gpu:.0f} tok/s/GPU '
              f'{r.value(USER_TPS, "p50"):.1f} tok/s/user TTFT {r.value(TTFT, "p50"):.0f} ms')
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f'wall {time.time() - t0:.0f} s, CPU {time.process_time() - c0 + ru.ru_utime + ru.ru_stime:.0f} s, '
          f'load {os.getloadavg()[0]:.2f}')

if __name__ == '__main__': main()
