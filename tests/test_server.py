"""The team's tracking server (`workbench server`): a real PostgreSQL and MLflow server (basic auth, served artifacts) on 127.0.0.1.

Eight studies, each a separate `workbench run` process started from its own working folder (its own cwd and WORKBENCH_RUNS),
half as the admin and half as a teammate's account, log to one server at the same time (no 5xx answer in its log): every parent run, child run and metric must land in PostgreSQL and every artifact in the
server's folder. A client with a wrong password gets one clear line and creates nothing. A second start is refused; a killed
server starts again with its data; a PostgreSQL restarted under a running study loses no point. No password and a wrong one are
refused for reads and writes; a teammate's account reads; on a server started with default permission READ a teammate reads
and cannot write while one granted EDIT writes; the admin password is in no log and no artifact. Each test stops what it started, also when
it fails: nothing is left running.
Needs Debian's postgresql (tools/install_postgresql.sh; .ci/run installs it).
"""
import base64, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.error, urllib.request
from pathlib import Path
import pytest
from workbench.tracking import server, runs as tracking
from workbench.tracking.query import study_runs
from workbench.domain.loading import load_recipe
from workbench.studies.study import plan_study
from mlflow.server import get_app_client

BIN = Path(sys.executable).parent
MODEL, GROUPS, CONCS, REQUESTS = 'motif-3', ['cache'], [1, 4], 40


@pytest.fixture
def folder():
    "A scratch folder PostgreSQL's account can enter (pytest's tmp_path is private to its user); its server is stopped at the end."
    d = Path(tempfile.mkdtemp(prefix='wb-server-test-')); d.chmod(0o755)
    try: yield d
    finally:
        server.stop(d/'server')
        shutil.rmtree(d, ignore_errors=True)


def env_for(work:Path, **kw) -> dict:
    "Environment of a process working in `work`: its own runs folder, no store inherited from the caller."
    env = {k: v for k, v in os.environ.items() if not k.startswith('MLFLOW_')}
    return {**env, 'WORKBENCH_RUNS': str(work/'runs'), 'PYTHONUNBUFFERED': '1', **kw}


def wb(*args, env=None, cwd=None, timeout=300) -> subprocess.CompletedProcess:
    "Run the `workbench` command."
    return subprocess.run([str(BIN/'workbench'), *map(str, args)], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def study_args(name:str, url:str) -> list[str]:
    return ['run', MODEL, '-q', '-p', f'groups={GROUPS}', '-p', f'concurrencies={CONCS}', '-p', f'request_count={REQUESTS}',
            '-p', f'tracking_uri={url}', '-p', f'study={name}']


def gone(pid:int) -> bool:
    "True when `pid` no longer runs (a zombie counts as gone)."
    return server._cmdline(pid) == []


def refused(port:int) -> bool:
    with socket.socket() as s: return s.connect_ex(('127.0.0.1', port)) == 111


def run_all(procs:dict, timeout:float) -> dict:
    "Wait for every process (own session each); on a timeout or failure here, kill every group."
    out = {}
    try:
        for name, p in procs.items(): out[name] = (p.communicate(timeout=timeout), p.returncode)
    finally:
        for p in procs.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL); p.wait()
    return out


