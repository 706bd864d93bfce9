"""Faults injected into live studies: the real worker, frontend and NATS processes of the local target killed (SIGKILL) and
stopped (SIGSTOP) mid-point, a disk that fills up mid-study, and a Kubernetes API server restarted (briefly, then for longer
than the retry deadline) under a running k8s study.

Each fault must end in a FAILED point whose `workbench.failure` tag names the cause (the process and its exit status, the
hung process and the timeout that fired, the full disk, the API server that did not answer), with the process logs attached
as artifacts; in a non-zero exit of `workbench run` (3) that prints each failed point once (its progress line, with the
cause) and a tally; and in a retry
(`-p rerun_failed=True`) that re-runs only the failed points. No timing is asserted; detection times are printed.

All tests are `slow` (minutes on a loaded 2-core machine; WORKBENCH_SKIP_SLOW=1 skips them). The disk test needs to mount a
tmpfs, the API-server test the k8s harness binaries (tools/k8s/build.sh); each is skipped, with the reason, without them.
"""
import json, os, re, shutil, signal, socket, sqlite3, subprocess, sys, threading, time, urllib.request
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
slow = pytest.mark.skipif(os.environ.get('WORKBENCH_SKIP_SLOW') == '1', reason='slow (WORKBENCH_SKIP_SLOW=1)')

# A short local study: k-exaone-2 with two setting groups has four variants (recipe, baseline, one kernels and one routing
# candidate), one point each; short sequences keep a point to ~10 s of load, long enough to hit it mid-flight (the fault is
# sent once the frontend has received 4 requests).
LOCAL_OPTIONS = {'isl': 64, 'osl': 128, 'warmup': 0, 'calibrate': False, 'requests_per_point': 50, 'hang_timeout_s': 20}
LOCAL_ARGS = ['run', 'k-exaone-2', '--target', 'local', '-p', "groups=['kernels', 'routing']", '-p', 'concurrencies=[4]',
              '-p', 'request_count=50', '-p', f'options={LOCAL_OPTIONS!r}', '-q']

RUNNER = r'''
import sys, json
from workbench.studies.study import run_study
a = json.loads(sys.argv[1])
o = run_study(a['model'], groups=a['groups'], concurrencies=a['concurrencies'], request_count=a['request_count'], tracking_uri=a['uri'],
              target=a['target'], progress=False, target_options=a['target_options'], rerun_failed=a.get('rerun_failed', False))
print(json.dumps({'ran': o.ran, 'reused': o.reused, 'failed': o.failed, 'study': o.study}), flush=True)
'''


def env_with(**kw) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(('MLFLOW_', 'WORKBENCH_'))}
    return {**env, 'PYTHONUNBUFFERED': '1', **{k: str(v) for k, v in kw.items()}}

def alive(pid:int) -> bool:
    try: return Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0] != 'Z'
    except (OSError, IndexError): return False

def store_points(db:Path, kind:str='point') -> list[dict]:
    """Child runs (or `kind` 'study': parent runs) in the sqlite store: run id, status, start time (ms), workbench tags (read-only, works
    while a study writes)."""
    con = sqlite3.connect(f'file:{db}?mode=ro', uri=True, timeout=30)
    try:
        runs = {r: {'run_id': r, 'status': s, 'start_ms': t} for r, s, t in con.execute('select run_uuid, status, start_time from runs')}
        for rid, k, v in con.execute("select run_uuid, key, value from tags where key like 'workbench.%'"):
            if rid in runs: runs[rid][k.removeprefix('workbench.')] = v
    finally: con.close()
    return [r for r in runs.values() if r.get('kind') == kind]

def artifacts(uri:str, run_id:str, path:str='logs') -> set[str]:
    from mlflow import MlflowClient
    return {Path(a.path).name for a in MlflowClient(uri).list_artifacts(run_id, path)}

def requests_seen(url:str) -> float:
    "Requests the frontend has received so far (0 when /metrics does not answer)."
    try:
        with urllib.request.urlopen(f'{url}/metrics', timeout=2) as r: text = r.read().decode()
    except OSError: return 0
    return sum(float(l.split()[-1]) for l in text.splitlines() if l.startswith('dynamo_frontend_requests_total'))


