"""What moves the shape of Motif 3's historical round-robin disaggregated sweep (1P1D and 2P1D at c8/16/32) in the sim:
the KV link between the pools, the price of a prefill (alone or traded against the decode price, as the joint fit could
trade them), the price of the attention over cached context, and what the real GDLA cache would cost the disaggregated
pools if vLLM's hybrid KV cache manager were off there. A diagnostic for issue 32, not a fit: it prints, per
setting, 1P1D tok/s/GPU growth c16 -> c32, 1P1D TTFT p50 growth c8 -> c32, 2P1D over 1P1D at c32, and the aggregated
recipe's point at c11 beside its published numbers, then the CPU seconds, wall time and load.

    .venv/bin/python bench/sweep_sensitivity.py [--requests 1805] [--gbps 3,0.3,10000] [--prefill 1,1.5,1.3:0.75]
                                                [--attention 2,3] [--hybrid-off 3,50]

`--prefill P` multiplies Motif's calibrated prefill factor by P, `P:D` also its decode factor by D. `--attention A`
prices every chunk's attention over the tokens before it (the chunk's aiconfigurator time minus the same chunk at
prefix 0) A times; each A runs in a child process with a temporary runs folder, because the profile caches do not
know A. `--hybrid-off G` prices Motif 3's real cache (below) with the hybrid manager off in both disaggregated pools,
at G GB/s per transfer: capacity alone, transfer bytes alone, and both. Each point runs straight through the engine (no
point cache); profiles and pilots are cached under
runs/cache."""
import argparse, os, resource, subprocess, sys, tempfile, time
from workbench.domain.loading import load_recipe
from workbench.domain.metrics import REQUEST_THROUGHPUT, TTFT, USER_TPS
from workbench.domain.variants import recipe_variant
from workbench.sim import CAL_SEED, kv_bytes_per_token, model_pricing, simulate, variant_setup
from workbench.sim import engine as sim_engine, timing

# Motif 3's attention cache per token, from its published config (53 layers: 14 global, 39 sliding-window of 128 keys)
# and the GDLA layout llama.cpp and vLLM's Motif NIXL patch use (recipes/motif-3/standin/README.md): the global layers
# keep an MLA latent (512 + 64 rope, one copy on every TP rank), the sliding-window layers 16 GQA heads of K 192 + V 128
# (an expanded-head cache).
# FP8: one byte each. With vLLM's hybrid KV manager on, only the latent grows with the context; with it off (what a KV
# connector forced before vLLM let NIXL keep it), every sliding-window layer keeps and sends the whole context.
GLOBAL_LAYERS, SWA_LAYERS, LATENT, SWA_ELEMS = 14, 39, 512 + 64, 16*(192 + 128)
HYBRID_OFF_PER_RANK = GLOBAL_LAYERS*LATENT + SWA_LAYERS*SWA_ELEMS//2      # bytes/token on each of TP2's ranks

CONCURRENCIES = (8, 16, 32)
PUBLISHED_AGG = 'published agg c11: 294 tok/s/GPU, 66.3 tok/s/user, TTFT 388 ms'

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

def agg_line(agg, pricing) -> str:
    "The aggregated recipe at c11 under `pricing`."
    r = simulate(agg, 11, pricing=pricing, telemetry_ms=None)
    return (f'  | agg c11 {r.output_tok_s_per_gpu:.0f} tok/s/GPU {r.value(USER_TPS, "p50"):.1f} tok/s/user '
            f'TTFT {r.value(TTFT, "p50"):.0f} ms')

def priced(pricing, prefill:float=1.0, decode:float=1.0):
    "`pricing` with its model factors multiplied by `prefill` and `decode`."
    f = pricing.factors.model_copy(update={'prefill': pricing.factors.prefill*prefill,
                                           'decode': pricing.factors.decode*decode})
    return pricing.model_copy(update={'factors': f})

def attention_priced(a:float):
    "Price the attention over cached context `a` times, in this process (a child with its own runs folder)."
    orig = timing.aic_engine
    class Engine:
        def __init__(self, e): self._e = e
        def __getattr__(self, k): return getattr(self._e, k)
        def predict_prefill_latency(self, b, end, start=0):
            t = self._e.predict_prefill_latency(b, end, start)
            if start <= 0: return t
            alone = self._e.predict_prefill_latency(b, end - start, 0)
            return alone + a*(t - alone)
    timing.aic_engine = lambda *x, **k: Engine(orig(*x, **k))

