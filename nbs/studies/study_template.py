# The one source of the study notebooks (nbs/studies/<model>.ipynb): edit this file, then run
# `.venv/bin/python tools/study_notebooks.py` to write the four notebooks. `{{model}}`, `{{display_name}}`,
# `{{intro}}` and `{{sla}}` are rendered from each recipes/<model>/recipe.yaml; a recipe's `study_defaults`
# replace the defaults of the parameters cell. tests/test_studies.py fails when a notebook is out of sync.

# %% [markdown]
# # {{display_name}} study: reproduce the recipe, then one setting group at a time
#
# {{intro}}
#
# This notebook is run interactively in JupyterLab or in batch by papermill (`workbench run {{model}}`).
# It loads the recipe, renders its manifests, reproduces the recipe and the articles' baseline, compares
# them with the published figures, then changes one setting group at a time with every other group
# held at the recipe, and picks the best variant per group under the SLA. Every point goes to MLflow.
# On the default `sim` target every number is **simulated** (and labelled so), never measured. The
# study ends with one HTML report (`runs/<study>/report.html`) that opens offline.

# %% tags=["parameters"]
model: str = '{{model}}'  # recipe id, a folder under recipes/
target: str = 'sim'  # where to run: sim (calibrated B200 simulation, CPU), local (Dynamo frontend + workers on this machine), k8s (cluster)
topology: str = ''  # topology to reproduce (empty: the recipe default)
groups: list = ['parallelism', 'routing', 'cache', 'speculative', 'kernels', 'topology']  # setting groups to sweep ([]: none, only the recipe and its baselines)
custom: dict = {}  # candidates replacing the defaults of a group, e.g. cache: list of changes
overrides: dict = {}  # per group, a written reason that allows a pinned setting to change
concurrencies: list = []  # concurrencies per variant (empty: the recipe benchmark of each topology)
request_count: int = 300  # requests per point (sim and local)
seed: int = 42  # workload seed
tracking_uri: str = ''  # MLflow store (empty: sqlite at runs/mlflow.db)
kube_context: str = ''  # k8s target: kube context (empty: the current context)
namespace: str = 'default'  # k8s target: namespace
rehearsal: bool = False  # k8s target: workers run dynamo.mocker with the same topology (wiring check on a CPU cluster)
options: dict = {}  # more target options, e.g. local: {'hang_timeout_s': 60, 'osl': 64}, k8s: {'api_retry_s': 300}
study: str = ''  # study id (empty: derived from the parameters, so the same parameters resume the same study)
rerun_failed: bool = False  # re-run points that failed before
ops_sections: bool = False  # KV host-offload and autoscaling sections (always simulated; about 20-40 s)
search: bool = False  # deployment search under the SLA within one node on the sim (search_budget_s plus logging; simulated)
search_budget_s: float = 60  # seconds the search may spend (when search is True; the configuration under way then finishes)

# %% [markdown]
# Derived values live below the parameters cell, so papermill's injected parameters reach them.

# %%
from IPython.display import display, Markdown
from workbench.base.core import runs_dir
from workbench.domain.loading import load_recipe
from workbench.domain.variants import recipe_variant
from workbench.targets.k8s.manifests import render_all, to_yaml
from workbench.studies import study as st, outcome as so, report
from workbench.studies.charts import static_charts
from workbench.base import progress
from workbench.studies.report import table

static_charts()   # charts are PNG images drawn here (vl-convert): they show offline, in JupyterLab, HTML and MLflow
recipe = load_recipe(model)
rv = recipe_variant(recipe, topology or None)
target_options = {**({'context': kube_context or None, 'namespace': namespace, 'rehearsal': rehearsal} if target == 'k8s' else {}), **options}

# %% [markdown]
# ## The recipe
#
# Every value below comes from `recipes/{{model}}/recipe.yaml` (sources listed there).

# %%
display(table(so.recipe_summary(recipe)))
display(Markdown('**Pinned settings:** ' + '; '.join(f'`{p.setting}`: {p.reason}' for p in recipe.pins)))

# %% [markdown]
# ## Manifests
#
# The recipe's DynamoGraphDeployment (validated against the real CRD), model-cache PVC, download Job and
# AIPerf Jobs, written beside this notebook's outputs and logged with every point.

# %%
objects = render_all(rv, study or None)
manifest_yaml = to_yaml(objects)
print(f'{len(objects)} objects: ' + ', '.join(f"{o['kind']}/{o['metadata']['name']}" for o in objects))

# %% [markdown]
# ## Run the study
#
# Recipe and baseline first, then each group's candidates. Refused candidates (pinned settings,
# configurations that cannot run) are listed with their reason instead of being run. A bar shows each
# point as it finishes (`workbench run` prints the same as one line per point).

