"""Headless Chromium driven over the DevTools protocol, for the screenshot tests (tests/test_ui.py).

`Page` starts Debian's chromium with a private profile on a free loopback port, opens one tab, and
offers what the tests need: go to a URL, evaluate JavaScript, wait until an expression holds, click,
take a screenshot. The protocol client is websocket-client (installed with the kubernetes client).
Every process it starts is stopped by `close` (or the `with` block).
"""
import base64, itertools, json, os, shutil, signal, subprocess, tempfile, time, urllib.request
from pathlib import Path

from workbench.base.core import free_port
from workbench.tracking.ui import chromium

FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-dev-shm-usage',
         '--disable-background-networking', '--disable-component-update', '--disable-sync', '--hide-scrollbars',
         '--remote-allow-origins=*']


class Page:
    "One headless Chromium tab over the DevTools protocol."
    def __init__(self, width:int=1600, height:int=1000, *, offline:bool=False):
        import websocket
        self.profile, self.port = tempfile.mkdtemp(prefix='wb-chromium-'), free_port()
        self.proc = subprocess.Popen([chromium(), *FLAGS, f'--remote-debugging-port={self.port}', f'--user-data-dir={self.profile}',
                                      f'--window-size={width},{height}', 'about:blank'],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self._ids = itertools.count(1)
        try:
            tab = self._tab(timeout=30)
            self.ws = websocket.create_connection(tab['webSocketDebuggerUrl'], timeout=60, suppress_origin=True)
            self.call('Page.enable'); self.call('Runtime.enable')
            self.call('Emulation.setDeviceMetricsOverride', width=width, height=height, deviceScaleFactor=1, mobile=False)
            if offline:
                self.call('Network.enable')
                self.call('Network.emulateNetworkConditions', offline=True, latency=0, downloadThroughput=-1, uploadThroughput=-1)
        except BaseException:
            self.close(); raise

    def _tab(self, timeout:float) -> dict:
        "The first page target of the browser, once its DevTools endpoint answers."
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None: raise RuntimeError(f'chromium exited with {self.proc.returncode}')
            try:
                with urllib.request.urlopen(f'http://127.0.0.1:{self.port}/json', timeout=2) as r:
                    pages = [t for t in json.loads(r.read()) if t.get('type') == 'page']
                if pages: return pages[0]
            except OSError: pass
            time.sleep(0.2)
        raise TimeoutError(f'chromium DevTools did not answer on port {self.port} within {timeout:g} s')

    def call(self, method:str, **params):
        "Send one DevTools command and return its result (events in between are skipped)."
        i = next(self._ids)
        self.ws.send(json.dumps({'id': i, 'method': method, 'params': params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get('id') == i:
                if 'error' in msg: raise RuntimeError(f'{method}: {msg["error"]}')
                return msg.get('result', {})

    def goto(self, url:str):
        "Open `url` in the tab."
        self.call('Page.navigate', url=url)

    def eval(self, js:str):
        "The value of JavaScript expression `js` in the page (promises awaited)."
        r = self.call('Runtime.evaluate', expression=js, returnByValue=True, awaitPromise=True)
        if 'exceptionDetails' in r: raise RuntimeError(f'{js[:80]}: {r["exceptionDetails"].get("text")} {r.get("result", {}).get("description", "")}')
        return r.get('result', {}).get('value')

    def wait(self, js:str, timeout:float=90, what:str=''):
        "Wait until `js` is truthy; returns its value."
        deadline, v = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            try: v = self.eval(js)
            except RuntimeError: v = None
            if v: return v
            time.sleep(0.5)
        raise TimeoutError(f'{what or js[:100]} did not hold within {timeout:g} s (last value {v!r})')

    def screenshot(self, path, *, full:bool=False) -> Path:
        "Save a PNG of the viewport (or of the whole page with `full`) to `path`."
        path = Path(path); path.parent.mkdir(parents=True, exist_ok=True)
        r = self.call('Page.captureScreenshot', format='png', captureBeyondViewport=full,
                      **({'clip': {**self._page_size(), 'x': 0, 'y': 0, 'scale': 1}} if full else {}))
        path.write_bytes(base64.b64decode(r['data']))
        return path

    def _page_size(self) -> dict:
        "Width and height of the whole document."
        return self.eval('({width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight})')

    def close(self):
        "Stop chromium (its whole process group) and remove its profile."
        try: self.ws.close()
        except Exception: pass
        if self.proc.poll() is None:
            try: os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError: pass
            try: self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL); self.proc.wait(5)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self): return self
    def __exit__(self, *exc): self.close()
