"""Run one job of the example CI pipelines (examples/ci/github-actions.yml, examples/ci/gitlab-ci.yml) on this machine,
with the same commands, to show that they run as written.

A fresh `git clone` of this checkout's HEAD stands in for the CI's checkout. Every `run:` step (GitHub) or
`before_script` + `script` (GitLab) runs in bash in that clone with the environment the CI would give it
(`$GITHUB_ENV`, `$GITHUB_STEP_SUMMARY`, `$RUNNER_TEMP`, the step's `env:` with `inputs`, `secrets` and `vars`
filled in; GitLab's `variables:` and `$CI_*`). Steps that call an action are emulated as far as a laptop can:
checkout (the clone), setup-python and setup-uv (the tools must already be on PATH), cache (`--cache DIR`
restores and saves the cached paths there), the JUnit report (the files must exist and parse), upload-artifact
(the files are copied to `<workdir>/artifacts/<name>/`). A step after a failing one is skipped unless it runs
`if: always()`; the exit status is the job's.

    python tools/run_ci_example.py examples/ci/github-actions.yml sim [--input accept="first reference"]
    python tools/run_ci_example.py examples/ci/github-actions.yml k8s --secret KUBECONFIG_B64=$(base64 -w0 kubeconfig)
    python tools/run_ci_example.py examples/ci/gitlab-ci.yml batch-sim --var ACCEPT="first reference"
    python tools/run_ci_example.py examples/ci/github-actions.yml sim --dry-run     # print the plan, run nothing
"""
import argparse, glob, os, re, shutil, subprocess, sys, tempfile, time
from pathlib import Path
import yaml

ROOT = Path(__file__).resolve().parents[1]
KNOWN = ('actions/checkout', 'actions/setup-python', 'astral-sh/setup-uv', 'actions/cache', 'mikepenz/action-junit-report', 'actions/upload-artifact')

def expand(text, ctx:dict) -> str:
    "Fill in `${{ inputs.x }}`, `${{ secrets.x }}`, `${{ vars.x }}`, `${{ github.event_name }}`, `${{ runner.os }}` ('' when not given)."
    def one(m):
        expr = m.group(1).strip()
        scope, _, name = expr.partition('.')
        if scope in ('inputs', 'secrets', 'vars'): return str(ctx.get(scope, {}).get(name, ''))
        if expr == 'github.event_name': return ctx.get('event', 'workflow_dispatch')
        if expr == 'runner.os': return 'Linux'
        return m.group(0)
    return re.sub(r'\$\{\{(.*?)\}\}', one, str(text))

def paths_of(text) -> list[str]:
    "The non-empty lines (or list items) of a `path:` value."
    return [p.strip() for p in (text if isinstance(text, list) else str(text).splitlines()) if p.strip()]

def matches(work:Path, patterns) -> list[Path]:
    "Files and folders under `work` matching the glob patterns."
    return sorted({Path(p) for pat in patterns for p in glob.glob(str(work/pat.rstrip('/')))})

def replace(src:Path, dst:Path):
    "Copy `src` (file or folder, symlinks kept) to `dst`, replacing what is there."
    if dst.is_symlink() or dst.is_file(): dst.unlink()
    elif dst.exists(): shutil.rmtree(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, dst, symlinks=True) if src.is_dir() else shutil.copy2(src, dst)

def bash(script:str, work:Path, env:dict, log) -> int:
    "Run `script` with bash -e -o pipefail in `work`; returns its exit status."
    log(f'$ {script.strip()}')
    return subprocess.run(['bash', '-e', '-o', 'pipefail', '-c', script], cwd=work, env=env).returncode

def read_env_file(path:Path) -> dict:
    "The NAME=value lines a step appended to $GITHUB_ENV."
    out = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        k, eq, v = line.partition('=')
        if eq: out[k.strip()] = v
    return out

