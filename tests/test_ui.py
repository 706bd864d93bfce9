"""What a user sees, checked in headless Chromium (screenshots under runs/screenshots/):

- `workbench demo` prints one line per point as it finishes;
- the study's MLflow runs table (the view the study saved) shows the core metric columns, and run names that are not cut;
- a point's run page shows its metrics and its dataset;
- the executed study notebook opens in JupyterLab with every chart rendered, and no build dialog;
- the HTML report opens with the network off, every chart loaded.
"""
import fcntl, json, os, re, secrets, signal, subprocess, sys, time, urllib.request
from pathlib import Path
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from browser import Page
from workbench.tracking import runs as tracking, naming as layout
from workbench.tracking.query import study_runs
from workbench.tracking.ui import serve_ui
from workbench.base.core import free_port

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT/'runs'/'screenshots'
VENV_BIN = Path(sys.executable).parent
GROUPS = "groups=['cache','topology']"


@pytest.fixture(scope='module')
def demo(tmp_path_factory):
    """`workbench demo` with two setting groups and small points, in its own runs folder: (stdout, study folder, tracking URI).
    Under pytest-xdist the workers of one session share it (the first to ask runs it, under a lock; the others read it), so
    the demo runs once per session, not once per worker that draws a test of this module."""
    shared = tmp_path_factory.getbasetemp().parent if os.environ.get('PYTEST_XDIST_WORKER') else tmp_path_factory.mktemp('demo')
    runs, out, failed = shared/'ui-demo-runs', shared/'ui-demo.stdout', shared/'ui-demo.failed'
    with open(shared/'ui-demo.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.exists() and not failed.exists():                  # a demo that failed once fails every test that needs it, at once
            env = {**os.environ, 'WORKBENCH_RUNS': str(runs)}
            env.pop('MLFLOW_TRACKING_URI', None)
            try:
                p = subprocess.run([str(VENV_BIN/'workbench'), 'demo', '-p', GROUPS, '-p', 'request_count=60'], env=env, cwd=ROOT,
                                   capture_output=True, text=True, timeout=900)
                why = '' if p.returncode == 0 else f'exit {p.returncode}\n' + p.stdout[-3000:] + p.stderr[-3000:]
            except subprocess.TimeoutExpired as e: why = f'no end within 900 s: {str(e.stdout or "")[-3000:]}'
            if why: failed.write_text(why)
            else: out.write_text(p.stdout)
    if failed.exists(): pytest.fail(f'workbench demo failed: {failed.read_text()}')
    stdout = out.read_text()
    folder = Path(re.search(r'executed notebook: (\S+)', stdout).group(1)).parent
    return stdout, folder, f"sqlite:///{runs/'mlflow.db'}"


def test_demo_prints_each_point(demo):
    "The demo prints a line per point as it finishes (i/N, variant @c, tok/s/GPU, TTFT, elapsed, ETA), then the summary and the report."
    out, folder, _ = demo
    lines = [l for l in out.splitlines() if re.match(r'\[\s*\d+/\d+\] ', l)]
    n = int(lines[0].split('/')[1].split(']')[0])
    assert [int(l[1:].split('/')[0]) for l in lines] == list(range(1, n + 1)), lines
    num = r'@c\d+ .* tok/s/GPU +TTFT [\d,]+ ms +simulated '                      # a number says it is simulated (and its band)
    none = r'@c\d+ +not modelled by the simulator \(no numbers\) '                 # a setting the sim does not model: no number
    assert all(re.search(f'({num}|{none}).* +elapsed \\d+:\\d\\d +ETA', l) for l in lines), lines
    assert any(re.search(num, l) for l in lines) and any(re.search(none, l) for l in lines), lines
    assert out.index(lines[-1]) < out.index('Best per setting group under the SLA')     # progress first, summary after
    assert f'HTML report (opens offline): {folder}/report.html' in out and 'Executing' not in out and 'WARNING' not in out


def _scan(p:Page) -> tuple[set, set]:
    "Column ids of the runs table and the texts of its Dataset cells, scrolling it sideways (the grid only renders columns in view)."
    seen, datasets = set(), set()
    for i in range(30):
        seen |= set(p.eval("[...document.querySelectorAll('.ag-header-cell')].map(h => h.getAttribute('col-id'))"))
        datasets |= set(p.eval("[...document.querySelectorAll('.ag-cell[col-id=\"attributes.`Dataset`\"]')].map(c => c.innerText.trim())"))
        if i == 3: p.screenshot(SHOTS/'mlflow_study_runs_scrolled.png')
        moved = p.eval("(() => { const v = document.querySelector('.ag-body-horizontal-scroll-viewport'); if (!v) return 0;"
                       " const b = v.scrollLeft; v.scrollLeft = b + 400; return v.scrollLeft - b; })()")
        time.sleep(0.3)
        if not moved: break
    p.eval("(() => { const v = document.querySelector('.ag-body-horizontal-scroll-viewport'); if (v) v.scrollLeft = 0; return 1; })()")
    return seen, datasets


def test_mlflow_runs_page(demo):
    "The study's runs table (its saved view) lists every point by a readable name, with the core metric columns; a point's page shows metrics and dataset."
    _, folder, uri = demo
    study = folder.name
    runs = study_runs('motif-3', study, tracking_uri=uri)
    eid = tracking.experiment_id('motif-3', uri, create=False)
    with serve_ui(tracking_uri=uri) as url, Page(1600, 1000) as p:
        p.goto(layout.view_url(url, eid, study))
        p.wait(f"document.querySelectorAll('[col-id=\"attributes.`Run Name`\"] a').length >= {len(runs)}", 120, 'every run name rendered')
        p.eval("[...document.querySelectorAll('button')].find(b => b.getAttribute('aria-label') === 'Close')?.click() || true")   # the assistant panel
        time.sleep(1.5)
        names = p.eval("[...document.querySelectorAll('[col-id=\"attributes.`Run Name`\"] a')].map(a => { const s = a.querySelector('span') || a;"
                       " return [s.innerText.trim(), s.scrollWidth <= s.clientWidth + 1]; })")
        assert sorted(n for n, _ in names) == sorted(runs.run_name), (names, list(runs.run_name))
        assert all(fits for _, fits in names), [n for n, fits in names if not fits]                          # no name is cut
        assert {'recipe @c11', 'cache: block_size=64 @c11', 'topology: disagg-3p1d @c32'} <= {n for n, _ in names}
        p.screenshot(SHOTS/'mlflow_study_runs.png')
        cols, datasets = _scan(p)
        assert {f'metrics.`{m}`' for m in layout.VIEW_METRICS if m != 'goodput'} <= cols, cols
        assert {'attributes.`Dataset`', 'params.`changed.setting`', 'tags.`workbench.provenance`'} <= cols, cols
        assert any('chat-8k1k-70kv-15pct (sim stand-in)' in d for d in datasets), datasets
        rid = runs[runs.run_name == 'topology: disagg-3p1d @c32'].run_id.iloc[0]
        p.goto(layout.run_url(url, eid, rid))
        text = p.wait("document.body.innerText.includes('output_token_throughput_per_gpu') && document.body.innerText", 90, 'the run page')
        assert 'topology: disagg-3p1d @c32' in text and 'chat-8k1k-70kv-15pct' in text and 'changed.setting' in text
        assert not re.search(r'\bdiag\.', text)
        p.screenshot(SHOTS/'mlflow_point_run.png')
        rid = runs[runs.run_name == 'cache: block_size=64 @c11'].run_id.iloc[0]      # a setting the sim does not model: no numbers
        p.goto(layout.run_url(url, eid, rid))
        text = p.wait("document.body.innerText.includes('cache: block_size=64 @c11') && document.body.innerText.includes('changed.setting')"
                      " && document.body.innerText", 90, 'the unmodelled run page')
        assert 'output_token_throughput_per_gpu' not in text and 'not modelled' in text, text[:2000]


def lab_answers(proc, base:str, token:str, log:Path, timeout:float=90):
    "Wait until the JupyterLab server `proc` at `base` answers its status API; fail with its log when it exits or the time runs out."
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f'{base}/api/status?token={token}', timeout=2): return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline: raise AssertionError(log.read_text()[-2000:])
            time.sleep(0.5)


