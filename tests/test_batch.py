"""`workbench sweep --ci` end to end: papermill runs of a study notebook on the sim, gated against an accepted reference.

One batch file (Motif 3 on sim, three repeats) in a stand-in user repository. The sim reads its prices and bands from a
validation file this test writes into a copy of the checkout (`$WORKBENCH_HOME`), so nothing depends on the shipped
recipes/sim-validation.json. In order: no reference -> exit 2 and nothing created; `--accept` bootstraps the reference
(who and why recorded); the same batch passes against it; a noise-sized change (other seeds, judged on noise alone with
`band: none`) passes; a calibration with 30% slower decode kernels (a 10-30% drop in SLA-constrained tok/s/GPU) fails
with exit 1, the regression named in one line with the limits it broke and in a JUnit failure: the gate compares the same
configurations at the same seeds, so its band is the same-configuration one (0 for these round-robin points), not the point's
error band. The steps depend on each other, so they are one test (pytest-xdist would split separate ones).

The other tests feed the gate batch documents directly (no study runs): a 10% drop over a realistic seed spread is a
regression, the same spread with no change passes, and every judged line names its band and noise and what they rest on."""
import json, os, re, shutil, struct, subprocess, sys
from pathlib import Path
from junitparser import JUnitXml
from workbench.studies import gate as gt

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
    from workbench.domain.loading import load_recipe
    from workbench.sim.recipe import inputs_hash
    keys = ('output_token_throughput', 'time_to_first_token', 'output_token_throughput_per_user', 'inter_token_latency')
    doc = {'physics': {'step_ms': 8.0, 'layer_comm_ms': 0.04, 'draft_ms': 1.0}, 'shared': {'prefill': 1.0, 'decode': 1.0},
           'models': {'motif-3': {'inputs_hash': inputs_hash(load_recipe('motif-3')), 'factors': {'prefill': 1.2, 'decode': decode}}},
           'noise': {k: 0.03 for k in keys}, 'noise_requests': 1805,
           'determinism': {f'{t}/{r}': {**{k: 0.0 if r == 'round-robin' else 0.03 for k in keys}, 'requests': 600}     # round-robin: bit-identical
                           for t in ('agg', 'disagg') for r in ('round-robin', 'kv')},
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
    assert sla['recipe']['repeat_band'] == {'sla_tok_s_gpu': 0.0} and sla['recipe']['seeds'] == [42, 43, 44], sla['recipe']
    assert not sla['kernels: flashinfer_autotune=True']['modelled']

    # the same batch passes against its own reference: every metric judged, none regressed
    rc, out, err = ci()
    assert rc == 0 and 'PASSED (exit 0) against ' + ref['batch'] in out, out[-3000:] + err[-3000:]
    printed = [l for l in out.splitlines() if l.startswith('ok motif-3/sim recipe SLA max: SLA-constrained tok/s/GPU')]   # each judged metric, its limits
    assert len(printed) == 1 and 'within tolerance \u00b10.0% = repeat band \u00b10.0% (the same configuration at the same seed is bit-identical' in printed[0] \
        and '3\u03c3 noise \u00b10.0% (spread 0.00% of ' in printed[0], out[-3000:]
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
    assert abs(struct.unpack('>II', (last/'gate.png').read_bytes()[16:24])[0] - gt.CHART_PX) <= 40     # drawn 1,200 px wide, shown as it is

    # a noise-sized change: other seeds (52-54), judged on the run-to-run noise alone (band: none)
    rc, out, err = ci('-p', 'seed=52', file='batch-noise.yaml')
    assert rc == 0, out[-3000:] + err[-3000:]
    judged = [f for f in json.loads((batch_dirs(runs)[-1]/'gate.json').read_text())['findings'] if f['kind'] == 'metric' and f['change'] is not None]
    assert all(f['status'] == 'ok' and 'repeat band off (band: none in the batch file) + 3\u03c3 noise' in f['line']
               and re.search(r'other seeds: \[5[0-9, ]*\] against \[4', f['line']) for f in judged), [f['line'] for f in judged]
    assert max(abs(f['change']) for f in judged) > 0.01, [f['line'] for f in judged]          # the numbers did change

    # a calibration whose decode kernels are 30% slower (a decode step about 15% slower, beside the fixed step cost): a regression
    # beyond band and noise, exit 1, named in one line and in JUnit
    write_validation(home, 1.3)
    rc, out, err = ci()
    assert rc == 1, out[-3000:] + err[-3000:]
    lines = [l for l in out.splitlines() if l.startswith('REGRESSION motif-3/sim recipe SLA max: SLA-constrained tok/s/GPU')]
    assert len(lines) == 1 and 'beyond tolerance' in lines[0] and 'repeat band \u00b10.0% (the same configuration at the same seed' in lines[0] \
        and 'same-seed differences pooled over' in lines[0], out[-3000:]
    reg = next(f for f in json.loads((batch_dirs(runs)[-1]/'gate.json').read_text())['findings']
               if f['status'] == 'regression' and f['metric'] == 'sla_tok_s_gpu' and f['case'] == 'recipe SLA max')
    assert -0.35 < reg['change'] < -0.05 and reg['tolerance'] < 0.05 and reg['band'] == 0.0, reg   # a drop of 10-30% fails, beyond the same-seed tolerance
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


def _point(label, values, *, conc=None, seeds=(42, 43, 44), band=0.0, metric='sla_tok_s_gpu', entry='motif-3/sim'):
    "One point of a batch document, simulated, at `seeds`, with a repeat band of `band` for `metric`."
    return dict(entry=entry, label=label, concurrency=conc, values={metric: list(values)}, seeds=list(seeds), repeat_band={metric: band},
                provenance='simulated')

def _doc(*points): return {'noise_k': 3.0, 'band': 'point', 'errors': [], 'points': list(points)}

def _metrics(now, ref, **kw): return [f for f in gt.gate(now, ref, **kw) if f.kind == 'metric']

def _judged(now, ref):
    fs = _metrics(now, ref)
    assert all(f.tolerance is not None for f in fs), [f.line for f in fs]
    return fs

REF = (100.0, 99.0, 101.0)                              # about 1% seed-to-seed spread, three repeats (seeds 42-44)

def test_gate_flags_a_ten_percent_drop_over_seed_spread():
    "A 10% drop is a regression whether every seed dropped alike (90/89/91) or 9, 10 and 11%; the line gives the limits and what they rest on."
    for now in ((90.0, 89.0, 91.0), (91.0, 89.1, 89.89)):
        f, = _judged(_doc(_point('recipe', now)), _doc(_point('recipe', REF)))
        assert f.status == 'regression' and abs(f.change + 0.10) < 1e-3 and f.tolerance < 0.08, f.line
        assert gt.exit_code([f]) == 1
        assert f.line.startswith(f'REGRESSION motif-3/sim recipe SLA max: SLA-constrained tok/s/GPU 100 -> 90 (-10.0%) beyond tolerance \u00b1{f.tolerance:.1%} = '
                                 'repeat band \u00b10.0% (the same configuration at the same seed is bit-identical between runs'), f.line
        assert f' + 3\u03c3 noise \u00b1{f.noise:.1%} (' in f.line and f.band == 0.0 and abs(f.band + f.noise - f.tolerance) < 1e-12, f.line
        assert ('same-seed differences' in f.line) != ('run-to-run spread' in f.line), f.line        # the noise names its source
    # a study of several points, each 9/10/11% lower: the same-seed spread pools over them (8 df), the limit is near 3 sigma of it
    ref = _doc(*[_point(f'v{i}', REF) for i in range(4)])
    fs = _judged(_doc(*[_point(f'v{i}', (91.0, 89.1, 89.89)) for i in range(4)]), ref)
    assert {f.status for f in fs} == {'regression'} and all(f.tolerance < 0.03 for f in fs), [f.line for f in fs]
    assert 'spread 1.00% of 12 same-seed differences pooled over 4 points, 8 df: t 4.3 \u00d7 1.00%/\u221a3' in fs[0].line, fs[0].line
    assert 'errs toward passing' not in fs[0].line, fs[0].line                                 # enough degrees of freedom: no warning

def test_gate_passes_no_change_with_the_same_spread():
    "No change, with the same seed spread: identical values (a bit-identical sim) and values that move by about 1% seed by seed (measured)."
    assert {f.status for f in _judged(_doc(_point('recipe', REF)), _doc(_point('recipe', REF)))} == {'ok'}
    for now in ((99.0, 101.0, 100.0), (100.6, 98.5, 100.9), (99.2, 99.8, 100.7)):
        f, = _judged(_doc(_point('recipe', now)), _doc(_point('recipe', REF)))
        assert f.status == 'ok' and gt.exit_code([f]) == 0, f.line
    ref = _doc(*[_point(f'v{i}', REF) for i in range(4)])
    now = _doc(*[_point(f'v{i}', v) for i, v in enumerate(((99.0, 101.0, 100.0), (100.6, 98.5, 100.9), (99.2, 99.8, 100.7), (101.0, 99.5, 99.6)))])
    assert {f.status for f in _judged(now, ref)} == {'ok'}, [f.line for f in _judged(now, ref)]

def test_gate_line_names_band_and_noise_and_their_sources():
    "Every judged line says what its band and its noise rest on; with too little evidence, which way the gate errs."
    kv = _judged(_doc(_point('kv', (100.0, 99.0, 101.0), band=0.03)), _doc(_point('kv', REF, band=0.02)))[0]
    assert 'repeat band \u00b13.0% (how far the same configuration moves at the same seed between fresh runs, as `workbench validate` measured)' in kv.line
    other = _judged(_doc(_point('recipe', REF, seeds=(52, 53, 54))), _doc(_point('recipe', REF)))[0]
    assert 'run-to-run spread' in other.line and 'other seeds: [52, 53, 54] against [42, 43, 44]' in other.line, other.line
    assert 'only 4 df: a wide limit, so the gate errs toward passing' in other.line, other.line
    off, = _metrics({**_doc(_point('recipe', (90.0, 89.0, 91.0))), 'band': 'none'}, _doc(_point('recipe', REF)))
    assert off.status == 'regression' and 'repeat band off (band: none in the batch file) + 3\u03c3 noise' in off.line, off.line
    one, = _metrics(_doc(_point('recipe', (95.0,), seeds=(42,))), _doc(_point('recipe', (100.0,), seeds=(42,))))
    assert one.status == 'regression' and 'no noise measured (1 and 1 repeats): on the band alone the gate errs toward failing' in one.line, one.line
    none, = _metrics(_doc({**_point('recipe', (95.0,), seeds=(42,)), 'repeat_band': {}, 'basis': 'no validation for the current simulator inputs'}),
                     _doc({**_point('recipe', (100.0,), seeds=(42,)), 'repeat_band': {}}))
    assert none.status == 'skipped' and none.line.startswith('NOT JUDGED') and 'no repeat band (no validation for the current simulator inputs)' in none.line
    assert 'it passes unjudged, so the gate errs toward passing' in none.line and gt.exit_code([none]) == 0, none.line

def test_reference_doc_shows_the_printed_line():
    "docs/reference.md (Batches in CI) quotes the gate's own line for the case it describes, word for word."
    doc = (ROOT/'docs'/'reference.md').read_text()
    block = doc.split('9, 10 and 11% lower over seeds 42-44 than 100/99/101):', 1)[1].split('```', 2)[1]
    quoted = ' '.join(l.strip() for l in block.strip().splitlines())
    labels = ('recipe', 'baseline', 'cache: max_num_seqs=128', 'routing: mode=kv')
    f = _judged(_doc(*[_point(l, (91.0, 89.1, 89.89)) for l in labels]), _doc(*[_point(l, REF) for l in labels]))[0]
    assert quoted == f.line, (quoted, f.line)
