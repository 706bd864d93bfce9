"""Commands say what they do (issue 33): each check runs the real command, or the real tool it hands work to, and reads what a
user would read.

- papermill reads every parameter of every study notebook (a line it cannot parse is skipped with a warning on every run);
- Ctrl-C during `workbench run` ends with one line, no traceback, nothing left running and no MLflow run left RUNNING;
- `make lab` prints (and redirects to) a URL that opens the study notebook, not the Launcher;
- `workbench list` and `workbench import` print within 120 columns, with whole headers and pins that say what they hold.
"""
import logging, os, re, secrets, signal, subprocess, sys, time, urllib.error, urllib.request
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _env(tmp:Path) -> dict:
    "The environment of a command run in its own runs folder (no store or home of the user's)."
    env = {k: v for k, v in os.environ.items() if not k.startswith(('MLFLOW_', 'WORKBENCH_'))}
    (tmp/'home').mkdir(exist_ok=True)
    return {**env, 'PYTHONUNBUFFERED': '1', 'WORKBENCH_RUNS': str(tmp/'runs'), 'HOME': str(tmp/'home')}

def _ours(marker:str) -> list[int]:
    "Live processes whose environment holds `marker` (the test's own WORKBENCH_RUNS): what a command left, in any session."
    out = []
    for d in filter(str.isdigit, os.listdir('/proc')):
        try:
            if marker.encode() in Path(f'/proc/{d}/environ').read_bytes() and Path(f'/proc/{d}/stat').read_text().rsplit(')', 1)[1].split()[0] != 'Z':
                out.append(int(d))
        except OSError: continue
    return [p for p in out if p != os.getpid()]


@pytest.mark.parametrize('nb', sorted((ROOT/'nbs'/'studies').glob('*.ipynb')), ids=lambda p: p.stem)
def test_papermill_reads_every_parameter(nb, caplog):
    "papermill's own inference (what `papermill --help-notebook` shows) returns every declared parameter, and warns about none."
    import papermill
    from workbench.studies.runner import notebook_parameters
    with caplog.at_level(logging.DEBUG, logger='papermill'):
        found = papermill.inspect_notebook(str(nb))
    declared = notebook_parameters(nb.stem.replace('_', '-'))
    assert list(found) == list(declared), sorted(set(declared) ^ set(found))
    assert {k: (v['inferred_type_name'], v['default']) for k, v in found.items()} == {k: (t, d) for k, (t, d, _) in declared.items()}
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