class Injector(threading.Thread):
    "Waits for each new live graph of a study, then, once it serves requests, sends the next fault (process name, signal)."
    def __init__(self, runs:Path, faults:list):
        super().__init__(daemon=True); self.runs, self.faults, self.done, self.graphs, self.stop = runs, faults, [], [], threading.Event()
    def _new_graph(self) -> Path|None:
        while not self.stop.is_set():
            for g in sorted((self.runs/'local').glob('*/graph.json')) if (self.runs/'local').exists() else []:
                if g not in self.graphs: self.graphs.append(g); return g
            time.sleep(0.2)
    def run(self):
        for name, sig in self.faults:
            g = self._new_graph()
            if g is None: return
            info = json.loads(g.read_text()); pid = info['procs'][name]['pid']
            while not self.stop.is_set() and requests_seen(info['url']) < 4 and alive(pid): time.sleep(0.2)
            if self.stop.is_set() or not alive(pid): return
            os.kill(pid, sig); self.done.append({'name': name, 'signal': sig, 'pid': pid, 'graph': g, 't': time.monotonic(), 'wall': time.time()})
            if sig == signal.SIGSTOP:     # continue it once the study moved on (its teardown SIGKILLs it anyway)
                threading.Timer(120, lambda p=pid: alive(p) and os.kill(p, signal.SIGCONT)).start()
    def graph_pids(self) -> list[int]:
        return [p['pid'] for g in self.graphs for p in json.loads(g.read_text())['procs'].values()]


def cleanup(pids):
    for pid in pids:
        if alive(pid):
            try: os.kill(pid, signal.SIGCONT); os.kill(pid, signal.SIGKILL)
            except ProcessLookupError: pass

def run_cmd(args, env, timeout=1800):
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try: out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL); p.communicate(); raise AssertionError(f'{args[:3]} hung: no end within {timeout} s')
    return p.returncode, out, err


# ---------------------------------------------------------------------------------------------------------
# SIGKILL of the worker, the frontend and NATS, through `workbench run`

@slow
def test_sigkill_worker_frontend_nats_cli(tmp_path):
    "Three variants lose a process each mid-point; `workbench run` prints the three causes and exits 3; the retry re-runs only them."
    runs, db = tmp_path/'runs', tmp_path/'store'/'mlflow.db'
    env = env_with(WORKBENCH_RUNS=runs, MLFLOW_TRACKING_URI=f'sqlite:///{db}')
    faults = [('agg0', signal.SIGKILL), ('frontend', signal.SIGKILL), ('nats', signal.SIGKILL)]
    inj = Injector(runs, faults); inj.start()
    try:
        rc, out, err = run_cmd([str(BIN/'workbench'), *LOCAL_ARGS], env)
    finally:
        inj.stop.set(); cleanup(inj.graph_pids())
    assert len(inj.done) == 3, (inj.done, err[-3000:])
    assert rc == 3 and 'Traceback' not in err, f'exit {rc}:\n{err[-4000:]}'
    failed = [l for l in err.splitlines() if ' FAILED: ' in l]      # each failed point once, as it failed: its progress line
    assert len(failed) == 3, failed
    for f in inj.done:
        line = next((l for l in failed if f"{f['name']} (pid {f['pid']}) exited with -9" in l), None)
        assert line and ' @c4 ' in line and 'FAILED: run point c=4' in line, (f, failed)
    assert re.search(r'study \S+: 1 point\(s\) finished, 3 failed\. Re-run only the failed points', err), err[-2000:]
    points = store_points(db)
    bad = [p for p in points if p['status'] == 'FAILED']
    assert len(bad) == 3 and all('exited with -9' in p['failure'] for p in bad), bad
    for p in bad:
        logs = artifacts(f'sqlite:///{db}', p['run_id'])
        assert {'agg0.log', 'frontend.log', 'nats.log', 'error.txt'} <= logs and any(x.startswith('aiperf-') for x in logs), logs
    assert not [x for x in inj.graph_pids() if alive(x)], 'a graph process outlived its failed point'
    print('kill -> failed point: ' + '; '.join(f"{f['name']}" for f in inj.done))
    first = {p['point_key']: p['run_id'] for p in points if p['status'] == 'FINISHED'}

    rc, out, err = run_cmd([str(BIN/'workbench'), *LOCAL_ARGS, '-p', 'rerun_failed=True'], env)
    assert rc == 0 and 'executed notebook' in out and 'Traceback' not in err, f'exit {rc}:\n{err[-3000:]}'
    done = [p for p in store_points(db) if p['status'] == 'FINISHED']
    assert len(done) == 4 and len({p['point_key'] for p in done}) == 4
    assert {p['point_key']: p['run_id'] for p in done if p['point_key'] in first} == first, 'a finished point was re-run'


