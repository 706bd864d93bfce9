#!/usr/bin/env bash
# Stop what start.sh started in DIR (default $TMPDIR/workbench-k8s), by PID file only; idempotent.
D=${1:-${D:-${TMPDIR:-/tmp}/workbench-k8s}}
# The watcher (start.sh WORKBENCH_K8S_WATCH_PID) is our parent when it is the one stopping things.
if [ -f "$D/watch.pid" ]; then w=$(cat "$D/watch.pid"); [ "$w" != "$PPID" ] && kill "$w" 2>/dev/null; rm -f "$D/watch.pid"; fi
for p in kcm apiserver etcd; do [ -f "$D/$p.pid" ] && kill "$(cat "$D/$p.pid")" 2>/dev/null; done
for p in kcm apiserver etcd; do
  if [ -f "$D/$p.pid" ]; then
    pid=$(cat "$D/$p.pid"); for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    rm -f "$D/$p.pid"
  fi
done
rm -rf "$D/etcd-data"
true