def action(uses:str, w:dict, work:Path, a, log, *, restore:bool=True) -> int:
    "Emulate one `uses:` step; 0 when it would succeed."
    name = uses.split('@')[0]
    if name == 'actions/checkout': log(f'checkout: {work} is a fresh clone of {ROOT} at HEAD'); return 0
    if name == 'actions/setup-python':
        v = str(w.get('python-version', '3'))
        ok = shutil.which(f'python{v}') is not None; log(f'setup-python {v}: {"python" + v + " found" if ok else "missing on PATH"}'); return 0 if ok else 1
    if name == 'astral-sh/setup-uv':          # puts uv on PATH: the one on PATH, else this checkout's .venv/bin/uv
        if shutil.which('uv'): log('setup-uv: uv found on PATH'); return 0
        if not (ROOT/'.venv'/'bin'/'uv').exists(): log('setup-uv: no uv on PATH nor in .venv/bin'); return 1
        d = Path(a.workdir)/'tool-bin'; d.mkdir(parents=True, exist_ok=True)
        if not (d/'uv').exists(): (d/'uv').symlink_to(ROOT/'.venv'/'bin'/'uv')
        a.path = f'{d}:{a.path}'; log(f'setup-uv: {ROOT}/.venv/bin/uv put on PATH'); return 0
    if name == 'actions/cache':
        ps = paths_of(w.get('path', ''))
        if not a.cache: log(f'cache: not emulated (no --cache): {ps}'); return 0
        for p in ps:
            src, dst = (Path(a.cache)/p, work/p) if restore else (work/p, Path(a.cache)/p)
            if src.exists(): replace(src, dst)
        log(f"cache: {'restored' if restore else 'saved'} {ps} {'from' if restore else 'to'} {a.cache}"); return 0
    if name == 'mikepenz/action-junit-report':
        from junitparser import JUnitXml
        files = matches(work, paths_of(w.get('report_paths', '')))
        if not files:                         # the action warns, and fails only with require_tests: true
            log(f"junit report: no file matches {w.get('report_paths')}"); return 1 if str(w.get('require_tests', 'false')).lower() == 'true' else 0
        for f in files:
            x = JUnitXml.fromfile(str(f)); log(f'junit report {f.relative_to(work)}: {x.tests} tests, {x.failures} failures, {x.errors} errors, {x.skipped} skipped')
        return 0
    if name == 'actions/upload-artifact':
        files, dest = matches(work, paths_of(w.get('path', ''))), Path(a.workdir)/'artifacts'/str(w.get('name', 'artifact'))
        for f in files:
            t = dest/f.relative_to(work); t.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(f, t, dirs_exist_ok=True) if f.is_dir() else shutil.copy2(f, t)
        log(f"upload-artifact {w.get('name')}: {len(files)} path(s) -> {dest}" + ('' if files else f" (none matched: {w.get('if-no-files-found', 'warn')})"))
        return 0 if files or w.get('if-no-files-found', 'warn') != 'error' else 1
    log(f'{uses}: not emulated'); return 1

def github(wf:dict, job:str, work:Path, a, log) -> int:
    "Run the steps of GitHub Actions job `job`."
    steps, rc = wf['jobs'][job]['steps'], 0
    tmp = Path(a.workdir)/'runner-temp'; tmp.mkdir(parents=True, exist_ok=True)
    files = {'GITHUB_ENV': tmp/'github_env', 'GITHUB_STEP_SUMMARY': tmp/'step_summary.md'}
    ctx = {'inputs': a.inputs, 'secrets': a.secrets, 'vars': a.vars, 'event': a.event}
    base = {**os.environ, 'CI': 'true', 'GITHUB_ACTIONS': 'true', 'GITHUB_WORKSPACE': str(work), 'RUNNER_TEMP': str(tmp),
            'GITHUB_EVENT_NAME': a.event, 'GITHUB_ACTOR': os.environ.get('GITHUB_ACTOR', 'local-run'), **{k: str(v) for k, v in files.items()}}
    caches = []
    for i, st in enumerate(steps, 1):
        name = st.get('name') or st.get('uses') or st.get('run', '').strip().splitlines()[0]
        if rc and 'always()' not in str(st.get('if', '')): log(f'[{i}/{len(steps)}] skipped after a failure: {name}'); continue
        log(f'[{i}/{len(steps)}] {name}')
        if a.dry_run:
            log(f"    {'uses ' + st['uses'] if 'uses' in st else st['run'].strip()}")
            if 'uses' in st and st['uses'].split('@')[0] not in KNOWN: log('    this action is not emulated'); rc = 1
            continue
        if 'uses' in st:
            with_ = {k: expand(v, ctx) for k, v in (st.get('with') or {}).items()}
            r = action(st['uses'], with_, work, a, log)
            if st['uses'].startswith('actions/cache'): caches.append(with_)
        else:
            env = {**base, 'PATH': a.path, **read_env_file(files['GITHUB_ENV']), **{k: expand(v, ctx) for k, v in (st.get('env') or {}).items()}}
            r = bash(st['run'], work, env, log)
        if r: log(f'    step failed with exit status {r}'); rc = rc or r
    for w in caches: action('actions/cache', w, work, a, log, restore=False)      # the post step saves the cache
    if not a.dry_run and files['GITHUB_STEP_SUMMARY'].exists(): log(f"job summary ($GITHUB_STEP_SUMMARY): {files['GITHUB_STEP_SUMMARY']}")
    return rc