def stop_group(proc):
    "SIGTERM the process group of `proc` (its own session), SIGKILL after 15 s."
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        try: proc.wait(15)
        except subprocess.TimeoutExpired: os.killpg(proc.pid, signal.SIGKILL); proc.wait(5)
    except ProcessLookupError: pass


@pytest.fixture
def lab(demo, tmp_path):
    "JupyterLab on a free loopback port, rooted at the demo's study folder: (base URL, token)."
    _, folder, _ = demo
    port, token = free_port(), secrets.token_hex(16)
    log = open(tmp_path/'jupyterlab.log', 'w')
    env = {**os.environ, 'JUPYTER_RUNTIME_DIR': str(tmp_path/'runtime'), 'JUPYTER_CONFIG_DIR': str(tmp_path/'config')}
    proc = subprocess.Popen([str(VENV_BIN/'jupyter'), 'lab', '--no-browser', '--ServerApp.ip=127.0.0.1', f'--ServerApp.port={port}',
                             f'--IdentityProvider.token={token}', f'--ServerApp.root_dir={folder}', '--LabApp.news_url=',
                             '--ServerApp.port_retries=0', *(['--allow-root'] if os.geteuid() == 0 else [])],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=folder, env=env)
    base = f'http://127.0.0.1:{port}'
    try:
        lab_answers(proc, base, token, tmp_path/'jupyterlab.log')
        yield base, token
    finally:
        stop_group(proc); log.close()