# ---------------------------------------------------------------------------------------------------------
# SIGSTOP of the worker, the frontend and NATS: named as hung, with the timeout that fired

@slow
def test_sigstop_worker_frontend_nats_named_hung(tmp_path):
    """A stopped process never answers: each point fails within 30 s of the SIGSTOP naming the process, its pid and that it is stopped
    (SIGSTOP), not after the hang timeout (120 s here) nor as AIPerf's 'all requests failed'; the retry re-runs only them."""
    runs, db = tmp_path/'runs', tmp_path/'store'/'mlflow.db'
    a = dict(model='k-exaone-2', groups=['kernels', 'routing'], concurrencies=[4], request_count=50, uri=f'sqlite:///{db}', target='local',
             target_options={**LOCAL_OPTIONS, 'hang_timeout_s': 120, 'progress': False})
    faults = [('agg0', signal.SIGSTOP), ('frontend', signal.SIGSTOP), ('nats', signal.SIGSTOP)]
    inj = Injector(runs, faults); inj.start()
    try: rc, out, err = run_cmd([sys.executable, '-c', RUNNER, json.dumps(a)], env_with(WORKBENCH_RUNS=runs))
    finally: inj.stop.set(); cleanup(inj.graph_pids())
    assert rc == 0 and len(inj.done) == 3, (rc, inj.done, err[-3000:])
    o = json.loads(out.strip().splitlines()[-1])
    assert (o['ran'], len(o['failed'])) == (1, 3), o
    causes, bad = [c for _, _, c in o['failed']], [p for p in store_points(db) if p['status'] == 'FAILED']
    assert {p['failure'] for p in bad} == set(causes) and len(bad) == 3, (bad, causes)
    took = []
    for f in inj.done:
        named = f"{f['name']} (pid {f['pid']}) hung: its process is stopped (SIGSTOP, state T) for "
        c = next((c for c in causes if named in c), None)
        assert c and c.startswith('run point c=4 (a process hung during the point): ') and 'no token for' not in c, (f, causes)
        took.append(next(p['start_ms'] for p in bad if p['failure'] == c)/1000 - f['wall'])    # SIGSTOP -> the point recorded FAILED
        assert took[-1] < 30, f"{f['name']}: recorded FAILED {took[-1]:.0f} s after its SIGSTOP: {c[:200]}"
    print('stop -> recorded FAILED ' + ', '.join(f"{f['name']} {t:.0f} s" for f, t in zip(inj.done, took)) + ' after SIGSTOP: ' + causes[0][:200])
    rc, out, err = run_cmd([sys.executable, '-c', RUNNER, json.dumps({**a, 'rerun_failed': True})], env_with(WORKBENCH_RUNS=runs))
    o2 = json.loads(out.strip().splitlines()[-1])
    assert rc == 0 and (o2['ran'], o2['reused'], o2['failed']) == (3, 1, []), (o2, err[-2000:])


# ---------------------------------------------------------------------------------------------------------
# A full disk mid-study

def run_filling(args, env, disk:Path, when, poll:float):
    "Run `args` while a thread fills `disk` (1 MiB writes until it is full) as soon as `when()` holds; (rc, out, err)."
    filled = threading.Event()
    def fill():
        while not filled.is_set():
            if when(): break
            time.sleep(poll)
        with open(disk/'filler', 'wb') as f:
            try:
                while True: f.write(b'\0' * 2**20); f.flush()
            except OSError: pass
        filled.set()
    t = threading.Thread(target=fill, daemon=True); t.start()
    try: return run_cmd(args, env)
    finally: filled.set(); t.join(10)


def mount_tmpfs(disk:Path):
    "A 96 MiB tmpfs at `disk` (skips the test where mounting is not allowed)."
    disk.mkdir()
    r = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=96m', 'tmpfs', str(disk)], capture_output=True, text=True)
    if r.returncode: pytest.skip(f'cannot mount a tmpfs here: {r.stderr.strip()}')

