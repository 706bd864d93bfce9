#!/usr/bin/env bash
# Install Debian's headless-capable chromium for the MLflow UI browser test (no-op when present).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then chromium --version; exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium >/dev/null
chromium --version
