"""The example CI pipelines in examples/ci/ stay runnable: their batch files load, every `workbench` command in them parses
with the real argument parser, they cache .venv and runs/cache, upload the batch folder and report its JUnit file, the
k8s job takes its kube context from a secret, and tools/run_ci_example.py walks each job (--dry-run here; the full
execution of the sim job, which takes tens of minutes, runs when WORKBENCH_CI_EXAMPLES=1)."""
import os, shlex, subprocess, sys
from pathlib import Path
import pytest, yaml
from workbench.cli import parser
from workbench.studies.batch import load_batch

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT/'examples'/'ci'
GH, GL = yaml.safe_load((CI/'github-actions.yml').read_text()), yaml.safe_load((CI/'gitlab-ci.yml').read_text())

def commands(script:str) -> list[list[str]]:
    "The `workbench` command lines of a shell script, as argv lists."
    return [shlex.split(l.strip())[1:] for l in script.splitlines() if l.strip().startswith('.venv/bin/workbench ')]

def test_batch_files_load():
    for f in ('batch-sim.yaml', 'batch-k8s.yaml'):
        spec = load_batch(CI/f)
        assert spec.reference and spec.repeats >= 3 and spec.studies, f
    assert {s.target for s in load_batch(CI/'batch-sim.yaml').studies} == {'sim'}
    assert {s.target for s in load_batch(CI/'batch-k8s.yaml').studies} == {'k8s'}

def test_github_workflow():
    assert set(GH.get('on', GH.get(True))) == {'schedule', 'workflow_dispatch'}          # PyYAML reads the key `on` as True
    for job, batch in (('sim', 'batch-sim.yaml'), ('k8s', 'batch-k8s.yaml')):
        steps = GH['jobs'][job]['steps']
        uses = {s['uses'].split('@')[0]: s for s in steps if 'uses' in s}
        assert {'.venv', 'runs/cache'} <= set(uses['actions/cache']['with']['path'].split()), job
        name = load_batch(CI/batch).name
        assert f'runs/{name}-*/' in uses['actions/upload-artifact']['with']['path'] and uses['actions/upload-artifact']['if'] == 'always()'
        assert uses['mikepenz/action-junit-report']['with']['report_paths'] == f'runs/{name}-*/junit.xml'
        cmds = [c for s in steps if 'run' in s for c in commands(s['run'])]
        assert cmds and all(parser().parse_args(c).ci == f'examples/ci/{batch}' for c in cmds), cmds
        assert any(parser().parse_args(c).accept is True for c in cmds) and any(parser().parse_args(c).accept is None for c in cmds)
    kube = next(s for s in GH['jobs']['k8s']['steps'] if 'KUBECONFIG_B64' in str(s.get('env')))
    assert kube['env']['KUBECONFIG_B64'] == '${{ secrets.KUBECONFIG_B64 }}' and 'GITHUB_ENV' in kube['run']

def test_gitlab_snippet():
    base = GL['.workbench-batch']
    assert {'.venv/', 'runs/cache/'} <= set(base['cache']['paths']) and base['artifacts']['reports']['junit'] == 'runs/*/junit.xml'
    for job, batch in (('batch-sim', 'batch-sim.yaml'), ('batch-k8s', 'batch-k8s.yaml')):
        cmds = [c for l in GL[job]['script'] for c in commands(l)]
        assert cmds and all(parser().parse_args(c).ci == f'examples/ci/{batch}' for c in cmds), cmds
    assert 'KUBECONFIG_FILE' in ' '.join(GL['batch-k8s']['script'])

@pytest.mark.parametrize('pipeline,job', [('github-actions.yml', 'sim'), ('github-actions.yml', 'k8s'), ('gitlab-ci.yml', 'batch-sim'), ('gitlab-ci.yml', 'batch-k8s')])
def test_runner_walks_every_job(pipeline, job, tmp_path):
    p = subprocess.run([sys.executable, str(ROOT/'tools'/'run_ci_example.py'), str(CI/pipeline), job, '--dry-run', '--workdir', str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and f'job {job}: succeeded' in p.stdout, p.stdout + p.stderr

@pytest.mark.skipif(os.environ.get('WORKBENCH_CI_EXAMPLES') != '1', reason='runs the whole nightly sim job (tens of minutes): set WORKBENCH_CI_EXAMPLES=1')
def test_sim_job_runs_as_written(tmp_path):
    "The sim job, bootstrapped (accept) and then gated, in a fresh clone: exit 0 both times, the artifacts in place."
    run = lambda *a: subprocess.run([sys.executable, str(ROOT/'tools'/'run_ci_example.py'), str(CI/'github-actions.yml'), 'sim', '--workdir', str(tmp_path),
                                     '--cache', str(tmp_path/'cache'), *a], capture_output=True, text=True, timeout=7200)
    p = run('--input', 'accept=first reference')
    assert p.returncode == 0, p.stdout[-5000:] + p.stderr[-3000:]
    assert (tmp_path/'artifacts'/'workbench-batch-sim'/'examples'/'ci'/'reference-sim.json').exists()
    p = run('--reuse', '--event', 'schedule')                   # the next night, with the reference in the checkout
    assert p.returncode == 0 and 'PASSED (exit 0)' in p.stdout, p.stdout[-5000:] + p.stderr[-3000:]