def test_eight_studies_and_a_wrong_password(folder):
    t0 = time.monotonic()
    r = wb('server', 'start', '--dir', folder/'server', '--port', 0, env=env_for(folder), timeout=300)   # 0: any free port
    assert r.returncode == 0, r.stderr[-3000:]
    st = server.status(folder/'server'); url = st['url']
    assert r.stdout.startswith(f'running: MLflow tracking server {url} '), r.stdout
    pw = (folder/'server'/'secrets'/'admin_password').read_text().strip()
    assert pw not in r.stdout + r.stderr, 'the admin password was printed'
    t_start = time.monotonic()-t0
    creds = {'MLFLOW_TRACKING_USERNAME': 'admin', 'MLFLOW_TRACKING_PASSWORD': pw}
    alice = {'MLFLOW_TRACKING_USERNAME': 'alice', 'MLFLOW_TRACKING_PASSWORD': 'alice-has-12-chars'}
    os.environ.update(creds)        # the admin gives a teammate an account, with MLflow's auth client
    try: get_app_client('basic-auth', tracking_uri=url).create_user(alice['MLFLOW_TRACKING_USERNAME'], alice['MLFLOW_TRACKING_PASSWORD'])
    finally:
        for k in creds: os.environ.pop(k, None)

    # eight studies at once, each from its own working folder; half log as the admin, half as the teammate
    works = {f'team-{i}': folder/f'work{i}' for i in range(8)}
    for w in works.values(): w.mkdir()
    procs = {name: subprocess.Popen([str(BIN/'workbench'), *study_args(name, url)], cwd=w, env=env_for(w, **(alice if i % 2 else creds)), text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True) for i, (name, w) in enumerate(works.items())}
    t1 = time.monotonic()
    done = run_all(procs, timeout=1200)
    t_studies = time.monotonic()-t1
    for name, ((out, err), rc) in done.items(): assert rc == 0, f'{name} exited {rc}: {err[-3000:]}'

    # every run landed: one parent per study, one FINISHED child per variant x concurrency, with metrics and artifacts
    plan = plan_study(load_recipe(MODEL), None, GROUPS)
    n_points = sum(1 for p in plan if p.variant)*len(CONCS)
    os.environ.update(creds)
    try:
        c = tracking.client(url)
        eid = tracking.experiment_id(MODEL, url, create=False)
        parents = c.search_runs([eid], "tags.`workbench.kind` = 'study'", max_results=1000)
        assert sorted(p.data.tags['workbench.study'] for p in parents) == sorted(works), [p.info.run_name for p in parents]
        assert {p.info.status for p in parents} == {'FINISHED'}
        for p in parents: assert [a.path for a in c.list_artifacts(p.info.run_id, 'notebook')] == [f'notebook/{MODEL.replace("-", "_")}.ipynb']
        kids = study_runs(MODEL, tracking_uri=url, status=None)
        planned = kids[kids.concurrency.astype(int).isin(CONCS)]          # beside them, each variant's SLA-max point (same in every study)
        assert planned.groupby('study').size().to_dict() == {name: n_points for name in works}, planned.groupby('study').size()
        assert kids.groupby('study').size().nunique() == 1, kids.groupby('study').size()
        assert set(kids.status) == {'FINISHED'}
        modelled = planned[planned['tags.workbench.modelled'].fillna('true') != 'false'] if 'tags.workbench.modelled' in planned else planned
        assert len(modelled) and modelled['metrics.request_count'].between(0.9*REQUESTS, REQUESTS).all(), modelled['metrics.request_count']  # over-context requests dropped
        for m in ('metrics.output_token_throughput_per_gpu', 'metrics.sla.user_tok_s', 'metrics.sla.passed', 'metrics.time_to_first_token.p50'):
            assert modelled[m].notna().all(), m     # a setting the sim does not model has no number
        assert set(kids.run_id) == {r.info.run_id for r in c.search_runs([eid], "tags.`workbench.kind` = 'point'", max_results=5000)}
        for _, _r0 in modelled.iterrows():     # every request is accounted for: completed, failed, or dropped as longer than the context
            res = tracking.point_result(_r0.run_id, tracking_uri=url)
            assert res.request_count == _r0['metrics.request_count'], _r0.run_id    # the stored result is the logged one
            assert res.request_count + res.error_count + res.extra.get('over_context_dropped', 0) == REQUESTS, (res.request_count, res.error_count, res.extra.get('over_context_dropped'))
        assert c.get_experiment(eid).artifact_location.startswith('mlflow-artifacts:'), c.get_experiment(eid).artifact_location
    finally:
        for k in creds: os.environ.pop(k, None)
    # the store is PostgreSQL, the artifacts are in the server's folder, not in the working folders
    import psycopg
    with psycopg.connect(host='127.0.0.1', port=st['postgres_port'], user=server.DB_USER, dbname='mlflow',
                         passfile=str(folder/'server'/'secrets'/'pgpass'), connect_timeout=10) as con:
        assert con.execute("select count(*) from runs where status = 'FINISHED'").fetchone()[0] == len(works) + len(kids)
    assert len(list((folder/'server'/'artifacts').rglob('bench_result.json'))) == len(kids)
    for w in works.values(): assert not (w/'runs'/'mlflow.db').exists() and not (w/'runs'/'mlartifacts').exists()
    log = (folder/'server'/'mlflow.log').read_text(errors='replace')
    assert not re.search(r'" 5\d\d |HTTP/1\.[01]" 5\d\d|status(_code)?[=:] ?5\d\d', log), [l for l in log.splitlines() if ' 50' in l][:5]   # no 5xx under load

    # a wrong password: one clear line, exit 1, nothing created (no run folder, no run on the server)
    bad = folder/'bad'; bad.mkdir()
    r = wb(*study_args('team-bad', url), cwd=bad, env=env_for(bad, MLFLOW_TRACKING_USERNAME='admin', MLFLOW_TRACKING_PASSWORD='not-the-password'))
    assert r.returncode == 1 and 'Traceback' not in r.stderr, r.stderr[-3000:]
    line = r.stderr.strip()
    assert '\n' not in line, line
    assert line.startswith(f"error: connect to the MLflow tracking server {url}: user 'admin' was refused: wrong username or password (HTTP 401). Fix: "), line
    assert not (bad/'runs'/'team-bad').exists()
    os.environ.update(creds)
    try: assert len(tracking.client(url).search_runs([eid], "tags.`workbench.study` = 'team-bad'")) == 0
    finally:
        for k in creds: os.environ.pop(k, None)

    # a second start over the same folder is refused and names the running server
    r = wb('server', 'start', '--dir', folder/'server', '--port', 0, env=env_for(folder))
    assert r.returncode == 1 and r.stderr.strip().startswith(f'error: start the tracking server: a server is already running over {folder/"server"} at {url}'), r.stderr
    assert wb('server', 'status', '--dir', folder/'server', env=env_for(folder)).stdout.startswith(f'running: MLflow tracking server {url}')

    r = wb('server', 'stop', '--dir', folder/'server', env=env_for(folder))
    assert r.returncode == 0 and r.stdout.startswith('stopped mlflow server'), r.stdout + r.stderr
    assert gone(st['mlflow_pid']) and gone(st['postgres_pid']) and refused(st['port']) and refused(st['postgres_port'])
    print(f'\nserver start {t_start:.0f} s; eight concurrent studies {t_studies:.0f} s ({n_points} points + 1 parent each); whole test {time.monotonic()-t0:.0f} s')


