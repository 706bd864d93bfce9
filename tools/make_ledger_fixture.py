"""Write tests/fixtures/ledger/<model>: AIPerf artifact folders of live local runs that the simulator mispredicts by a known amount.

The runs are the project's own: live local graphs (dynamo.frontend + dynamo.mocker workers + nats on 127.0.0.1) measured
by the real AIPerf CLI (`workbench.evidence.measured.stand_in_runs`). The mocker workers are timed with the sim target's B200
profile and the model's calibrated factors multiplied by --prefill-x and --decode-x, as a cluster with slower kernels
than the calibration assumes. Only the export, the AIPerf command, the graph's commands and a run config naming the
variant are kept. Usage (about 3 minutes on 2 cores):

    .venv/bin/python tools/make_ledger_fixture.py [--model motif-3] [--prefill-x 1.6] [--decode-x 1.3]
"""
import argparse, json, os, shutil, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--model', default='motif-3'); p.add_argument('--prefill-x', type=float, default=1.6); p.add_argument('--decode-x', type=float, default=1.3)
    p.add_argument('--out', default=str(ROOT/'tests'/'fixtures'/'ledger'))
    p.add_argument('--engine', choices=['mocker', 'vllm'], default='mocker')
    p.add_argument('--concurrency', type=int, default=2); p.add_argument('--requests', type=int, default=16); p.add_argument('--osl', type=int, default=16)
    a = p.parse_args(argv)
    if a.engine == 'vllm': return vllm_fixture(a)
    from workbench.evidence.measured import stand_in_runs, STAND_IN_POINTS
    from workbench.tracking.lineage import package_versions, git_sha
    dest, t0 = Path(a.out)/a.model, time.time()
    tmp = Path(tempfile.mkdtemp(prefix='ledger-fixture-'))/a.model
    made = stand_in_runs(a.model, tmp, prefill_x=a.prefill_x, decode_x=a.decode_x)
    if dest.exists(): shutil.rmtree(dest)
    shutil.copytree(tmp, dest)
    v, si = package_versions(), json.loads((dest/'stand_in.json').read_text())
    (dest/'README.md').write_text(
        f"# Ledger fixture: {a.model}\n\nAIPerf artifact folders of live local runs (dynamo.frontend + dynamo.mocker workers on 127.0.0.1, "
        f"AIPerf {v['aiperf']}, ai-dynamo {v['ai-dynamo']}), made by `tools/make_ledger_fixture.py --model {a.model} --prefill-x {a.prefill_x:g} "
        f"--decode-x {a.decode_x:g}` on {time.strftime('%Y-%m-%d')} (commit {git_sha()}).\n\n"
        f"The workers were timed with the sim target's B200 profile and the model's calibrated factors (prefill {si['calibrated']['prefill']:.4f}, "
        f"decode {si['calibrated']['decode']:.4f}, simulator {si['sim_versions']['sim']}) times {a.prefill_x:g} (prefill) and {a.decode_x:g} (decode), "
        f"recorded in `stand_in.json`: the simulator mispredicts these points by a known amount, and a refit from them must find it. "
        f"The tokens come from mocker workers: the points are labelled engine=mocker (provenance simulated), never measured.\n\n"
        f"Points (variant: concurrencies): {json.dumps(STAND_IN_POINTS)}. Each variant folder has `graph.json` (the graph's commands), "
        f"`workbench-run.yaml` (the variant) and `points/c<N>/` (`profile_export_aiperf.json`, `aiperf_command.json`).\n")
    print(f'{len(made)} points in {dest} ({time.time() - t0:.0f} s)')

def vllm_fixture(a):
    "tests/fixtures/ledger/<model>-vllm-cpu: one live point on vLLM's CPU build, with a README that says how it was made."
    from workbench.evidence.measured import vllm_cpu_runs
    from workbench.tracking.lineage import package_versions, git_sha
    dest, t0 = Path(a.out)/f'{a.model}-vllm-cpu', time.time()
    tmp = Path(tempfile.mkdtemp(prefix='ledger-fixture-'))/dest.name
    made = vllm_cpu_runs(a.model, tmp, concurrency=a.concurrency, requests=a.requests, osl=a.osl)
    took = time.time() - t0
    if dest.exists(): shutil.rmtree(dest)
    shutil.copytree(tmp, dest)
    v, eng = package_versions(), json.loads((made[0].parents[1]/'engine.json').read_text())
    rel = made[0].relative_to(tmp)
    (dest/'README.md').write_text(
        f"# Ledger fixture: {a.model} on vLLM's CPU build\n\nOne AIPerf artifact folder (`{rel}`) of a live local point: the {a.model} recipe "
        f"(aggregated topology) served by dynamo.frontend and `dynamo.vllm` workers on vLLM's CPU build, with a generated model of the "
        f"recipe's kind and random weights (`--load-format dummy`), on 127.0.0.1, measured by AIPerf {v['aiperf']} (workbench venv: "
        f"ai-dynamo {v['ai-dynamo']}; engine venv: {eng['engine_stack']}). Made by `tools/make_ledger_fixture.py --engine vllm --model {a.model} "
        f"--concurrency {a.concurrency} --requests {a.requests} --osl {a.osl}` on {time.strftime('%Y-%m-%d')} (commit {git_sha()}) in {took:.0f} s "
        f"on {os.cpu_count()} shared cores (engine ready in {eng['engine_ready_s']:.0f} s).\n\n"
        f"Real engine and serving path, numbers of this CPU host: never B200 performance. On import (`workbench import`) the point is "
        f"labelled engine vllm with provenance `{eng['provenance']}` (from `graph.json`: engine vllm, device cpu), and the ledger leaves it "
        f"out of its B200 error statistics and refits.\n\n"
        f"Files: `graph.json` (the graph's commands), `workbench-run.yaml` (the variant), `engine.json` (provenance, engine stack, the "
        f"plan's notes: how the recipe's flags were adapted to the CPU build) and `points/c{a.concurrency}/` (`profile_export_aiperf.json`, "
        f"`aiperf_command.json`).\n")
    print(f'{len(made)} point(s) in {dest} ({took:.0f} s)')

if __name__ == '__main__': sys.exit(main())
