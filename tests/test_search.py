"""`workbench search` end to end: for every model a small search on the sim target logs its frontier to MLflow under one
parent search run; the top configurations of one model are validated on the local target (live frontend, mocker workers,
AIPerf); the study notebook's search section runs when its one parameter turns it on.

Small budgets (20 s of search, 60 requests per point) keep each search to about a minute on 2 cores. Searches write to
runs/<search id>/ (the calibration cache there is shared, as a user's is); each test has its own MLflow store."""
import os, re, subprocess, sys
from pathlib import Path
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

ROOT = Path(__file__).resolve().parents[1]
WORKBENCH = Path(sys.executable).with_name('workbench')
from workbench.domain.loading import list_recipes

def _search(model:str, uri:str, *extra:str, timeout:int=900) -> subprocess.CompletedProcess:
    "Run `workbench search` as a user does; fail with its output when it exits non-zero."
    p = subprocess.run([str(WORKBENCH), 'search', model, '--budget-s', '20', '--requests', '60', '--tracking-uri', uri, '-q', *extra],
                       capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p

def _search_run(c:MlflowClient, model:str):
    "The one parent search run of `model` in the store."
    exp = c.get_experiment_by_name(model)
    assert exp is not None, f'no experiment {model}'
    runs = c.search_runs([exp.experiment_id], "tags.`workbench.kind` = 'search'")
    assert len(runs) == 1, [r.info.run_name for r in runs]
    return exp, runs[0]

@pytest.mark.parametrize('model', list_recipes())
def test_search_logs_a_frontier(model, tmp_path):
    "A small search of `model` prints where it lands against the recipe and logs every point and the frontier under one parent run."
    uri = f"sqlite:///{tmp_path/'mlflow.db'}"
    out = _search(model, uri).stdout
    assert 'Every number is SIMULATED' in out and 'Where the search lands: search best:' in out and 'Recommendation:' in out, out
    assert 'configurations/s' in out and 'USD per GPU-hour' in out, out
    c = MlflowClient(uri)
    exp, parent = _search_run(c, model)
    t, m = parent.data.tags, parent.data.metrics
    assert parent.info.status == 'FINISHED' and parent.info.run_name == f'search: {model}' and t['workbench.target'] == 'sim', (parent.info, t)
    assert m['search.points'] >= 10 and m['search.configs'] >= 3 and m['search.best_tok_s_per_gpu'] > 0 and 'search.vs_recipe_pct' in m, m
    kids = c.search_runs([exp.experiment_id], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'", max_results=5000)
    assert len(kids) == m['search.points'] and {k.data.tags['workbench.group'] for k in kids} == {'search', 'recipe'}
    assert all(k.data.tags['workbench.provenance'] == 'simulated' and k.data.tags['workbench.kind'] == 'point' for k in kids)
    front = pd.read_csv(c.download_artifacts(parent.info.run_id, 'search/frontier.csv', str(tmp_path)))
    assert len(front) == m['search.frontier_points'] >= 1 and front.sla_passed.all() and front.output_tok_s_per_gpu.gt(0).all()
    assert front.user_tok_s.is_monotonic_increasing and front.output_tok_s_per_gpu.is_monotonic_decreasing      # a Pareto frontier
    assert {a.path for a in c.list_artifacts(parent.info.run_id, 'charts')} == {'charts/frontier.png', 'charts/frontier.svg'}
    winner = {a.path for a in c.list_artifacts(parent.info.run_id, 'winner')}
    assert 'winner/variant.yaml' in winner and 'winner/manifests' in winner

def test_search_validates_top_on_local(tmp_path):
    "The two best configurations of a small Motif 3 search re-run on the local target: predicted against live, logged as validation points."
    uri = f"sqlite:///{tmp_path/'mlflow.db'}"
    out = _search('motif-3', uri, '--gpus', '2', '--validate', 'local', '--validate-k', '2').stdout
    assert 'Live validation' in out and 'mocker' in out, out
    c = MlflowClient(uri)
    exp, parent = _search_run(c, 'motif-3')
    val = c.search_runs([exp.experiment_id], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}' and tags.`workbench.group` = 'validation'")
    assert len(val) == 2, len(val)
    for r in val:
        assert r.data.tags['workbench.target'] == 'local' and r.data.tags['workbench.engine'] == 'mocker', r.data.tags
        assert r.data.metrics['output_token_throughput_per_gpu'] > 0 and r.data.metrics['error_request_count'] == 0, r.data.metrics
    assert parent.data.tags['workbench.search.recommendation'].startswith(('kept: ', 'not kept: '))

def test_study_notebook_search_section(tmp_path):
    "The study notebook runs its search section when `search` is True (and skips it by default), for `search_budget_s` seconds."
    import papermill as pm
    from workbench.base.core import ipc_kernel_manager
    uri = f"sqlite:///{tmp_path/'mlflow.db'}"
    nb = ROOT/'nbs'/'studies'/'motif_3.ipynb'
    out = tmp_path/nb.name
    pm.execute_notebook(str(nb), str(out), cwd=str(nb.parent), kernel_name='python3', progress_bar=False, kernel_manager_class=ipc_kernel_manager(),
                        store_widget_state=False, parameters={'groups': ['routing'], 'request_count': 60, 'tracking_uri': uri, 'study': 'ci-search',
                                                              'search': True, 'search_budget_s': 15})
    import nbformat
    outputs = '\n'.join(o.get('text', '') if isinstance(o.get('text', ''), str) else ''.join(o['text'])
                         for c in nbformat.read(out, as_version=4).cells if c.cell_type == 'code' for o in c.get('outputs', []))
    assert 'Where the search lands' in outputs and 'skipped: search is False' not in outputs, outputs[-3000:]
    _, parent = _search_run(MlflowClient(uri), 'motif-3')
    assert parent.info.status == 'FINISHED' and parent.data.metrics['search.points'] > 0
    assert float(parent.data.params['budget_s']) == 15, parent.data.params                # the notebook's search_budget_s reached the search

def test_two_searches_share_one_study_on_postgresql():
    """Two `workbench search` processes started at once with `--storage server` (the team server's PostgreSQL, optuna's RDB storage)
    and one study name work one optuna study together: every trial is in it once, complete, numbered without gaps, and both
    processes' trials are there."""
    import optuna, shutil, tempfile
    from workbench.tracking import server
    from workbench.search.explore import optuna_storage
    tmp_path = Path(tempfile.mkdtemp(prefix='wb-search-pg-')); tmp_path.chmod(0o755)    # PostgreSQL's account must enter it (pytest's is private)
    runs = tmp_path/'runs'; runs.mkdir(); runs.chmod(0o755)
    env = {**os.environ, 'WORKBENCH_RUNS': str(runs)}
    old = os.environ.get('WORKBENCH_RUNS'); os.environ['WORKBENCH_RUNS'] = str(runs)
    try:
        server.start(port=0)
        try:
            cmd = [str(WORKBENCH), 'search', 'motif-3', '--gpus', '2', '--budget-s', '25', '--requests', '60', '-q', '--storage', 'server',
                   '--study-name', 'shared-motif', '--tracking-uri', f"sqlite:///{tmp_path/'mlflow.db'}"]
            ps = [subprocess.Popen(cmd + ['--seed', str(42 + i)], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                  for i in range(2)]
            outs = [p.communicate(timeout=900)[0] for p in ps]
            assert all(p.returncode == 0 for p in ps), [o[-2000:] for o in outs]
            url, passfile = server.search_storage()
            st = optuna.load_study(study_name='shared-motif', storage=optuna_storage(('rdb', url, passfile)))
            trials = st.get_trials(deepcopy=False)
            assert sorted(t.number for t in trials) == list(range(len(trials))) and len(trials) >= 6, [t.number for t in trials]
            assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials), {t.number: t.state for t in trials}   # none lost mid-way
            assert len({t.user_attrs['worker'] for t in trials}) == 2, {t.user_attrs.get('worker') for t in trials}      # both processes
            assert any(f'optuna: {len(trials)} trials' in o for o in outs), [o[-1500:] for o in outs]   # the last to finish read all of them
        finally:
            server.stop()
    finally:
        if old is None: os.environ.pop('WORKBENCH_RUNS', None)
        else: os.environ['WORKBENCH_RUNS'] = old
        shutil.rmtree(tmp_path, ignore_errors=True)

def test_search_terminal_says_what_is_true(tmp_path):
    """What `workbench search` prints (without -q) holds: the point count is an estimate (`~N`) that each point stays below,
    the ETA never sits at 0:00 (it is the budget left, unknown past it), the file named for the refused configurations exists,
    the recommendation and the file line agree, and every table and sentence of the summary fits 120 columns."""
    uri = f"sqlite:///{tmp_path/'mlflow.db'}"
    p = subprocess.run([str(WORKBENCH), 'search', 'motif-3', '--budget-s', '20', '--requests', '60', '--tracking-uri', uri],
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    lines = p.stdout.splitlines()
    pts = [re.match(r'\[\s*(\d+)/(~\d+|\?)\] .* ETA (\S+)$', l) for l in lines if l.startswith('[')]
    assert pts and all(pts), [l for l in lines if l.startswith('[')][:5]
    assert re.search(r': ~\d+ point\(s\) to go$', lines[0]), lines[0]
    assert all(m.group(2) == '?' or int(m.group(1)) < int(m.group(2)[1:]) for m in pts), [m.group(0)[:12] for m in pts if m.group(2) != '?']
    assert not [m.group(0) for m in pts if m.group(3) in ('0:00', '~0:00')], 'an ETA of 0:00 while points still came'
    summary = p.stdout[p.stdout.index('Deployment search:'):]
    flat = ' '.join(summary.split())
    refused = re.search(r'configurations refused \(their reasons: (\S+)\)', flat)
    n_refused = int(re.search(r'(\d+) configurations refused', flat).group(1))
    assert (refused is not None and Path(refused.group(1)).is_file()) if n_refused else refused is None, flat[:600]   # a file that is there
    kept = 'Recommendation: KEPT:' in flat
    assert kept or 'Recommendation: NOT KEPT: no configuration is recommended' in flat, flat
    assert ('search best (recommended): ' if kept else 'search best (not recommended): ') in summary and '\nwinner:' not in summary, summary[-800:]
    wide = [l for l in summary.splitlines() if len(l) > 120 and not re.match(r'^(chart|search best \(.*\)|summary|MLflow): ', l)]
    assert not wide, wide