def gitlab(ci:dict, job:str, work:Path, a, log) -> int:
    "Run the before_script and script of GitLab job `job` (one `extends:` level merged)."
    j = dict(ci[job])
    if 'extends' in j: j = {**ci[j['extends']], **{k: v for k, v in j.items() if k != 'extends'}}
    env = {**os.environ, 'CI': 'true', 'GITLAB_CI': 'true', 'CI_PROJECT_DIR': str(work), 'CI_PIPELINE_SOURCE': a.event,
           'GITLAB_USER_LOGIN': os.environ.get('GITLAB_USER_LOGIN', 'local-run')}
    env.update({k: os.path.expandvars(str(v)).replace('$CI_PROJECT_DIR', str(work)) for k, v in (j.get('variables') or {}).items()})
    env.update(a.vars)
    for f in a.file:                        # File-type variables: the value is written to a file, the variable holds its path
        k, _, v = f.partition('='); p = Path(a.workdir)/'files'/k; p.parent.mkdir(parents=True, exist_ok=True); p.write_text(v); env[k] = str(p)
    lines = list(j.get('before_script') or []) + list(j.get('script') or [])
    if a.cache:
        for p in (j.get('cache') or {}).get('paths', []):
            if (Path(a.cache)/p).exists(): replace(Path(a.cache)/p, work/p)
    log(f"image {j.get('image')}: not emulated, the commands run on this machine")
    script = '\n'.join(lines)
    if a.dry_run: log(script); return 0
    rc = bash(script, work, env, log)
    if a.cache:
        for p in (j.get('cache') or {}).get('paths', []):
            if (work/p).exists(): replace(work/p, Path(a.cache)/p)
    art = j.get('artifacts') or {}
    found = matches(work, art.get('paths', []))
    junit = matches(work, [art.get('reports', {}).get('junit', '')]) if art.get('reports', {}).get('junit') else []
    log(f'artifacts: {len(found)} path(s) match {art.get("paths")}; JUnit reports: {[str(p.relative_to(work)) for p in junit]}')
    return rc

def pairs(xs) -> dict:
    "NAME=VALUE arguments as a dict."
    return dict(x.split('=', 1) for x in xs or [])

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('pipeline'); p.add_argument('job')
    p.add_argument('--workdir', help='where the clone, runner temp and artifacts go (default: a new temporary folder)')
    p.add_argument('--input', action='append', default=[], help='workflow_dispatch input NAME=VALUE')
    p.add_argument('--secret', action='append', default=[], help='secret NAME=VALUE'); p.add_argument('--var', action='append', default=[], help='variable NAME=VALUE')
    p.add_argument('--file', action='append', default=[], help='GitLab File-type variable NAME=CONTENT')
    p.add_argument('--event', default='workflow_dispatch', help='github.event_name / CI_PIPELINE_SOURCE (schedule, workflow_dispatch, web)')
    p.add_argument('--cache', help='folder standing in for the CI cache (restored before, saved after)')
    p.add_argument('--reuse', action='store_true', help='keep the workspace of an earlier run (e.g. with the reference an --accept run wrote)')
    p.add_argument('--dry-run', action='store_true')
    a = p.parse_args(argv)
    a.inputs, a.secrets, a.vars, a.path = pairs(a.input), pairs(a.secret), pairs(a.var), os.environ.get('PATH', '')
    a.workdir = a.workdir or tempfile.mkdtemp(prefix='ci-example-')
    doc = yaml.safe_load(Path(a.pipeline).read_text())
    work = Path(a.workdir)/'workspace'
    t0, log = time.monotonic(), (lambda m: print(f'[{time.monotonic() - t0:7.1f}s] {m}', flush=True))
    if not a.dry_run and not (a.reuse and work.exists()):
        if work.exists(): shutil.rmtree(work)
        subprocess.run(['git', 'clone', '--quiet', '--no-hardlinks', str(ROOT), str(work)], check=True)
    is_gh = 'jobs' in doc
    if a.job not in (doc['jobs'] if is_gh else doc): print(f'no job {a.job!r} in {a.pipeline}', file=sys.stderr); return 2
    rc = (github if is_gh else gitlab)(doc, a.job, work, a, log)
    log(f'job {a.job}: {"succeeded" if rc == 0 else f"failed (exit {rc})"}; workdir {a.workdir}')
    return rc

if __name__ == '__main__': sys.exit(main())
