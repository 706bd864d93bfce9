"""`workbench sweep --ci` end to end: papermill runs of a study notebook on the sim, gated against an accepted reference.

One batch file (Motif 3 on sim, three repeats) in a stand-in user repository. The sim reads its prices and bands from a
validation file this test writes into a copy of the checkout (`$WORKBENCH_HOME`), so nothing depends on the shipped
recipes/sim-validation.json. In order: no reference -> exit 2 and nothing created; `--accept` bootstraps the reference
(who and why recorded); the same batch passes against it; a noise-sized change (other seeds, judged on noise alone with
`band: none`) passes; a calibration with 30% slower decode kernels (a 10-30% drop in SLA-constrained tok/s/GPU) fails
with exit 1, the regression named in one line and in a JUnit failure: the gate compares the same configurations at the same
seeds, so its band is the same-configuration one (a few percent), not the point's error band. The steps depend on each other, so they are one test (pytest-xdist would split separate ones)."""
import json, os, shutil, subprocess, sys
from pathlib import Path
from junitparser import JUnitXml

ROOT = Path(__file__).resolve().parents[1]
WORKBENCH = Path(sys.executable).with_name('workbench')
BATCH = """name: gate-test
reference: reference.json
repeats: 3
band: {band}
defaults: {{request_count: 200, concurrencies: [8]}}
studies:
  - {{model: motif-3, groups: [kernels]}}
"""

def write_validation(home:Path, decode:float):
    "A validation for the sim in `home`: the step physics, Motif 3's factors (decode scaled) and bands, keyed to the current simulator inputs."
    from workbench.recipes import load_recipe
    from workbench.sim.recipe import inputs_hash
    keys = ('output_token_throughput', 'time_to_first_token', 'output_token_throughput_per_user', 'inter_token_latency')
    doc = {'physics': {'step_ms': 8.0, 'layer_comm_ms': 0.04, 'draft_ms': 1.0}, 'shared': {'prefill': 1.0, 'decode': 1.0},
           'models': {'motif-3': {'inputs_hash': inputs_hash(load_recipe('motif-3')), 'factors': {'prefill': 1.2, 'decode': decode}}},
           'noise': {k: 0.03 for k in keys}, 'noise_requests': 1805, 'determinism': {k: 0.01 for k in keys},
           'bands': {'fitted': {k: 0.15 for k in keys}, 'model': {k: 0.3 for k in keys}, 'effects': {'topology': {k: 0.25 for k in keys}}}}
    (home/'recipes'/'sim-validation.json').write_text(json.dumps(doc))

def batch_dirs(runs:Path) -> list[Path]:
    return sorted(p for p in runs.glob('gate-test-*') if (p/'points.json').exists())