def judge_full_disk(rc:int, err:str, db:Path, runs:Path) -> tuple[list, list]:
    """What a disk that filled up mid-study must leave: exit 3 with one `error:` line naming it; the point in flight FAILED in the store with
    its cause (printed once as it failed); the parent run ended FAILED, nothing RUNNING; a tally that says what the store and the progress
    channel say; no reserve, temporary file or truncated notebook. Returns (finished, failed) child runs."""
    lines = [l for l in err.splitlines() if l.strip()]
    assert rc == 3 and 'Traceback' not in err, f'exit {rc}:\n{err[-4000:]}'
    errors = [l for l in lines if l.startswith('error: ')]
    assert len(errors) == 1 and 'no space left' in errors[0].lower() and errors[0].count('Fix:') == 1, lines
    pts = store_points(db)
    assert not [p for p in pts if p['status'] == 'RUNNING'], pts
    pts = [p for p in pts if p.get('sla_max_point') != 'true']  # the plan's points (each variant's SLA-maximum point is logged beside them)
    done, bad = [p for p in pts if p['status'] == 'FINISHED'], [p for p in pts if p['status'] == 'FAILED']
    failed = [l for l in lines if ' FAILED: ' in l]
    if failed or bad:                                            # a point hit it: that point names it, in the output and the store
        assert failed and all('No space left on device' in l or 'no space left' in l for l in failed), failed
        assert bad and all('space' in p['failure'].lower() for p in bad), bad
        assert 'that point is recorded FAILED' in errors[0], errors[0]
    parent = store_points(db, 'study')
    assert [p['status'] for p in parent] == ['FAILED'] and 'space' in parent[0]['failure'].lower(), parent   # not left RUNNING
    keys = lambda ps: {p['point_key'] for p in ps}
    tally = [l for l in lines if ' point(s) finished, ' in l]
    want = f': {len(keys(done))} point(s) finished, {len(keys(bad) - keys(done))} failed, stopped before its end'
    assert tally and all(l.startswith('study ') and want in l for l in tally), (tally, want)
    feed = [json.loads(l) for f in runs.glob('*/progress.jsonl') for l in f.read_text().splitlines() if '"done"' in l]
    if feed:                                                     # the progress channel (`2 ran, 1 failed`): the same numbers
        assert (feed[-1]['ran'], feed[-1]['failed']) == (len(keys(done)), len(keys(bad) - keys(done))), (feed[-1], tally)
    assert not list(runs.glob('*/reserve.jsonl')), 'a reserve was left: something was not recorded in MLflow'
    left = [p for p in runs.rglob('.*') if re.fullmatch(r'\..+\.\d+(\.[0-9a-f]{8})?(\..*)?', p.name)]
    assert not left, f'temporary files left: {left}'
    for nb in runs.glob('*/motif_3.ipynb'): json.loads(nb.read_text())     # no truncated notebook left
    return done, bad

def retry_after_full_disk(args, env, db:Path, disk:Path, done:list):
    "Space back: the same command with rerun_failed=True ends well, runs only what is missing, and re-runs no finished point."
    first = {p['point_key']: p['run_id'] for p in done}
    (disk/'filler').unlink()
    rc, out, err = run_cmd(args + ['-p', 'rerun_failed=True'], env)
    assert rc == 0 and 'Traceback' not in err, f'exit {rc}:\n{err[-3000:]}'
    now = [p for p in store_points(db) if p['status'] == 'FINISHED']
    assert {p['point_key']: p['run_id'] for p in now if p['point_key'] in first} == first, 'a finished point was re-run'
    assert len({p['point_key'] for p in now}) == len(now)
    assert [p['status'] for p in store_points(db, 'study')] == ['FINISHED'], store_points(db, 'study')


@slow
def test_disk_full_mid_study_cli(tmp_path):
    """The runs folder's disk fills up after the first points, the store on another disk (a team server, say): the point in flight is
    recorded FAILED with the cause, the parent run ends FAILED, the study stops with one `error:` line, a true tally and exit 3, no
    temporary file is left; once space is back, the retry runs only what is missing."""
    disk = tmp_path/'disk'; mount_tmpfs(disk)
    db = tmp_path/'store'/'mlflow.db'
    env = env_with(WORKBENCH_RUNS=disk/'runs')
    args = [str(BIN/'workbench'), 'run', 'motif-3', '-p', "groups=['cache']", '-p', 'concurrencies=[1]', '-p', 'request_count=40',
            '-p', f'tracking_uri=sqlite:///{db}', '-q']
    try:
        rc, out, err = run_filling(args, env, disk, lambda: db.exists() and len([p for p in store_points(db) if p['status'] == 'FINISHED']) >= 2, 0.3)
        done, bad = judge_full_disk(rc, err, db, disk/'runs')
        print(f'disk full: {len(done)} point(s) finished before, {len(bad)} failed: {err[err.index("error: "):][:200]}')
        retry_after_full_disk(args, env, db, disk, done)
    finally:
        subprocess.run(['umount', '-l', str(disk)], capture_output=True)