def hybrid_off(st, pricing, gbps:float, *, capacity:bool, transfer:bool) -> dict:
    """`sweep` with the disaggregated pools holding and sending the hybrid-manager-off cache: `capacity` scales their KV
    blocks by the stand-in's bytes per token per GPU over `HYBRID_OFF_PER_RANK`; `transfer` sends both ranks' caches."""
    s = st.standin()
    def blocks(w) -> int:
        "The pool's KV blocks (the engine's own estimate) at the hybrid-manager-off bytes per token."
        own = timing.num_gpu_blocks(s, w.tp, w.block_size, w.gpu_memory_utilization, kv_dtype=w.kv_dtype, dp=w.dp,
                                    weights_gb=st.weights_gb)
        return int(own*timing.kv_bytes_per_token_per_gpu(s, w.kv_dtype, w.tp)/HYBRID_OFF_PER_RANK)
    ws = tuple(w.model_copy(update={'num_gpu_blocks': blocks(w)}) if capacity else w for w in st.workers)
    orig = sim_engine.engine_args
    def sent(*a, **k):
        e = orig(*a, **k)
        if transfer and 'kv_transfer_bytes_per_token' in e['engine']:
            e['engine']['kv_transfer_bytes_per_token'] = 2*HYBRID_OFF_PER_RANK
        return e
    sim_engine.engine_args = sent
    try: return sweep(st.model_copy(update={'workers': ws}), pricing, gbps)
    finally: sim_engine.engine_args = orig

def setups(requests:int):
    "Motif's pricing, its disaggregated setup and its aggregated setup."
    rec = load_recipe('motif-3'); pricing, basis = model_pricing(rec)
    st, _ = variant_setup(recipe_variant(rec, 'disagg'), requests=requests, seed=CAL_SEED)
    agg, _ = variant_setup(recipe_variant(rec, 'agg'), requests=requests, seed=CAL_SEED)
    return pricing, basis, st, agg

def child(a:float, requests:int):
    "One attention setting (run by `main` in a child process)."
    attention_priced(a)
    pricing, _, st, agg = setups(requests)
    print(shape_line(f'attention x{a:g}', sweep(st, pricing)) + agg_line(agg, pricing), flush=True)

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--requests', type=int, default=1805)
    ap.add_argument('--gbps', default='3,0.3,10000', help='per-transfer KV bandwidths (GB/s) to try')
    ap.add_argument('--prefill', default='1,1.5,2,1.15:0.85,1.3:0.75',
                    help="multipliers on Motif's calibrated prefill factor (P) or prefill and decode factors (P:D)")
    ap.add_argument('--attention', default='2,3', help='multipliers on the attention over cached context')
    ap.add_argument('--hybrid-off', default='3,50', help='per-transfer GB/s for the hybrid-manager-off cache')
    ap.add_argument('--child-attention', type=float, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child_attention is not None: return child(a.child_attention, a.requests)
    t0, c0 = time.time(), time.process_time()
    pricing, basis, st, agg = setups(a.requests)
    print(f'motif-3, {a.requests} requests, seed {CAL_SEED}; pricing: {basis}; the recipe path: '
          f'{st.kv_transfer_gbps:g} GB/s per transfer; {PUBLISHED_AGG}')
    print('the KV link (per-transfer bandwidth; the engine runs transfers side by side, not queued on a link):')
    for g in (float(x) for x in a.gbps.split(',') if x): print(shape_line(f'{g:g} GB/s', sweep(st, pricing, g)))
    print("the price of a prefill (P) or of a prefill and a decode step (P:D), multipliers on the calibrated factors:")
    for m in (x for x in a.prefill.split(',') if x):
        p, d = (float(v) for v in (m.split(':') + ['1'])[:2])
        print(shape_line(f'x{m}', sweep(st, priced(pricing, p, d))) + agg_line(agg, priced(pricing, p, d)))
    print(f'the GDLA cache with the hybrid KV manager off in the disaggregated pools '
          f'({HYBRID_OFF_PER_RANK:,} B/token per rank, {kv_bytes_per_token(st.standin()):,.0f} in the stand-in):')
    for g in (float(x) for x in a.hybrid_off.split(',') if x):
        for cap, xfer, what in ((True, False, 'capacity'), (False, True, 'transfer'), (True, True, 'both')):
            try: print(shape_line(f'{what} {g:g}', hybrid_off(st, pricing, g, capacity=cap, transfer=xfer)))
            except Exception as e:      # the replay engine's own invariant, kept as its one line
                print(f'{what} {g:g}'.ljust(13), 'the replay engine stops:', str(e).splitlines()[0])
    print('the attention over cached context, priced A times (each in a child process with a temporary runs folder):')
    for x in (x for x in a.attention.split(',') if x):
        with tempfile.TemporaryDirectory(prefix='sweep-attention-') as d:
            subprocess.run([sys.executable, __file__, '--requests', str(a.requests), '--child-attention', x],
                           env=os.environ | {'WORKBENCH_RUNS': d}, check=True)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f'wall {time.time() - t0:.0f} s, CPU {time.process_time() - c0 + ru.ru_utime + ru.ru_stime:.0f} s, '
          f'load {os.getloadavg()[0]:.2f}')

if __name__ == '__main__': main()