def test_ci_gate_on_sim(tmp_path):
    home, runs, repo = tmp_path/'home', tmp_path/'runs', tmp_path/'repo'
    shutil.copytree(ROOT/'recipes', home/'recipes'); shutil.copytree(ROOT/'nbs'/'studies', home/'nbs'/'studies'); repo.mkdir()
    write_validation(home, 1.0)
    (repo/'batch.yaml').write_text(BATCH.format(band='point')); (repo/'batch-noise.yaml').write_text(BATCH.format(band='none'))
    env = {k: v for k, v in os.environ.items() if k != 'MLFLOW_TRACKING_URI'}
    env.update(WORKBENCH_HOME=str(home), WORKBENCH_RUNS=str(runs), GITHUB_STEP_SUMMARY=str(tmp_path/'step.md'), GITHUB_ACTOR='ci-bot')
    def ci(*args, file='batch.yaml'):
        p = subprocess.run([str(WORKBENCH), 'sweep', '--ci', file, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=1800)
        return p.returncode, p.stdout, p.stderr

    # no reference yet: could not run (exit 2), one line, nothing created
    rc, out, err = ci()
    assert rc == 2 and err.startswith('error: gate the batch: no accepted reference') and 'Fix:' in err, (rc, err)
    assert not batch_dirs(runs)

    # bootstrap: the batch becomes the reference, with who and why
    rc, out, err = ci('--accept', '--why', 'first reference')
    assert rc == 0, out[-3000:] + err[-3000:]
    ref = json.loads((repo/'reference.json').read_text())
    assert ref['accepted']['by'] == 'ci-bot' and ref['accepted']['why'] == 'first reference' and ref["repeats"] == 3
    sla = {p['label']: p for p in ref['points'] if p['concurrency'] is None}
    assert {'recipe', 'baseline', 'baseline (disagg-3p1d)'} <= set(sla) and len(sla["recipe"]["values"]["sla_tok_s_gpu"]) == 3, sla
    assert 0 < sla['recipe']['band']['sla_tok_s_gpu'] <= 0.05 and not sla['kernels: flashinfer_autotune=True']['modelled']

    # the same batch passes against its own reference: every metric judged, none regressed
    rc, out, err = ci()
    assert rc == 0 and 'PASSED (exit 0) against ' + ref['batch'] in out, out[-3000:] + err[-3000:]
    last = batch_dirs(runs)[-1]
    x = JUnitXml.fromfile(str(last/'junit.xml'))
    assert x.tests >= 7 and x.failures == 0 and x.errors == 0, (x.tests, x.failures, x.errors)
    gate = json.loads((last/'gate.json').read_text())
    assert gate['exit_code'] == 0 and gate['reference'] == ref['batch']
    judged = [f for f in gate['findings'] if f['kind'] == 'metric' and f['change'] is not None]
    assert len(judged) >= 9 and all(f['status'] == 'ok' for f in judged), [f['line'] for f in judged]
    assert (last/'summary.md').read_text().startswith(f'## Batch `{last.name}`: PASSED') and (last/'report.html').exists()
    assert (tmp_path/'step.md').read_text().count('## Batch `gate-test-') == 2
    assert list((last/'studies').glob('*/report.html')) and (last/'gate.png').exists()

    # a noise-sized change: other seeds (52-54), judged on the run-to-run noise alone (band: none)
    rc, out, err = ci('-p', 'seed=52', file='batch-noise.yaml')
    assert rc == 0, out[-3000:] + err[-3000:]
    judged = [f for f in json.loads((batch_dirs(runs)[-1]/'gate.json').read_text())['findings'] if f['kind'] == 'metric' and f['change'] is not None]
    assert all(f['status'] == 'ok' and 'bands off + noise' in f['line'] for f in judged), [f['line'] for f in judged]
    assert max(abs(f['change']) for f in judged) > 0.01, [f['line'] for f in judged]          # the numbers did change

    # a calibration whose decode kernels are 30% slower (a decode step about 15% slower, beside the fixed step cost): a regression
    # beyond band and noise, exit 1, named in one line and in JUnit
    write_validation(home, 1.3)
    rc, out, err = ci()
    assert rc == 1, out[-3000:] + err[-3000:]
    lines = [l for l in out.splitlines() if l.startswith('REGRESSION motif-3/sim recipe SLA max: SLA-constrained tok/s/GPU')]
    assert len(lines) == 1 and 'beyond' in lines[0] and 'band' in lines[0], out[-3000:]
    reg = next(f for f in json.loads((batch_dirs(runs)[-1]/'gate.json').read_text())['findings']
               if f['status'] == 'regression' and f['metric'] == 'sla_tok_s_gpu' and f['case'] == 'recipe SLA max')
    assert -0.35 < reg['change'] < -0.05 and reg['tolerance'] < 0.12, reg                # a drop of 10-30% fails, beyond the same-seed tolerance
    last = batch_dirs(runs)[-1]
    x = JUnitXml.fromfile(str(last/'junit.xml'))
    failed = {tc.name: tc.result[0].message for s in x for tc in s if tc.result and type(tc.result[0]).__name__ == 'Failure'}
    assert failed['recipe SLA max'].startswith('REGRESSION motif-3/sim recipe SLA max'), failed
    assert f'- {lines[0]}' in (last/'summary.md').read_text()
    assert json.loads((repo/'reference.json').read_text())['batch'] == ref['batch']       # a failing batch does not move the reference

def test_bad_batch_input_creates_nothing(tmp_path):
    "A batch file with a mistake ends `sweep --ci` with exit 2 and one `error: ... Fix: ...` line, before any study, run or store exists."
    runs = tmp_path/'runs'
    env = {**{k: v for k, v in os.environ.items() if k != 'MLFLOW_TRACKING_URI'}, 'WORKBENCH_RUNS': str(runs)}
    for text, says in [('name: b\nstudies: [{model: motif-3, groups: [nope]}]\n', "unknown setting group(s) ['nope']"),
                       ('name: b\nstudies: [{model: motif-3, request_count: abc}]\n', "request_count='abc' is str"),
                       ('name: b\nstudies: [{model: nope}]\n', "unknown model 'nope'"),
                       ('name: b\nrepeats: 0\nstudies: [{model: motif-3}]\n', 'repeats'),
                       ('name: b\nstudies: [{model: motif-3, target: k8s, kube_context: nope-context}]\n', 'nope-context')]:
        (tmp_path/'b.yaml').write_text(text)
        p = subprocess.run([str(WORKBENCH), 'sweep', '--ci', str(tmp_path/'b.yaml'), '--accept', '--why', 'x'], env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 2 and says in p.stderr and 'Fix:' in p.stderr and 'Traceback' not in p.stderr, (text, p.stderr[-2000:])
        assert not runs.exists() or list(runs.iterdir()) == [], (text, list(runs.iterdir()))