@slow
def test_disk_full_store_on_the_same_disk_cli(tmp_path):
    """The default layout: the MLflow store (runs/mlflow.db) and its artifacts on the disk that fills up mid-study. The study's reserve
    gives MLflow the room to record the point in flight FAILED with its cause (and its error.txt) and to end the parent run FAILED, so
    the tally is true at once; once space is back, the retry runs only what is missing."""
    disk = tmp_path/'disk'; mount_tmpfs(disk)
    runs = disk/'runs'; db = runs/'mlflow.db'
    env = env_with(WORKBENCH_RUNS=runs)
    args = [str(BIN/'workbench'), 'run', 'motif-3', '-p', "groups=['cache']", '-p', 'concurrencies=[1]', '-p', 'request_count=40', '-q']
    def third_point():          # two variants are done (their point and SLA maximum): the third point runs now
        return sum(l.count('SLA max') for f in runs.glob('*/progress.jsonl') for l in f.read_text().splitlines()) >= 2
    try:
        rc, out, err = run_filling(args, env, disk, third_point, 0.05)
        done, bad = judge_full_disk(rc, err, db, runs)
        assert bad, 'the disk filled while the third point ran: that point must be recorded FAILED'
        err_txt = lambda p: (runs/'mlartifacts'/'motif-3'/p['run_id']/'artifacts'/'logs'/'error.txt').exists()
        for k in {p['point_key'] for p in bad}: assert any(err_txt(p) for p in bad if p['point_key'] == k), (k, bad)   # the error, beside its cause
        print(f'disk full, store on it: {len(done)} point(s) finished before, {len(bad)} failed: {err[err.index("error: "):][:200]}')
        retry_after_full_disk(args, env, db, disk, done)
    finally:
        subprocess.run(['umount', '-l', str(disk)], capture_output=True)


@slow
def test_disk_full_while_the_notebook_is_written(tmp_path):
    """The runs folder's disk fills up once every point is in the store, while the study writes its charts, report and notebook:
    one `error:` line naming the full disk, exit 3, a true tally (every point finished, none failed), no truncated notebook or
    temporary file, and the parent run not left RUNNING."""
    disk = tmp_path/'disk'; disk.mkdir()
    r = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=96m', 'tmpfs', str(disk)], capture_output=True, text=True)
    if r.returncode: pytest.skip(f'cannot mount a tmpfs here: {r.stderr.strip()}')
    db = tmp_path/'store'/'mlflow.db'
    env = env_with(WORKBENCH_RUNS=disk/'runs')
    args = [str(BIN/'workbench'), 'run', 'motif-3', '-p', "groups=[]", '-p', 'concurrencies=[1]', '-p', 'request_count=40',
            '-p', f'tracking_uri=sqlite:///{db}', '-q']
    try:                                 # the parent run ends FINISHED once every point is logged: the notebook's last cells follow
        rc, out, err = run_filling(args, env, disk, lambda: db.exists() and [p for p in store_points(db, 'study') if p['status'] != 'RUNNING'], 0.05)
        lines = [l for l in err.splitlines() if l.strip()]
        if rc == 0: pytest.skip('the study finished writing before the disk filled (timing); nothing to judge')
        assert rc == 3 and 'Traceback' not in err, f'exit {rc}:\n{err[-4000:]}'
        errors = [l for l in lines if l.startswith('error: ')]
        assert len(errors) == 1 and 'no space left' in errors[0].lower() and errors[0].count('Fix:') == 1, lines
        assert not [p for p in store_points(db) if p['status'] != 'FINISHED'], store_points(db)
        done = [p for p in store_points(db) if p.get('sla_max_point') != 'true']        # the plan's points (not the SLA maxima beside them)
        tally = [l for l in lines if ' point(s) finished, ' in l]
        assert tally and all(f': {len(done)} point(s) finished, 0 failed, stopped' in l for l in tally), (tally, len(done))
        feed = [json.loads(l) for f in (disk/'runs').glob('*/progress.jsonl') for l in f.read_text().splitlines() if '"done"' in l]
        assert not feed or (feed[-1]['ran'], feed[-1]['failed']) == (len(done), 0), feed[-1]      # the progress channel: the same count
        assert 'RUNNING' not in [p['status'] for p in store_points(db, 'study')], store_points(db, 'study')
        assert not list((disk/'runs').glob('*/reserve.jsonl')), 'a reserve was left'
        left = [p for p in (disk/'runs').rglob('.*') if re.fullmatch(r'\..+\.\d+(\.[0-9a-f]{8})?(\..*)?', p.name)]
        assert not left, f'temporary files left: {left}'
        for nb in (disk/'runs').glob('*/motif_3.ipynb'): json.loads(nb.read_text())     # no truncated notebook left
    finally:
        subprocess.run(['umount', '-l', str(disk)], capture_output=True)