def test_notebook_in_jupyterlab(demo, lab):
    "The executed study notebook opens in JupyterLab with every chart drawn (PNG images), no build dialog, no red stderr output."
    _, folder, _ = demo
    base, token = lab
    charts = len(list(folder.glob('*.png')))
    with Page(1500, 1100) as p:
        p.goto(f'{base}/lab/tree/motif_3.ipynb?token={token}')
        p.wait("document.querySelectorAll('.jp-Notebook .jp-Cell').length > 10", 120, 'the notebook')
        p.eval("document.querySelectorAll('.jp-Notebook .jp-Cell').forEach(c => c.scrollIntoView()) || true")   # render every cell
        n = p.wait(f"(() => {{ const i = [...document.querySelectorAll('.jp-RenderedImage img')]; "
                   f"return i.length >= {charts} && i.every(x => x.complete && x.naturalWidth > 300) && i.length; }})()", 90, 'every chart image')
        assert n == charts
        text = p.eval('document.body.innerText') + p.eval("document.querySelector('.jp-Notebook').textContent")
        assert 'Build Recommended' not in text and 'Error displaying widget' not in text and 'Jupyter news' not in text
        assert p.eval("document.querySelectorAll('.jp-OutputArea-output[data-mime-type=\"application/vnd.jupyter.stderr\"]').length") == 0
        # JupyterLab renders only the cells near the viewport: read each cell's text as it scrolls by, until both outputs were seen
        p.wait("(() => { window._seen = (window._seen || '') + [...document.querySelectorAll('.jp-Notebook .jp-Cell')].map(c => "
               "{ c.scrollIntoView(); return c.textContent; }).join(' '); return window._seen.includes('motif-3 on sim:') "
               "&& window._seen.includes('healthy'); })()", 60, 'the progress line and the diagnosis in the outputs')
        p.eval("document.querySelector('.jp-RenderedImage img').scrollIntoView({block: 'start'}) || true"); time.sleep(1)
        p.screenshot(SHOTS/'jupyterlab_charts.png')
        p.eval("document.querySelectorAll('.jp-Notebook .jp-Cell')[6].scrollIntoView({block: 'start'}) || true"); time.sleep(1)
        p.screenshot(SHOTS/'jupyterlab_tables.png')


