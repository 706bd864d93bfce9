"""Print the ops sections on the sim for one recipe: diagnosis of the recipe point, KV host-offload study, autoscaling comparison.

Usage: .venv/bin/python bench/ops_sections.py [--model k-exaone-2] [--requests 200]
Every number printed is simulated (DynoSim replay with the recipe's stand-in timing), not measured.
"""
import argparse, os, time
os.environ.setdefault('DYN_LOG', 'error')
import pandas as pd
from workbench.domain.variants import recipe_variant
from workbench.domain.loading import load_traces
from workbench.sim.recipe import variant_setup
from workbench.sim.engine import simulate, SimWorkload
from workbench.evidence.diagnosis import diagnosis_record
from workbench.evidence.sections import offload_study
from workbench.evidence.planner import ramp_trace, autoscale_compare, planner_status

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--model', default='k-exaone-2'); ap.add_argument('--requests', type=int, default=200)
    ap.add_argument('--startup-s', type=float, default=30.0, help='assumed worker startup while scaling (s)')
    a = ap.parse_args()
    pd.set_option('display.width', 250); pd.set_option('display.max_colwidth', 60)
    v = recipe_variant(a.model); st, _ = variant_setup(v, requests=a.requests)
    c = v.recipe.benchmarks[v.topology_name].concurrency[0]
    t0 = time.time(); r = simulate(st, c, variant=v.name)
    wl = v.recipe.benchmarks[v.topology_name].workload
    tr = load_traces().get(wl.trace) if wl.trace else None
    d = diagnosis_record(r, v.recipe.sla, max_num_seqs=st.workers[0].max_num_seqs,
                         expected_reuse=tr.kv_reuse_target if tr else None, over_context_known=tr.over_context_requests.get(a.model) if tr else None)
    print(f'== diagnosis {a.model} {v.name} c{c} [simulated] ({time.time()-t0:.1f} s)\n', d.table[['symptom_present', 'check', 'observed', 'finding']].to_string())
    if not st.disaggregated:
        t0 = time.time(); off = offload_study(st, c, progress=False)
        print(f'\n== KV host offload [simulated] ({time.time()-t0:.1f} s)', off.attrs.get('notes'), '\n', off.round(3).to_string())
        st8 = st.model_copy(update={'workload': SimWorkload(isl_mean=8192, osl_mean=1024, isl_cv=0.5, osl_cv=0.3, requests=120)})
        cap = simulate(st8, c).value('request_throughput')
        print('\n== autoscaling:', planner_status()['reason'])
        for peak, top in ((2.5, 3), (5.0, 4)):
            t0 = time.time()
            trace = ramp_trace([(0.5*cap, 120), (peak*cap, 120), (0.5*cap, 120)], isl_mean=8192, osl_mean=1024, isl_cv=0.5, osl_cv=0.3, seed=7)
            cmp = autoscale_compare(st8, trace, sla=v.recipe.sla, max_replicas=top, startup_s=a.startup_s, progress=False)
            print(f'\npeak {peak}x of {cap:.3f} req/s, up to {top} replicas, startup {a.startup_s:g} s (assumed) [simulated] ({time.time()-t0:.1f} s)')
            print(cmp[['policy', 'gpu_hours', 'max_replicas', 'scaling_events', 'violating_requests', 'violation_share',
                       'violations_vs_fixed_min', 'gpu_hours_vs_fixed_max', 'planner_decisions']].round(3).to_string())

if __name__ == '__main__': main()