# ---------------------------------------------------------------------------------------------------------
# The Kubernetes API server restarted under a running study

K8S_BIN = Path(os.environ.get('WORKBENCH_K8S_BIN', '/var/cache/workbench-k8s/bin'))

class FakeOperator(threading.Thread):
    "Plays the Dynamo operator and the Job controller on the test API server (no kubelet there): DGDs become ready, Jobs complete."
    def __init__(self, cl):
        super().__init__(daemon=True); self.cl, self.stop = cl, threading.Event()
    def run(self):
        from workbench.base.constants import DGD_GROUP, DGD_VERSION, DGD_PLURAL, MANAGED_BY
        from workbench.targets.k8s.deploy import _now
        sel = ','.join(f'{k}={v}' for k, v in MANAGED_BY.items()); cl = self.cl
        while not self.stop.is_set():
            try:
                for j in cl.batch.list_namespaced_job(cl.namespace, label_selector=sel, _request_timeout=5).items:
                    if not (j.status and j.status.conditions):
                        cl.batch.patch_namespaced_job_status(j.metadata.name, cl.namespace, {'status': {'conditions': [
                            {'type': 'Complete', 'status': 'True', 'lastProbeTime': _now(), 'lastTransitionTime': _now()}],
                            'succeeded': 1, 'startTime': _now(), 'completionTime': _now()}})
                for d in cl.custom.list_namespaced_custom_object(DGD_GROUP, DGD_VERSION, cl.namespace, DGD_PLURAL, label_selector=sel, _request_timeout=5)['items']:
                    g = d['metadata']['generation']
                    if (d.get('status') or {}).get('observedGeneration') != g:
                        cl.custom.patch_namespaced_custom_object_status(DGD_GROUP, DGD_VERSION, cl.namespace, DGD_PLURAL, d['metadata']['name'], {'status': {
                            'observedGeneration': g, 'state': 'successful', 'conditions': [{'type': 'Ready', 'status': 'True', 'reason': 'AllReady',
                                                                                         'message': 'ready', 'lastTransitionTime': _now()}]}})
            except Exception: pass          # the API server is down: try again
            time.sleep(0.3)

@pytest.fixture
def private_apiserver(tmp_path):
    "A kube-apiserver + etcd of this test only (it is restarted; the suite's shared server must not be)."
    if not (K8S_BIN/'kube-apiserver').exists() or not shutil.which('etcd'): pytest.skip('k8s harness binaries missing: run tools/k8s/build.sh')
    d = tmp_path/'k8s'
    r = subprocess.run([str(ROOT/'tools'/'k8s'/'start.sh'), str(d)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, 'WORKBENCH_K8S_WATCH_PID': str(os.getpid())})
    assert r.returncode == 0, r.stderr[-2000:]
    try: yield d
    finally: subprocess.run([str(ROOT/'tools'/'k8s'/'stop.sh'), str(d)], capture_output=True, timeout=120)