def test_make_lab_opens_clean(tmp_path):
    """`make lab` starts JupyterLab as this user (root included), on 127.0.0.1, and opens the study notebook with its kernel; opening
    never writes the notebook, and it opens clean: no unsaved-changes mark once the kernel has reported its kernelspec and
    language_info (the study notebooks carry both as the kernel reports them)."""
    port, token = free_port(), secrets.token_hex(16)
    log = open(tmp_path/'lab.log', 'w')
    env = {**os.environ, 'JUPYTER_RUNTIME_DIR': str(tmp_path/'runtime'), 'JUPYTER_CONFIG_DIR': str(tmp_path/'config')}
    before = (ROOT/'nbs'/'studies'/'motif_3.ipynb').read_bytes()
    proc = subprocess.Popen(['make', '-s', 'lab', f'LAB_PORT={port}', f'LAB_ARGS=--IdentityProvider.token={token} --ServerApp.port_retries=0'],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    base = f'http://127.0.0.1:{port}'
    try:
        lab_answers(proc, base, token, tmp_path/'lab.log')
        with Page(1400, 900) as p:
            p.goto(f'{base}/lab/tree/studies/motif_3.ipynb?token={token}')
            p.wait("document.querySelectorAll('.jp-Notebook .jp-Cell').length > 10", 120, 'the study notebook')
            p.wait("[...document.querySelectorAll('.jp-Notebook-ExecutionIndicator, .jp-KernelStatus')].some(e => /Idle/i.test("
                   "e.getAttribute('title') || e.textContent || '')) || !!document.querySelector('[data-status=\"idle\"]')", 90, 'the kernel')
            time.sleep(3)
            p.screenshot(SHOTS/'make_lab.png')
            tab = "[...document.querySelectorAll('.lm-TabBar-tab')].find(t => /motif_3\\.ipynb/.test(t.textContent))"
            assert p.eval(f"!!{tab}"), 'no tab for the study notebook'
            assert not p.eval(f"{tab}.classList.contains('jp-mod-dirty')"), 'the study notebook opened with unsaved changes'
            assert "model: str = 'motif-3'" in p.eval("document.querySelector('.jp-Notebook').textContent")   # the study, with its parameters
    finally:
        stop_group(proc); log.close()
    assert (ROOT/'nbs'/'studies'/'motif_3.ipynb').read_bytes() == before                    # opened, never written


def test_report_offline(demo):
    "The HTML report opens with the network off: every chart loads (embedded), nothing is fetched, every point links to its run; it fits 1,280 px."
    _, folder, _ = demo
    page = folder/'report.html'
    with Page(1280, 1000, offline=True) as p:
        p.goto(page.as_uri())
        p.wait("document.readyState === 'complete'", 30)
        imgs = p.eval("[...document.images].map(i => [i.alt, i.complete && i.naturalWidth > 300])")
        assert len(imgs) == len(list(folder.glob('*.png'))) and all(ok for _, ok in imgs), imgs
        assert p.eval("document.scripts.length") == 0
        assert p.eval("performance.getEntriesByType('resource').filter(e => e.name.startsWith('http')).length") == 0
        assert 'SIMULATED' in p.eval('document.body.innerText')
        assert p.eval("document.documentElement.scrollWidth <= document.documentElement.clientWidth"), 'the page scrolls sideways at 1,280 px'
        p.screenshot(SHOTS/'report_top.png')
        p.eval("document.images[0].scrollIntoView({block: 'start'}) || true"); time.sleep(0.5)
        p.screenshot(SHOTS/'report_charts.png')
