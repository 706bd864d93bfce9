"""Peak memory of one sim point against its request count and concurrency: the basis of `BaseTarget.memory_per_request`.

Each measurement runs in a fresh process (`ru_maxrss`), simulates the Motif 3 recipe (uncalibrated: the calibration's own
replays would blur the slope) at one concurrency, and prints the peak RSS. The slope between request counts is what a
study refuses against (`workbench.studies.study` refuses a point whose estimate is over half the memory available).

Usage: .venv/bin/python bench/memory_per_request.py [--requests 4000,16000] [--concurrency 8,512] [--model motif-3]
"""
import argparse, json, subprocess, sys

CHILD = r'''
import json, resource, sys
from workbench.targets.sim import SimTarget
from workbench.domain.variants import recipe_variant
n, c, m = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
SimTarget(requests=n, calibrate=False, progress=False).run(recipe_variant(m), [c])
print(json.dumps({'requests': n, 'concurrency': c, 'peak_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024}))
'''

def measure(n:int, c:int, model:str) -> dict:
    out = subprocess.run([sys.executable, '-c', CHILD, str(n), str(c), model], capture_output=True, text=True, check=True, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--requests', default='4000,16000'); ap.add_argument('--concurrency', default='8,512'); ap.add_argument('--model', default='motif-3')
    a = ap.parse_args()
    ns, cs = [int(x) for x in a.requests.split(',')], [int(x) for x in a.concurrency.split(',')]
    rows = [measure(n, cs[0], a.model) for n in ns] + [measure(ns[0], c, a.model) for c in cs[1:]]
    for r in rows: print(f"{a.model}: {r['requests']:>7} requests at concurrency {r['concurrency']:>5}: peak {r['peak_mb']:.0f} MB")
    lo, hi = rows[0], rows[len(ns)-1]
    print(f"per request: {(hi['peak_mb']-lo['peak_mb'])*2**20/(hi['requests']-lo['requests'])/1000:.1f} KB")
    for r in rows[len(ns):]:
        print(f"per request in flight: {(r['peak_mb']-lo['peak_mb'])*2**20/max(1, r['concurrency']-lo['concurrency'])/1000:.1f} KB")

if __name__ == '__main__': main()