@slow
def test_apiserver_restart_under_k8s_study(private_apiserver, tmp_path, monkeypatch, capsys):
    """A restart of a few seconds is absorbed by the retries (every point finishes); an outage longer than `api_retry_s` fails the
    points in flight naming the API server and the deadline; each study's teardown leaves none of its objects (Jobs included)."""
    import uuid
    from kubernetes import client as k
    import workbench.targets.k8s.bench as kb
    from workbench.base.constants import EXPORT_BEGIN, EXPORT_END
    from workbench.targets.k8s.manifests import render_all
    from workbench.studies.study import run_study, plan_study
    from workbench.domain.loading import load_recipe
    from workbench.targets.k8s.target import K8sTarget
    from workbench.targets.k8s.cluster import connect, referenced_secrets, K8S_RETRIES
    from workbench.targets.k8s.deploy import managed_objects
    from workbench.domain.variants import recipe_variant
    monkeypatch.setenv('WORKBENCH_RUNS', str(tmp_path/'runs'))
    kc = str(private_apiserver/'kubeconfig'); ns = f'wb-faults-{uuid.uuid4().hex[:6]}'
    admin = connect(kc, namespace='default'); admin.core.create_namespace(k.V1Namespace(metadata=k.V1ObjectMeta(name=ns)))
    cl = connect(kc, namespace=ns)
    for s in referenced_secrets(render_all(recipe_variant(load_recipe('motif-3')), 'x')):
        cl.core.create_namespaced_secret(ns, k.V1Secret(metadata=k.V1ObjectMeta(name=s), string_data={'HF_TOKEN': 'test-token'}))
    export = {'aiperf_version': '0.13.0', 'request_count': {'unit': 'requests', 'avg': 10},     # test input, not a measurement
              'output_token_throughput': {'unit': 'tokens/sec', 'avg': 100.0}, 'time_to_first_token': {'unit': 'ms', 'avg': 50.0, 'p50': 50.0}}
    monkeypatch.setattr(kb, 'job_log', lambda cl, name: f'{EXPORT_BEGIN}\n{json.dumps(export)}\n{EXPORT_END}\n')
    op = FakeOperator(cl); op.start()
    restart = lambda down: subprocess.run([str(ROOT/'tools'/'k8s'/'restart-apiserver.sh'), str(private_apiserver), str(down)],
                                          capture_output=True, text=True, timeout=600)
    db = tmp_path/'mlflow.db'
    def when_deployed(down, study=None):
        "Restart the API server (staying down `down` s) once a DGD exists (and, with `study`, once one of its points finished)."
        def go():
            while not op.stop.is_set():
                try:
                    done = not study or any(p['status'] == 'FINISHED' and p.get('study') == study for p in store_points(db))
                    if done and cl.custom.list_namespaced_custom_object('nvidia.com', 'v1beta1', ns, 'dynamographdeployments', _request_timeout=5)['items']: break
                except Exception: pass
                time.sleep(0.2)
            outages.append(restart(down).stdout.strip())
        t = threading.Thread(target=go, daemon=True); t.start(); return t
    outages = []
    uri = f'sqlite:///{db}'
    opts = dict(kubeconfig=kc, namespace=ns, smoke=False, poll_s=0.3, progress=False, ready_timeout_s=600, bench_timeout_s=600, download_timeout_s=600)
    n = sum(1 for p in plan_study(load_recipe('motif-3'), groups=['kernels']) if p.variant)
    try:
        # 1. a short restart: retried, nothing fails
        before = K8S_RETRIES['transient']; t = when_deployed(2)
        o = run_study('motif-3', target=K8sTarget(**opts, api_retry_s=180), groups=['kernels'], concurrencies=[1], tracking_uri=uri, study='k8s-short', progress=False)
        t.join(600)
        assert (o.ran, o.failed) == (n, []), o.failed
        assert K8S_RETRIES['transient'] > before, 'the restart was never seen'
        left = lambda: [x for x in managed_objects(cl) if x[1] != 'PersistentVolumeClaim']      # the model cache stays, by design
        assert left() == [], left()
        # 2. an outage longer than api_retry_s: the points in flight fail with the cause; teardown still removes every object
        t = when_deployed(40, study='k8s-long')
        o = run_study('motif-3', target=K8sTarget(**opts, api_retry_s=5), groups=['kernels'], concurrencies=[1], tracking_uri=uri, study='k8s-long', progress=False)
        t.join(600)
        assert o.failed and o.ran >= 1, (o.ran, o.failed)
        assert all('did not answer' in c and 'api_retry_s=5' in c for _, _, c in o.failed), o.failed
        assert left() == [], left()
        print(f'API server outages: {outages}; long outage failed {len(o.failed)} point(s): {o.failed[0][2][:200]}')
        o2 = run_study('motif-3', target=K8sTarget(**opts, api_retry_s=180), groups=['kernels'], concurrencies=[1], tracking_uri=uri, study='k8s-long',
                       progress=False, rerun_failed=True)
        assert (o2.ran, o2.reused, o2.failed) == (len(o.failed), o.ran, []), (o2.ran, o2.reused, o2.failed)
        assert left() == [], left()
    finally:
        op.stop.set()
