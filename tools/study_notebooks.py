"""Write the study notebooks nbs/studies/<model>.ipynb, one per recipe, from nbs/studies/study_template.py.

The title, introduction and SLA sentence are rendered from recipes/<model>/recipe.yaml
(`workbench.studies.outcome.study_intro`, `sla_text`); a recipe's `study_defaults` replace parameter defaults.
`--check` writes nothing and exits 1 when a notebook differs from what the template renders.
"""
import hashlib, re, subprocess, sys
from pathlib import Path
import jupytext, nbformat

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ROOT/'nbs'/'studies'
TEMPLATE = STUDIES/'study_template.py'
KERNEL = {'kernelspec': {'display_name': 'python3', 'language': 'python', 'name': 'python3'}}

def kernel_metadata() -> dict:
    """The notebook metadata JupyterLab writes once the python3 kernel reports itself: the kernelspec `make venv` installs and
    ipykernel's own `language_info` (this interpreter's version). A notebook that carries both opens clean: JupyterLab sets them
    only when they differ (`settings.ini` lets `nbdev_clean` keep `language_info`)."""
    from ipykernel.ipkernel import IPythonKernel
    return {**KERNEL, 'language_info': dict(IPythonKernel.language_info)}

def path_of(model:str) -> Path: return STUDIES/f"{model.replace('-', '_')}.ipynb"

def render_text(model:str) -> str:
    "The template as a percent script for `model`, recipe facts and parameter defaults filled in."
    from workbench.domain.loading import load_recipe
    from workbench.studies.outcome import study_intro, sla_text
    r = load_recipe(model)
    text = TEMPLATE.read_text()
    text = text[text.index('# %%'):]                      # the header comment is for editors of the template
    for k, v in {'model': r.id, 'display_name': r.display_name, 'intro': study_intro(r), 'sla': sla_text(r)}.items():
        text = text.replace('{{' + k + '}}', v)
    if left := re.findall(r'\{\{\w+\}\}', text): raise SystemExit(f'{TEMPLATE}: unknown placeholders {left}')
    for k, v in r.study_defaults.items():
        text, n = re.subn(rf'^({re.escape(k)}: \w+ = )(.*?)(  #)', lambda m: f'{m.group(1)}{v!r}{m.group(3)}', text, count=1, flags=re.M)
        if not n: raise SystemExit(f'{model}: study_defaults names {k!r}, which is not a parameter of {TEMPLATE.name}')
    return text

def render(model:str):
    "The study notebook of `model` as a notebook object (clean metadata, python3 kernel, stable cell ids)."
    nb = jupytext.reads(render_text(model), fmt='py:percent')
    nb.metadata = kernel_metadata()
    for i, c in enumerate(nb.cells):
        tags = c.metadata.get('tags')
        c.metadata = {'tags': tags} if tags else {}
        c['id'] = hashlib.sha1(f'{model}/{i}'.encode()).hexdigest()[:8]
    return nb

def _cells(nb) -> list[tuple]:
    return [(c.cell_type, c.source.strip(), tuple(c.metadata.get('tags') or ())) for c in nb.cells]

def papermill_unparsed(nb) -> list[str]:
    """Parameters of `nb`'s parameters cell that papermill's own inference misses (it logs "Unable to parse line ..." and skips a line
    with a second `=`, e.g. in its comment): each would print that warning on every run and be missing from `papermill --help-notebook`."""
    import ast, logging
    from papermill.translators import PythonTranslator
    cell = next(c for c in nb.cells if 'parameters' in (c.metadata.get('tags') or []))
    declared = [n.target.id for n in ast.parse(cell.source).body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
    warned, log = [], logging.getLogger('papermill.translators')
    h = logging.Handler(); h.emit = lambda r: warned.append(r.getMessage()); log.addHandler(h)
    try: seen = [p.name for p in PythonTranslator.inspect(cell)]
    finally: log.removeHandler(h)
    missing = [k for k in declared if k not in seen]
    return [f'{k}: papermill cannot parse its line (a second `=` in its comment?)' for k in missing] + ([] if missing else warned)

def out_of_sync() -> list[str]:
    "Study notebooks missing, extra, or differing from the template (cell types, sources and tags), and parameters papermill cannot read."
    from workbench.domain.loading import list_recipes
    models = list_recipes()
    bad = [f'{p.name}: no recipe for it' for p in sorted(STUDIES.glob('*.ipynb')) if p not in {path_of(m) for m in models}]
    for m in models:
        p = path_of(m)
        if not p.exists(): bad.append(f'{p.name}: missing')
        elif _cells(nbformat.read(p, as_version=4)) != _cells(render(m)): bad.append(f'{p.name}: differs from {TEMPLATE.name}')
        bad += [f'{p.name}: parameter {x}; edit {TEMPLATE.name}' for x in papermill_unparsed(render(m))]
    return bad

def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if '--check' in argv:
        bad = out_of_sync()
        for b in bad: print(f'study notebook {b}' + ('' if TEMPLATE.name in b else ': run tools/study_notebooks.py'))
        if not bad: print('study notebooks in sync with nbs/studies/study_template.py')
        return 1 if bad else 0
    from workbench.domain.loading import list_recipes
    for m in list_recipes():
        nbformat.write(render(m), path_of(m))
        subprocess.run([str(Path(sys.executable).with_name('nbdev_clean')), '--fname', str(path_of(m))], check=True, cwd=ROOT)
        print(path_of(m).relative_to(ROOT))
    return 0

if __name__ == '__main__': sys.exit(main())
