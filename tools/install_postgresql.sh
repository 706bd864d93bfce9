#!/usr/bin/env bash
# Install Debian's PostgreSQL server programs for `workbench server` and tests/test_server.py (no-op when present).
# Debian's package would also create and start a cluster of its own ("main", port 5432); the workbench runs its own
# cluster under runs/server/, so postgresql-common goes first and is told not to create one (as the official image does).
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then ls /usr/lib/postgresql/*/bin/postgres; exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
APT="$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600"
$APT update -qq
$APT install -y -qq --no-install-recommends postgresql-common >/dev/null
$SUDO sed -ri 's/^#? *(create_main_cluster) .*$/\1 = false/' /etc/postgresql-common/createcluster.conf
$APT install -y -qq --no-install-recommends postgresql >/dev/null
ls /usr/lib/postgresql/*/bin/postgres