# %%
out = st.run_study(model, target=target, topology=topology or None, groups=groups, custom=custom or None, overrides=overrides or None,
                   concurrencies=concurrencies or None, request_count=request_count, seed=seed, study=study or None,
                   tracking_uri=tracking_uri or None, rerun_failed=rerun_failed, target_options=target_options)
out_dir = runs_dir()/out.study; out_dir.mkdir(parents=True, exist_ok=True)
(out_dir/'manifests.yaml').write_text(manifest_yaml)
print(f'study {out.study}: {out.ran} points run, {out.reused} reused from MLflow, {len(out.failed)} failed, {len(out.refused)} candidates refused')

# %% [markdown]
# ## Published vs reproduced
#
# Each published figure beside the matching point. `provenance` says what the reproduced number is
# (`simulated` or `measured`); `band` is the error band the sim's validation gives a simulated number
# (blank until the sim records one). On the sim, a published point the calibration was fitted to
# reproduces by construction: its ratio is the fit residual, not a test.

# %%
pvr = so.published_vs_reproduced(out, recipe)
display(table(pvr.drop(columns=['variant', 'target', 'source'], errors='ignore')))

# %% [markdown]
# ## Every point, and the best per group under the SLA
#
# The SLA is the recipe's: {{sla}}. Points whose
# variant failed a functional check are excluded from "best".

# %%
points = so.results_table(out)
display(table(points.drop(columns=['variant', 'target', 'itl_p50_ms', 'excluded_reason'], errors='ignore')))
best = so.best_per_group(out)
display(table(best.drop(columns=['target'], errors='ignore')))
display(table(so.excluded_table(out)))

# %% [markdown]
# ## Charts
#
# The Pareto view (tok/s/GPU against tok/s/user, one line per variant across concurrencies, with the SLA
# line, the Pareto frontier and the published points), published vs reproduced, and per-group deltas
# against the recipe; saved as PNG and SVG and logged to the study's MLflow run.

# %%
charts = so.save_study_charts(out, recipe, out_dir)
for c in charts.values(): display(c)

# %% [markdown]
# ## Diagnosis, and router-estimated overlap vs engine KV reuse
#
# Every point is checked with the recipes' operator rules: TTFT up -> queue length and prefill load,
# then the router's estimated prefix overlap against the engine's actual KV reuse; ITL up -> decode
# load and KV cache usage (disaggregated: KV transfer time); failed requests -> readiness, OOM and
# requests over the context limit. A variant is compared with the recipe's point at the same
# concurrency. A point with no symptom and no likely cause is `healthy`; requests over the context
# limit that the benchmark drops by design are a note, not a bottleneck. Each point's diagnosis goes to
# its MLflow child run (`diagnosis.*` tags, `diagnosis/diagnosis.csv`, `diagnosis/signals.json`); the
# full table, the overlap-vs-reuse table (`overlap/overlap.csv`) and the chart go to the study's parent
# run. On the sim the signals come from the replay engine and are simulated; on local and k8s from the
# frontend's Prometheus metrics and AIPerf.

# %%
from workbench.evidence import diagnosis as dg
from workbench.evidence.sections import log_study_diagnosis, offload_section
from workbench.tracking import runs as tracking
diag = log_study_diagnosis(tracking.client(out.tracking_uri), out.run_id, out.results, recipe, sla=out.sla, meta=out.meta, folder=out_dir)
print(f"{diag['points_logged']} point diagnoses logged to their child runs")
display(table(diag['summary'].drop(columns=['variant'], errors='ignore')))
display(table(diag['overlap'].drop(columns=['variant'], errors='ignore')))
if diag['chart'] is not None: display(diag['chart'])

# %% [markdown]
# ## KV host offload (simulated)
#
# When does a host-memory KV tier (`cache.host_offload_gb`, KVBM) help? When the working set of
# recurring prefixes is larger than the GPU KV cache, so blocks are evicted before they are reused
# (K-EXAONE measured 8.8% reuse on a 70%-reuse trace). The recipe's deployment on the sim, with the
# working set set to 0.5x and 4x the GPU KV capacity, without and with a 2 TB host tier per worker.
# Speculative decoding is off in every row (the replay engine does not combine it with host offload
# yet). Runs only with `ops_sections`; logged to the study's parent run (`offload.*`). What it finds goes
# into the summary (`ops_found`), so `workbench run` prints it too.

