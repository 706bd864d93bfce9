"""Inputs that used to be taken silently or read two ways: a 0-byte MLflow store, a concurrency no point can reach, a recipes folder
this user may not read. Each is run as the real `workbench` command (or, where said, the library call) in its own process: one line
on stderr starting `error:` that names the input and the fix, exit status 1, and nothing created (the store file is left as it was).

The unreadable folder needs another user than root (root reads everything): it runs as `nobody` through setpriv, and is skipped, with
the reason, where that is not possible.
"""
import os, shutil, signal, stat, subprocess, sys, tempfile
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TIMEOUT = 240           # seconds before a command counts as hung (the machine is shared and loaded)


def env_with(**kw) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(('MLFLOW_', 'WORKBENCH_'))}
    return {**env, 'PYTHONUNBUFFERED': '1', **{k: str(v) for k, v in kw.items()}}

def snapshot(root:Path) -> dict:
    "Every path under `root` with its type, size and mtime."
    out = {}
    for p in [root, *root.rglob('*')]:
        st = p.lstat()
        out[str(p)] = (stat.S_IFMT(st.st_mode), 0 if stat.S_ISDIR(st.st_mode) else st.st_size, st.st_mtime_ns)
    return out

def run(cmd:list, env:dict, *, nobody:bool=False) -> tuple[int, str, str]:
    "Run `cmd` in its own session (as nobody when asked); (status, stdout, stderr); a hang fails the test."
    if nobody: cmd = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--', *cmd]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd='/', start_new_session=True)
    try: out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL); p.communicate(); raise AssertionError(f'{cmd} hung: no answer within {TIMEOUT} s')
    return p.returncode, out, err

def one_error(rc:int, err:str) -> str:
    "The single `error:` line of a refused command (exit 1, no traceback)."
    lines = [l for l in err.splitlines() if l.strip()]
    assert rc == 1 and 'Traceback' not in err, f'exit {rc}:\n{err[-3000:]}'
    assert len(lines) == 1 and lines[0].startswith('error: ') and lines[0].count('Fix:') == 1, lines
    return lines[0]


def test_empty_store_file_is_one_line_everywhere(tmp_path):
    """A 0-byte `mlflow.db` (a touched or truncated file) is not a store: `run` (which may create a store) and `compare`, `ledger`, `ui`
    (which may not) all say the same line, with the fix; none of them turns it into a store or creates anything beside it."""
    runs = tmp_path/'runs'; runs.mkdir(); (runs/'mlflow.db').touch()
    env, before, said = env_with(WORKBENCH_RUNS=runs), snapshot(runs), set()
    for args in (['run', 'motif-3', '-p', 'groups=[]', '-p', 'concurrencies=[1]'], ['compare', 'motif-3'], ['ledger', 'motif-3'],
                 ['ui', '--port', '40123']):
        line = one_error(*run([str(BIN/'workbench'), *args], env)[::2])
        assert f'{runs/"mlflow.db"} is an empty file (0 bytes), not an MLflow store. Fix: delete it' in line, (args, line)
        said.add(line); assert snapshot(runs) == before, (args, 'created or changed something')
    assert len(said) == 1, said                      # the same line, whatever the command


def test_concurrency_no_point_reaches_is_refused(tmp_path):
    "`concurrencies=[100000]` with 20 requests a point: refused before anything runs, saying why and the fix (not run as c20 in silence)."
    runs = tmp_path/'runs'
    rc, out, err = run([str(BIN/'workbench'), 'run', 'motif-3', '-p', 'concurrencies=[100000]', '-p', 'request_count=20'], env_with(WORKBENCH_RUNS=runs))
    line = one_error(rc, err)
    assert 'concurrency 100,000 in [100000] is more than the 20 requests a point sends' in line, line
    assert 'Fix: give concurrencies of at most 20' in line and 'raise request_count to at least 100,000' in line, line
    assert not runs.exists(), list(runs.rglob('*'))


@pytest.fixture
def unreadable_recipes():
    "A workbench home whose recipes/ folder only root may read (mode 000), and a runs folder nobody may write; skipped unless root with setpriv."
    if os.geteuid() != 0 or not shutil.which('setpriv'): pytest.skip('needs root and setpriv (to run as nobody: root reads every folder)')
    d = Path(tempfile.mkdtemp(prefix='wb-recipes-', dir='/tmp')); d.chmod(0o755)
    shutil.copytree(ROOT/'recipes', d/'recipes'); (d/'nbs').symlink_to(ROOT/'nbs'); (d/'runs').mkdir(); (d/'runs').chmod(0o777)
    (d/'recipes').chmod(0o000)
    try: yield d
    finally: (d/'recipes').chmod(0o755); shutil.rmtree(d, ignore_errors=True)

def test_unreadable_recipes_folder_is_named_by_the_library(unreadable_recipes):
    "`run_study` (and `load_recipe`) name the folder that cannot be read and the fix, instead of 'unknown model ... use one of []'."
    d = unreadable_recipes
    code = ('from workbench.studies.study import run_study\n'
            'try: run_study("motif-3", progress=False)\n'
            'except Exception as e: print(type(e).__name__, e)')
    rc, out, err = run([sys.executable, '-c', code], env_with(WORKBENCH_HOME=d, WORKBENCH_RUNS=d/'runs'), nobody=True)
    assert rc == 0 and out.startswith('WorkbenchError '), (rc, out, err[-2000:])
    assert f'the recipes folder {d/"recipes"} cannot be read (Permission denied). Fix: give your user read and search permission' in out, out
    assert 'unknown model' not in out and not list((d/'runs').iterdir()), out

def test_unreadable_recipes_folder_is_one_line_from_the_cli(unreadable_recipes):
    "`workbench run motif-3` with an unreadable recipes/ folder: one line naming the folder (permission) and the fix."
    d = unreadable_recipes
    rc, out, err = run([str(BIN/'workbench'), 'run', 'motif-3'], env_with(WORKBENCH_HOME=d, WORKBENCH_RUNS=d/'runs'), nobody=True)
    line = one_error(rc, err)
    assert f'the recipes folder {d/"recipes"} cannot be read (Permission denied)' in line and 'chmod u+rx' in line, line
    assert not list((d/'runs').iterdir())
