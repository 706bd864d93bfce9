#!/usr/bin/env bash
# Restart the kube-apiserver that start.sh started in DIR, on the same port with the same certificates and etcd:
# an API-server outage for the fault tests (tests/test_faults.py). Usage: restart-apiserver.sh DIR [DOWN_S]
# Stops it (SIGTERM, then SIGKILL after 5 s), stays down DOWN_S seconds (default 2), starts it again, and waits
# until /readyz answers (at most 120 s). Prints how long the server was unreachable.
set -euo pipefail
D=${1:?usage: restart-apiserver.sh DIR [DOWN_S]}; DOWN=${2:-2}
[ -x "$D/apiserver.sh" ] || { echo "no $D/apiserver.sh: start the server with tools/k8s/start.sh" >&2; exit 2; }
SERVER=$(grep -o 'https://127.0.0.1:[0-9]*' "$D/kubeconfig" | head -n 1)
TOKEN=$(grep -o 'token: "[^"]*"' "$D/kubeconfig" | head -n 1 | cut -d'"' -f2)
t0=$(date +%s.%N)
pid=$(cat "$D/apiserver.pid"); kill "$pid" 2>/dev/null || true
for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
sleep "$DOWN"
setsid "$D/apiserver.sh" </dev/null >/dev/null 2>&1 &
echo $! > "$D/apiserver.pid"
for i in $(seq 1 1200); do
  if curl -sf --max-time 2 --cacert "$D/pki/apiserver.crt" -H "Authorization: Bearer $TOKEN" "$SERVER/readyz" >/dev/null 2>&1; then
    echo "apiserver restarted: unreachable for $(python3 -c "import time; print(round(time.time()-$t0, 1))") s"; exit 0; fi
  kill -0 "$(cat "$D/apiserver.pid")" 2>/dev/null || { echo "apiserver exited on restart" >&2; tail -20 "$D/apiserver.log" >&2; exit 1; }
  sleep 0.1
done
echo "apiserver not ready 120 s after restart" >&2; exit 1