def call(url:str, path:str, user:str|None=None, password:str|None=None, body:dict|None=None) -> int:
    "The HTTP status of one MLflow REST call (GET, or POST with `body`), with basic-auth credentials when given."
    req = urllib.request.Request(f'{url}/api/2.0/mlflow/{path}', data=None if body is None else json.dumps(body).encode(),
                                 headers={'Content-Type': 'application/json'}, method='GET' if body is None else 'POST')
    if user is not None: req.add_header('Authorization', 'Basic ' + base64.b64encode(f'{user}:{password}'.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=10) as r: return r.status
    except urllib.error.HTTPError as e: return e.code


def test_credentials_and_permissions(folder):
    "No password and a wrong one are refused for reads and writes; a teammate's account reads; on a server whose default is READ a teammate reads and cannot write, a granted one writes; the admin password is logged nowhere."
    r = wb('server', 'start', '--dir', folder/'server', '--port', 0, env=env_for(folder), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    url, pw = server.status(folder/'server')['url'], (folder/'server'/'secrets'/'admin_password').read_text().strip()
    read, write = 'experiments/search?max_results=5', 'experiments/create'
    assert call(url, read, 'admin', pw) == 200
    eid = json.loads(urllib.request.urlopen(urllib.request.Request(f'{url}/api/2.0/mlflow/experiments/create', data=json.dumps({'name': 'perm'}).encode(),
        headers={'Content-Type': 'application/json', 'Authorization': 'Basic ' + base64.b64encode(f'admin:{pw}'.encode()).decode()}), timeout=10).read())['experiment_id']
    for user, password in ((None, None), ('admin', 'not-the-password'), ('nobody', 'no-such-user-here')):
        assert call(url, read, user, password) == 401 and call(url, write, user, password, {'name': f'x-{user}'}) == 401, user
    os.environ.update({'MLFLOW_TRACKING_USERNAME': 'admin', 'MLFLOW_TRACKING_PASSWORD': pw})
    try:
        auth = get_app_client('basic-auth', tracking_uri=url)
        auth.create_user('reader', 'reader-has-12-chars')
    finally:
        for k in ('MLFLOW_TRACKING_USERNAME', 'MLFLOW_TRACKING_PASSWORD'): os.environ.pop(k, None)
    assert call(url, f'experiments/get?experiment_id={eid}', 'reader', 'reader-has-12-chars') == 200     # a teammate's account reads
    assert call(url, 'runs/create', 'admin', pw, {'experiment_id': eid}) == 200
    leaks = [p for p in (folder/'server').rglob('*') if p.is_file() and 'secrets' not in p.parts and pw.encode() in p.read_bytes()]
    assert not leaks and pw not in r.stdout + r.stderr, leaks                      # no log, no artifact, no output holds it
    assert wb('server', 'stop', '--dir', folder/'server', env=env_for(folder)).returncode == 0

    # a read-only teammate: MLflow floors every positive grant at the server's default, so the server starts with READ and
    # the writers get EDIT grants; the reader reads and is refused writes, a granted writer writes
    r = wb('server', 'start', '--dir', folder/'server', '--port', 0, '--default-permission', 'READ', env=env_for(folder), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    url = server.status(folder/'server')['url']
    os.environ.update({'MLFLOW_TRACKING_USERNAME': 'admin', 'MLFLOW_TRACKING_PASSWORD': pw})
    try:
        auth = get_app_client('basic-auth', tracking_uri=url)
        auth.create_user('writer', 'writer-has-12-chars')
        auth.grant_user_permission('writer', 'experiment', eid, 'EDIT')
    finally:
        for k in ('MLFLOW_TRACKING_USERNAME', 'MLFLOW_TRACKING_PASSWORD'): os.environ.pop(k, None)
    assert call(url, f'experiments/get?experiment_id={eid}', 'reader', 'reader-has-12-chars') == 200
    assert call(url, 'runs/create', 'reader', 'reader-has-12-chars', {'experiment_id': eid}) == 403     # read, never write
    assert call(url, 'runs/create', 'writer', 'writer-has-12-chars', {'experiment_id': eid}) == 200     # the grant lets the writer log
    assert wb('server', 'stop', '--dir', folder/'server', env=env_for(folder)).returncode == 0


def test_killed_server_starts_again(folder):
    d = folder/'server'
    # two starts over one folder at the same moment: one starts the server, the other waits for it and is refused
    procs = {i: subprocess.Popen([str(BIN/'workbench'), 'server', 'start', '--dir', str(d), '--port', '0'], env=env_for(folder),
                                 text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True) for i in range(2)}
    done = run_all(procs, timeout=300)
    assert sorted(rc for _, rc in done.values()) == [0, 1], done
    st = server.status(d)             # the `workbench server start` process has exited: the servers run on
    assert st['state'] == 'running', st
    (_, err), _ = next(v for v in done.values() if v[1] == 1)
    assert err.strip().startswith(f'error: start the tracking server: a server is already running over {d} at {st["url"]}'), err
    env = server.client_env(d); url = env['MLFLOW_TRACKING_URI']
    os.environ.update(env)
    try:
        with tracking.study_run(MODEL, 'before-the-kill', params={'a': 1}, tracking_uri=url) as s: pass
    finally:
        for k in env: os.environ.pop(k, None)
    os.killpg(st['mlflow_pid'], signal.SIGKILL); os.kill(st['postgres_pid'], signal.SIGKILL)
    deadline = time.monotonic()+30
    while not (gone(st['mlflow_pid']) and gone(st['postgres_pid'])) and time.monotonic() < deadline: time.sleep(0.2)
    assert (d/'pg'/'postmaster.pid').exists()    # the stale lock a killed PostgreSQL leaves
    assert server.status(d)['state'] == 'stopped'

    r = wb('server', 'start', '--dir', d, '--port', 0, env=env_for(folder), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    st2 = server.status(d)
    assert st2['state'] == 'running' and st2['postgres_pid'] != st['postgres_pid']
    os.environ.update(env)
    try: assert tracking.find_study(MODEL, 'before-the-kill', tracking_uri=st2['url']).info.run_id == s.run_id   # the data survived
    finally:
        for k in env: os.environ.pop(k, None)
    assert server.stop(d) == [f'mlflow server (pid {st2["mlflow_pid"]})', f'PostgreSQL (pid {st2["postgres_pid"]})']
    assert gone(st2['mlflow_pid']) and gone(st2['postgres_pid']) and refused(st2['port']) and refused(st2['postgres_port'])
    assert server.status(d)['state'] == 'stopped' and server.stop(d) == []


def test_postgres_restart_mid_study(folder):
    "PostgreSQL restarted under a running study: the MLflow server reconnects, its client retries, and no point is lost or doubled."
    d = folder/'server'
    r = wb('server', 'start', '--dir', d, '--port', 0, env=env_for(folder), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    st, creds = server.status(d), server.client_env(d)
    url, work = creds['MLFLOW_TRACKING_URI'], folder/'work'
    work.mkdir()
    proc = subprocess.Popen([str(BIN/'workbench'), *study_args('restarted', url)], cwd=work, env=env_for(work, **creds), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    os.environ.update(creds)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:       # the study has logged its first point: restart under it
            if tracking.experiment_id(MODEL, url, create=False) and len(study_runs(MODEL, 'restarted', tracking_uri=url, status=None)): break
            time.sleep(0.5)
        assert proc.poll() is None, 'the study ended before PostgreSQL could be restarted'
        L = server.Layout(d)
        rs = server._as_pg([server.pg_bindir()/'pg_ctl', '-D', L.pgdata, '-l', L.pglog, '-m', 'fast', '-w', '-t', '60', 'restart'], server.pg_user(), timeout=90)
        assert rs.returncode == 0, rs.stderr
        assert server.status(d)['postgres_pid'] not in (None, st['postgres_pid'])
        (out, err), rc = run_all({'restarted': proc}, timeout=900)['restarted']
        assert rc == 0, err[-3000:]
        kids = study_runs(MODEL, 'restarted', tracking_uri=url, status=None)
        plan = plan_study(load_recipe(MODEL), None, GROUPS)
        planned = kids[kids.concurrency.astype(int).isin(CONCS)]
        assert len(planned) == sum(1 for p in plan if p.variant)*len(CONCS) and planned.run_id.is_unique, planned[['label', 'concurrency']]
        assert set(kids.status) == {'FINISHED'} and tracking.find_study(MODEL, 'restarted', tracking_uri=url).info.status == 'FINISHED'
    finally:
        for k in creds: os.environ.pop(k, None)
        if proc.poll() is None: os.killpg(proc.pid, signal.SIGKILL); proc.wait()
    print(f'\nPostgreSQL restarted under the study (pid {st["postgres_pid"]} -> {server.status(d)["postgres_pid"]}); {len(kids)} points, none lost')
