"Papermill executes every study notebook on the sim target with small parameters; the runs land in MLflow with the study structure."
import json, os
from pathlib import Path
import pytest
import papermill as pm
from mlflow.tracking import MlflowClient

ROOT = Path(__file__).resolve().parents[1]
STUDIES = sorted((ROOT/'nbs'/'studies').glob('*.ipynb'))
from workbench.recipes import list_recipes
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
    pm.execute_notebook(str(nb), str(out), cwd=str(nb.parent), kernel_name='python3', progress_bar=False,
                        parameters={'groups': ['routing', 'speculative'], 'request_count': 120, 'tracking_uri': uri, 'study': f'ci-{nb.stem}'})
    model = MODELS[nb.stem]
    c = MlflowClient(uri)
    exp = c.get_experiment_by_name(model)
    assert exp is not None, f'no experiment {model}'
    parents = c.search_runs([exp.experiment_id], "tags.`workbench.kind` = 'study'")
    assert [r.data.tags['workbench.study'] for r in parents] == [f'ci-{nb.stem}']
    parent = parents[0]
    pid = parent.info.run_id
    assert parent.info.status == 'FINISHED' and parent.data.params['target'] == 'sim' and 'git.sha' in parent.data.tags
    kids = c.search_runs([exp.experiment_id], "tags.`workbench.kind` = 'point'")
    assert len(kids) >= 2 and all(k.data.tags['mlflow.parentRunId'] == parent.info.run_id for k in kids)
    for k in kids:
        t, m, p = k.data.tags, k.data.metrics, k.data.params
        assert t['workbench.target'] == 'sim' and t['workbench.simulated'] == 'true', t
        assert {'workbench.group', 'workbench.variant_hash', 'workbench.recipe_version', 'workbench.image'} <= set(t), t
        assert {'output_token_throughput', 'time_to_first_token.p50', 'output_tok_s_per_gpu', 'sla_passed'} <= set(m), m
        assert 'topology' in p and any(key.endswith('parallelism.tensor_parallel_size') for key in p)
    arts = {a.path for d in ('diagnosis', 'charts', 'overlap', 'offload', 'autoscale') for a in c.list_artifacts(pid, d)}
    assert {'diagnosis/study_diagnosis.csv', 'charts/overlap_vs_reuse.png', 'overlap/overlap.csv'} <= arts, arts
    kids = c.search_runs([exp.experiment_id], "tags.`workbench.kind` = 'point'")
    assert all('diagnosis.likely' in k.data.tags and 'diag.actual_reuse_share' in k.data.metrics for k in kids)
    if model == 'k-exaone-2':   # the notebook whose ops sections are on by default
        assert {'offload/offload.csv', 'autoscale/autoscale.csv'} <= arts, arts
        assert c.get_run(pid).data.tags['autoscale.planner_sla_mode'].startswith(('available', 'unavailable'))
    groups = {k.data.tags['workbench.group'] for k in kids}
    assert {'recipe', 'baseline'} <= groups
    summary = (tmp_path/f'ci-{nb.stem}'/'summary.txt').read_text()
    assert 'SIMULATED' in summary and 'Published vs reproduced' in summary
    assert (tmp_path/f'ci-{nb.stem}'/'pareto.png').exists()
