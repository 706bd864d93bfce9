#!/usr/bin/env bash
# Two test suites at once on one machine (issue: races under load): clones this checkout twice into a scratch folder,
# builds each clone's venv, then runs both suites at the same time -- each with its own kube-apiserver, the shared
# Kubernetes binaries (tools/k8s/build.sh holds a lock: a second caller waits, then finds them) -- and prints what it
# found: each suite's pytest tally, its failing tests, its wall time, and the host's load (sampled every 10 s).
# Usage: tools/two_suites.sh [PYTEST_ARGS...]   e.g. tools/two_suites.sh -k "06_studies/04_reproduce or 03_tracking/04_server"
# Each suite runs what `make test` runs (pytest -n ${TEST_WORKERS:-3} over tests/, vLLM aside); with no arguments the whole of it (on 2 cores: about twice the ~20 min of one suite).
# Leaves nothing running; the clones stay in $TWO_SUITES_DIR (default a fresh mktemp folder) for their logs.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=${TWO_SUITES_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/two-suites.XXXXXX")}
ARGS=("$@")
echo "two suites at once from $ROOT ($(git -C "$ROOT" rev-parse --short HEAD)) in $D; pytest args: ${ARGS[*]:-(all)}"
for i in 1 2; do
  rm -rf "$D/suite$i"; git clone -q "$ROOT" "$D/suite$i" || exit 2
  (cd "$D/suite$i" && make venv > "$D/venv$i.log" 2>&1) || { echo "suite $i: make venv failed, see $D/venv$i.log"; exit 2; }
done
"$ROOT/tools/k8s/build.sh" > "$D/k8s-build.log" 2>&1 || { echo "k8s build failed, see $D/k8s-build.log"; exit 2; }
"$ROOT/tools/install_chromium.sh" > /dev/null 2>&1 || echo "note: no Chromium; the browser tests will fail in both"
"$ROOT/tools/install_postgresql.sh" > /dev/null 2>&1 || echo "note: no PostgreSQL programs; the server tests will fail in both"
stop_all() { for i in 1 2; do "$ROOT/tools/k8s/stop.sh" "$D/k8s$i" > /dev/null 2>&1; done; kill "$SAMPLER" 2>/dev/null; }
trap stop_all EXIT
(while sleep 10; do cut -d' ' -f1 /proc/loadavg; done > "$D/load.txt") & SAMPLER=$!
T0=$SECONDS; PIDS=()
for i in 1 2; do
  WORKBENCH_K8S_WATCH_PID=$$ "$ROOT/tools/k8s/start.sh" "$D/k8s$i" > "$D/k8s-start$i.log" 2>&1 || echo "suite $i: kube-apiserver did not start ($D/k8s-start$i.log)"
  (cd "$D/suite$i" && S0=$SECONDS && WORKBENCH_KUBECONFIG="$D/k8s$i/kubeconfig" NBDEV_TEST_FLAGS="${NBDEV_TEST_FLAGS:-cluster slow}" \
     .venv/bin/pytest -n "${TEST_WORKERS:-3}" -p no:cacheprovider tests --ignore=tests/test_vllm.py "${ARGS[@]}" > "$D/suite$i.log" 2>&1; echo "rc=$? wall=$((SECONDS-S0))" >> "$D/suite$i.log") & PIDS+=($!)
done
wait "${PIDS[@]}"
echo "both suites ended after $((SECONDS - T0)) s; load (1-min) min/mean/max: $(sort -n "$D/load.txt" | awk '{s+=$1; a[NR]=$1} END {if (NR) printf "%.1f/%.1f/%.1f", a[1], s/NR, a[NR]; else print "-"}')"
bad=0
for i in 1 2; do
  echo "suite $i: $(grep -E '^(=+ )?[0-9]+ (passed|failed)|(passed|failed|error).* in [0-9.]+s' "$D/suite$i.log" | tail -1) ($(tail -1 "$D/suite$i.log"))"
  grep -E '^(FAILED|ERROR) ' "$D/suite$i.log" | sed "s/^/  suite $i: /"
  tail -1 "$D/suite$i.log" | grep -q '^rc=0' || bad=1
done
echo "logs: $D/suite1.log $D/suite2.log"
exit $bad
