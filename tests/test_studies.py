"""Papermill executes every study notebook on the sim target with small parameters; the runs land in MLflow with the study structure,
the executed notebook shows every chart as an image (no JavaScript from a CDN), and the study leaves an HTML report that loads nothing."""
import json, os, re
from pathlib import Path
import pytest
import papermill as pm
from mlflow.tracking import MlflowClient

ROOT = Path(__file__).resolve().parents[1]
STUDIES = sorted((ROOT/'nbs'/'studies').glob('*.ipynb'))
from workbench.domain.loading import list_recipes
MODELS = {m.replace('-', '_'): m for m in list_recipes()}   # study notebook stem -> recipe id, from the recipes

def test_every_recipe_has_a_study_notebook():
    "The study notebooks are exactly one per recipe."
    assert sorted(p.stem for p in STUDIES) == sorted(MODELS)

def test_study_notebooks_in_sync_with_template():
    "Each study notebook is what nbs/studies/study_template.py renders for its recipe (title, intro, parameters, cells)."
    import sys
    sys.path.insert(0, str(ROOT/'tools'))
    import study_notebooks
    assert study_notebooks.out_of_sync() == []
    nb = study_notebooks.render('k-exaone-2')
    params = next(c.source for c in nb.cells if 'parameters' in (c.metadata.get('tags') or []))
    assert "model: str = 'k-exaone-2'" in params and 'ops_sections: bool = True' in params   # the recipe's study_defaults
    assert 'ops_sections: bool = False' in next(c.source for c in study_notebooks.render('motif-3').cells if 'parameters' in (c.metadata.get('tags') or []))

@pytest.mark.parametrize('nb', STUDIES, ids=[p.stem for p in STUDIES])
def test_study_notebook(nb, tmp_path, monkeypatch):
    "Execute one study notebook (two setting groups, 120 requests a point) and check the MLflow run structure."
    monkeypatch.setenv('WORKBENCH_RUNS', str(tmp_path))
    uri = f"sqlite:///{tmp_path/'mlflow.db'}"
    out = tmp_path/nb.name
    from workbench.base.core import ipc_kernel_manager
    pm.execute_notebook(str(nb), str(out), cwd=str(nb.parent), kernel_name='python3', progress_bar=False,
                        kernel_manager_class=ipc_kernel_manager(), store_widget_state=False,
                        parameters={'groups': ['routing', 'speculative'], 'request_count': 120, 'tracking_uri': uri, 'study': f'ci-{nb.stem}'})
    model = MODELS[nb.stem]
    c = MlflowClient(uri)
    exp = c.get_experiment_by_name(model)
    assert exp is not None, f'no experiment {model}'
    parents = c.search_runs([exp.experiment_id], "tags.`workbench.kind` = 'study'")
    assert [r.data.tags['workbench.study'] for r in parents] == [f'ci-{nb.stem}']
    parent = parents[0]
    pid = parent.info.run_id
    assert parent.info.status == 'FINISHED' and parent.data.params['target'] == 'sim' and 'mlflow.source.git.commit' in parent.data.tags
    assert any(k.startswith('best.') for k in parent.data.metrics) and not any(k.startswith('overlap.') for k in parent.data.metrics)
    kids = c.search_runs([exp.experiment_id], "tags.`workbench.kind` = 'point'")
    assert len(kids) >= 2 and all(k.data.tags['mlflow.parentRunId'] == parent.info.run_id for k in kids)
    for k in kids:
        t, m, p = k.data.tags, k.data.metrics, k.data.params
        assert t['workbench.target'] == 'sim' and t['workbench.simulated'] == 'true' and t['workbench.provenance'] == 'simulated', t
        assert {'workbench.group', 'workbench.variant_hash', 'workbench.recipe_version', 'workbench.image', 'mlflow.note.content'} <= set(t), t
        if t.get('workbench.modelled') == 'false':           # a setting the simulator does not model (Motif 3's 3P1D baseline): no number at all
            assert not m and 'not modelled' in t['mlflow.note.content'].lower(), (t, m); continue
        assert {'output_token_throughput_per_gpu', 'time_to_first_token.p50', 'inter_token_latency.p99', 'sla.passed'} <= set(m) and len(m) <= 15, m
        assert {'topology', 'changed.group', 'changed.setting', 'changed.value', 'loadgen.concurrency'} <= set(p) and 'null' not in p.values(), p
        assert any(key.endswith('.tp') for key in p) and not any(key.startswith(('VllmWorker', 'PrefillWorker', 'DecodeWorker')) for key in p), p
        assert ' @c' in k.info.run_name and len(k.info.run_name) <= 60 and k.inputs.dataset_inputs, (k.info.run_name, k.inputs)
    arts = {a.path for d in ('diagnosis', 'charts', 'overlap', 'offload', 'autoscale') for a in c.list_artifacts(pid, d)}
    assert {'diagnosis/study_diagnosis.csv', 'charts/overlap_vs_reuse.png', 'overlap/overlap.csv'} <= arts, arts
    kids = c.search_runs([exp.experiment_id], "tags.`workbench.kind` = 'point'")
    assert all('diagnosis.verdict' in k.data.tags and not any(m.startswith('diag.') for m in k.data.metrics) for k in kids)
    if model == 'k-exaone-2':   # the notebook whose ops sections are on by default
        assert {'offload/offload.csv', 'autoscale/autoscale.csv'} <= arts, arts
        assert c.get_run(pid).data.tags['autoscale.planner_sla_mode'].startswith(('available', 'unavailable'))
    groups = {k.data.tags['workbench.group'] for k in kids}
    assert {'recipe', 'baseline'} <= groups
    folder = tmp_path/f'ci-{nb.stem}'
    summary = (folder/'summary.txt').read_text()
    assert 'SIMULATED' in summary and 'Published vs reproduced' in summary and 'calibrated' not in summary.split('none is measured')[1]
    assert (folder/'pareto.png').exists()
    # the executed notebook, converted to HTML, shows every chart as an image and needs no script from anywhere
    from nbconvert import HTMLExporter
    import nbformat
    executed = nbformat.read(out, as_version=4)
    outputs = [o for c in executed.cells if c.cell_type == 'code' for o in c.get('outputs', [])]
    charts = sorted(p.stem for p in folder.glob('*.png'))
    assert {'pareto', 'published_vs_reproduced', 'group_deltas', 'overlap_vs_reuse'} <= set(charts), charts
    assert sum('image/png' in o.get('data', {}) for o in outputs) == len(charts)
    assert not any(k.startswith('application/vnd.vegalite') or 'vega' in str(o.get('data', {}).get('text/html', '')) for o in outputs for k in o.get('data', {}))
    assert not [o for o in outputs if o.get('name') == 'stderr'], [o.get('text', '')[:300] for o in outputs if o.get('name') == 'stderr']
    assert 'widgets' not in executed.metadata
    html, _ = HTMLExporter(template_name='basic').from_notebook_node(executed)
    assert len(re.findall(r'<img[^>]*src="data:image/png;base64,', html)) == len(charts)
    assert not re.search(r'<script[^>]*src=|cdn\.jsdelivr|unpkg\.com', html), re.findall(r'<script[^>]*src="[^"]+"', html)
    # one HTML report per study, that loads nothing
    page = (folder/'report.html').read_text()
    assert page.count('src="data:image/png;base64,') == len(charts) and not re.search(r'<script|<link|src="http|@import', page)
    assert page.count('>MLflow run</a>') == len(kids)