# %%
ops_found = []
if ops_sections:
    progress.note(out_dir, 'ops sections (simulated): KV host offload what-ifs, then SLA-driven autoscaling (tens of seconds)')
    offload = offload_section(model, client=tracking.client(out.tracking_uri), run_id=out.run_id)
    print(f"[{offload.attrs['provenance']}] GPU KV capacity {offload.attrs['gpu_kv_tokens']:,} tokens; " + '; '.join(offload.attrs['notes']))
    display(table(offload))
    big = offload[offload.working_set_x_gpu_kv == offload.working_set_x_gpu_kv.max()].sort_values('host_offload_gb')
    no, host = big.iloc[0], big.iloc[-1]
    ops_found.append(f"KV host offload ({offload.attrs['provenance']}, c{host.concurrency}): "
                     f"with the working set at {host.working_set_x_gpu_kv:g}x the GPU "
                     f"KV cache, a {host.host_offload_gb:,.0f} GB host tier moves KV reuse from {no.kv_reuse:.0%} to {host.kv_reuse:.0%}, TTFT p50 "
                     f"from {no.ttft_p50_ms:,.0f} to {host.ttft_p50_ms:,.0f} ms, tok/s/GPU {host.tok_s_gpu_gain:+.1%}")
else: print('skipped: ops_sections is False')

# %% [markdown]
# ## SLA-driven autoscaling (simulated)
#
# A load ramp (0.5x, 2.5x, 0.5x of what one replica sustains) replayed against fixed pools of 1 and
# 3 replicas, Dynamo's Planner (load-based, run in the replay engine) and the workbench's SLA policy:
# SLA violations and GPU-hours. The Planner's SLA mode needs AISimulate's performance model, which is
# not installable here: its row says so and holds no numbers. Worker startup while scaling is an
# assumption (30 s). Runs only with `ops_sections`; logged to the study's parent run (`autoscale.*`).

# %%
if ops_sections:
    from workbench.evidence.planner import planner_section
    autoscale = planner_section(model, client=tracking.client(out.tracking_uri), run_id=out.run_id)
    print(f"[{autoscale.attrs['provenance']}] " + '; '.join(autoscale.attrs['notes']))
    display(table(autoscale[['policy', 'available', 'gpu_hours', 'mean_replicas', 'max_replicas', 'scaling_events', 'violating_requests',
                             'violation_share', 'violations_vs_fixed_min', 'gpu_hours_vs_fixed_max', 'provenance', 'note']]))
    ops_found.append('SLA-driven autoscaling (simulated): requests over the SLA and GPU-hours per policy: ' + '; '.join(
        f'{r.policy} {r.violation_share:.1%} at {r.gpu_hours:.1f} GPU-h' if r.available else f'{r.policy}: not run here'
        for r in autoscale.itertuples()))
else: print('skipped: ops_sections is False')

# %% [markdown]
# ## Deployment search (simulated)
#
# Beyond one group at a time: which deployment is best for the recipe's SLA within one node? A search
# on the sim target (`workbench search {{model}}`) over TP/EP/DP and replicas per role, aggregated or
# prefill/decode pools, router mode, draft length, batch limit and host offload, starting from the
# baseline, for `search_budget_s` seconds (default 60). The chart shows its Pareto frontier with the
# recipe's topologies and the published points; the summary ranks the best configurations with their
# cost and says where the search lands against the recipe. The winner is written as a recipe variant with its manifests
# (`runs/<search>/winner/`). Its points go to MLflow under their own parent `search` run. Runs only
# with `search`.

# %%
if search:
    from workbench.search.space import SearchBudget, SearchSpec
    from workbench.search.run import run_search, frontier_chart
    found = run_search(SearchSpec(recipe, requests=request_count, seed=seed), SearchBudget(search_budget_s),
                       tracking_uri=tracking_uri or None)
    display(frontier_chart(found.outcome))
    print(found.summary)
else: print('skipped: search is False')

# %% [markdown]
# ## Summary and report
#
# The summary, and one HTML report with everything above and a link to each point's MLflow run
# (`runs/<study>/report.html`: no script, charts embedded, so it opens offline). Both, the results
# tables and the summary metrics (best per group under the SLA) also go to the study's parent run.

# %%
from workbench.studies.publish import publish_study
summary = so.summary_text(out, recipe, pvr, best)
if ops_found:                 # the ops sections' findings, before the MLflow links (tables: above, and offload.* / autoscale.* on the parent run)
    import textwrap
    head, sep, tail = summary.rpartition('\n\nMLflow: ')
    ops = 'Ops sections (tables in the executed notebook and on the parent run, offload.* and autoscale.*):\n' + '\n'.join(
        textwrap.fill(f, 120, initial_indent='- ', subsequent_indent='  ', break_on_hyphens=False) for f in ops_found)
    summary = f'{head}\n\n{ops}{sep}{tail}' if sep else f'{summary}\n\n{ops}'
published = publish_study(out, recipe, out_dir, summary=summary)
print(summary)
print(f"\nHTML report: {published['report']}")