def test_ctrl_c_during_a_run(tmp_path):
    """Ctrl-C (SIGINT to the command's process group, as a terminal sends it) once the first point has printed: exit 130, one line
    on stderr (no traceback, no kernel or ZMQ messages), no process of the run left anywhere (the kernel runs in its own session),
    the study's lock free, and no MLflow run left RUNNING (the interrupted points are KILLED and run again next time)."""
    env = _env(tmp_path)
    p = subprocess.Popen([str(BIN/'workbench'), 'run', 'motif-3', '-p', "groups=['cache']", '-p', 'request_count=100'], env=env, cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen, t0 = [], time.monotonic()
    try:
        while time.monotonic() - t0 < 300:
            line = p.stdout.readline()
            if not line: break
            seen.append(line)
            if re.match(r'\[\s*1/\d+\] ', line): break
        assert any(re.match(r'\[\s*1/\d+\] ', l) for l in seen), ''.join(seen) + p.stderr.read()
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None: os.killpg(p.pid, signal.SIGKILL); p.communicate()
    lines = [l for l in err.splitlines() if l.strip()]
    assert p.returncode == 130, (p.returncode, err[-3000:])
    assert lines == ['error: interrupted (Ctrl-C). Fix: run the same command again: finished points are kept'], err[-3000:]
    assert 'Traceback' not in out + err and 'ZMQ' not in out + err and 'Kernel died' not in out + err, (out + err)[-3000:]
    deadline = time.monotonic() + 15                       # the kernel's shutdown is over when the command has exited; allow a moment
    while (left := _ours(str(tmp_path/'runs'))) and time.monotonic() < deadline: time.sleep(0.5)
    assert not left, [Path(f'/proc/{x}/cmdline').read_bytes().replace(b'\0', b' ')[:200] for x in left]
    from mlflow.tracking import MlflowClient
    c = MlflowClient(f"sqlite:///{tmp_path/'runs'/'mlflow.db'}")
    runs = c.search_runs([e.experiment_id for e in c.search_experiments()], max_results=1000)
    assert runs and not [r.info.run_name for r in runs if r.info.status == 'RUNNING'], [(r.info.run_name, r.info.status) for r in runs]
    assert any(r.info.status == 'KILLED' for r in runs), [(r.info.run_name, r.info.status) for r in runs]   # the cell in flight was interrupted
    from workbench.tracking.lock import lock_holder, lock_path
    from workbench.base.core import env_set
    with env_set(WORKBENCH_RUNS=str(tmp_path/'runs')):
        locks = list((tmp_path/'runs'/'locks').glob('*.lock'))
        assert locks and all(lock_holder(f) is None for f in locks), f'a study lock is still held: {locks}'


def test_make_lab_opens_the_study_notebook(tmp_path):
    """`make lab` prints a URL (token included) that opens the Motif 3 study notebook, and the bare address redirects there too:
    JupyterLab 4's own default_url (LabApp's `/lab`, the Launcher) would otherwise win over ServerApp.default_url."""
    from workbench.base.core import free_port
    port = free_port()
    env = {**os.environ, 'JUPYTER_RUNTIME_DIR': str(tmp_path/'runtime'), 'JUPYTER_CONFIG_DIR': str(tmp_path/'config')}
    log = open(tmp_path/'lab.log', 'w+')
    proc = subprocess.Popen(['make', '-s', 'lab', f'LAB_PORT={port}', 'LAB_ARGS=--ServerApp.port_retries=0'], cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True, env=env)
    want = re.compile(rf'http://127\.0\.0\.1:{port}/lab/tree/studies/motif_3\.ipynb\?token=([0-9a-f]+)')
    try:
        t0, m = time.monotonic(), None
        while m is None and time.monotonic() - t0 < 180 and proc.poll() is None:
            time.sleep(0.5); m = want.search((tmp_path/'lab.log').read_text())
        text = (tmp_path/'lab.log').read_text()
        assert m, f'no study-notebook URL among those JupyterLab printed:\n{text[-3000:]}'
        assert not re.search(rf'http://127\.0\.0\.1:{port}/lab\?token=', text), text[-3000:]    # the Launcher's URL is not offered
        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **kw): return None
        try: urllib.request.build_opener(NoRedirect).open(f'http://127.0.0.1:{port}/?token={m.group(1)}', timeout=30); where = None
        except urllib.error.HTTPError as e: where = (e.code, e.headers.get('Location'))
        assert where and where[0] == 302 and where[1].split('?')[0].endswith('/lab/tree/studies/motif_3.ipynb'), where
        page = urllib.request.urlopen(m.group(0), timeout=30).read().decode()
        assert '"treePath": "studies/motif_3.ipynb"' in page, page[:2000]           # the page JupyterLab serves opens that notebook
    finally:
        try: os.killpg(proc.pid, signal.SIGTERM); proc.wait(15)
        except (ProcessLookupError, subprocess.TimeoutExpired): os.killpg(proc.pid, signal.SIGKILL); proc.wait(5)
        log.close()


def test_list_and_import_fit_the_terminal(tmp_path):
    "`workbench list` and `workbench import` fit 120 columns; pins say what they hold; the import table keeps its headers whole."
    env = _env(tmp_path)
    out = subprocess.run([str(BIN/'workbench'), 'list'], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and max(map(len, out.stdout.splitlines())) <= 120, [l for l in out.stdout.splitlines() if len(l) > 120]
    assert '=None' not in out.stdout and 'runtime.image must stay as in the recipe' in out.stdout, out.stdout
    imp = subprocess.run([str(BIN/'workbench'), 'import', 'motif-3', str(ROOT/'tests'/'fixtures'/'ledger'/'motif-3'/'recipe'), '--variant', 'recipe'],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    lines = imp.stdout.splitlines()
    assert imp.returncode == 0 and max(map(len, lines)) <= 120, imp.stdout + imp.stderr[-2000:]
    header = ['variant', 'c', 'target', 'engine', 'provenance', 'tok/s/GPU', 'TTFT', 'ms', 'ITL', 'ms', 'status', 'run_id']
    assert lines[0].split() == header, lines[0]
    assert all(re.search(r'\b[0-9a-f]{32}$', l) for l in lines[1:5]), lines[:6]     # one line per point: nothing wrapped
