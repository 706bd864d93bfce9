#!/usr/bin/env bash
# Start etcd + kube-apiserver v1.20 (+ kube-controller-manager: namespace and garbage-collector controllers)
# on 127.0.0.1 only, for the workbench's `#| cluster` tests. Usage: start.sh [DIR]  (default $TMPDIR/workbench-k8s)
# Writes DIR/kubeconfig (admin) and DIR/kubeconfig-noaccess (an authenticated user with no RBAC rights),
# then installs the real DynamoGraphDeployment CRD (v1.20-compatible form) unless WORKBENCH_K8S_NO_CRD=1.
# No kubelet/scheduler: nothing runs pods, so tests play the Dynamo operator by patching .status.
# WORKBENCH_K8S_WATCH_PID=PID makes them stop when that process exits.
# Ports are picked free unless ETCD_PORT / API_PORT are set. Stop with stop.sh DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
D=${1:-${D:-${TMPDIR:-/tmp}/workbench-k8s}}; BIN=${WORKBENCH_K8S_BIN:-/var/cache/workbench-k8s/bin}
PY=${WORKBENCH_PY:-$ROOT/.venv/bin/python}; [ -x "$PY" ] || PY=python3
[ -x "$BIN/kube-apiserver" ] || { echo "no kube-apiserver in $BIN: run tools/k8s/build.sh first" >&2; exit 2; }
command -v etcd >/dev/null || { echo "no etcd on PATH: run tools/k8s/build.sh (installs etcd-server)" >&2; exit 2; }
if [ -f "$D/apiserver.pid" ] && kill -0 "$(cat "$D/apiserver.pid")" 2>/dev/null; then
  echo "already running: KUBECONFIG=$D/kubeconfig"; exit 0; fi
freeport() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }
ETCD_PORT=${ETCD_PORT:-$(freeport)}; PEER_PORT=${PEER_PORT:-$(freeport)}; API_PORT=${API_PORT:-$(freeport)}
rm -rf "$D"; mkdir -p "$D/etcd-data" "$D/pki"; cd "$D/pki"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout apiserver.key -out apiserver.crt \
  -subj "/CN=kube-apiserver" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" 2>/dev/null
openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
TOKEN=$(python3 -c 'import secrets;print(secrets.token_hex(16))'); TOKEN2=$(python3 -c 'import secrets;print(secrets.token_hex(16))')
printf '%s,admin,admin,system:masters\n%s,nobody,nobody\n' "$TOKEN" "$TOKEN2" > tokens.csv; chmod 600 tokens.csv
# --max-request-bytes: the real DynamoGraphDeployment CRD is ~1.6 MB, above etcd's 1.5 MiB default.
etcd --name wb --data-dir "$D/etcd-data" --max-request-bytes=$((8*1024*1024)) \
  --listen-client-urls http://127.0.0.1:$ETCD_PORT --advertise-client-urls http://127.0.0.1:$ETCD_PORT \
  --listen-peer-urls http://127.0.0.1:$PEER_PORT --initial-advertise-peer-urls http://127.0.0.1:$PEER_PORT \
  --initial-cluster wb=http://127.0.0.1:$PEER_PORT --log-level warn > "$D/etcd.log" 2>&1 &
echo $! > "$D/etcd.pid"
# The API server's command goes into DIR/apiserver.sh, so restart-apiserver.sh can restart it (same port, certificates, etcd).
cat > "$D/apiserver.sh" <<APISERVER
#!/usr/bin/env bash
cd "$D/pki"
exec "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:$ETCD_PORT \\
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=$API_PORT --insecure-port=0 \\
  --tls-cert-file=apiserver.crt --tls-private-key-file=apiserver.key --cert-dir="$D/pki" \\
  --token-auth-file=tokens.csv --authorization-mode=RBAC \\
  --service-account-key-file=sa.pub --service-account-signing-key-file=sa.key \\
  --service-account-issuer=https://kubernetes.default.svc --api-audiences=https://kubernetes.default.svc \\
  --service-cluster-ip-range=10.96.0.0/24 --endpoint-reconciler-type=none \\
  --disable-admission-plugins=ServiceAccount --v=1 >> "$D/apiserver.log" 2>&1
APISERVER
chmod +x "$D/apiserver.sh"
"$D/apiserver.sh" &
echo $! > "$D/apiserver.pid"
kc() { cat > "$2" <<KC
apiVersion: v1
kind: Config
clusters: [{name: workbench-local, cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$D/pki/apiserver.crt"}}]
users: [{name: u, user: {token: "$1"}}]
contexts: [{name: workbench-local, context: {cluster: workbench-local, user: u, namespace: default}}]
current-context: workbench-local
KC
chmod 600 "$2"; }
kc "$TOKEN" "$D/kubeconfig"; kc "$TOKEN2" "$D/kubeconfig-noaccess"
ok=0
for i in $(seq 1 600); do
  if curl -sf --cacert "$D/pki/apiserver.crt" -H "Authorization: Bearer $TOKEN" https://127.0.0.1:$API_PORT/readyz >/dev/null 2>&1; then ok=1; break; fi
  kill -0 "$(cat "$D/apiserver.pid")" 2>/dev/null || break
  sleep 0.1
done
if [ $ok != 1 ]; then echo "apiserver not ready" >&2; tail -30 "$D/apiserver.log" >&2; "$HERE/stop.sh" "$D"; exit 1; fi
if [ -x "$BIN/kube-controller-manager" ] && [ "${KCM:-1}" = 1 ]; then
  "$BIN/kube-controller-manager" --kubeconfig="$D/kubeconfig" --controllers=namespace,garbagecollector,pvc-protection \
    --leader-elect=false --secure-port=0 --port=0 --use-service-account-credentials=false --v=1 > "$D/kcm.log" 2>&1 &
  echo $! > "$D/kcm.pid"
fi
# WORKBENCH_K8S_WATCH_PID=PID: stop everything when that process exits (no orphans if a test run dies).
if [ -n "${WORKBENCH_K8S_WATCH_PID:-}" ]; then
  ( while kill -0 "$WORKBENCH_K8S_WATCH_PID" 2>/dev/null; do sleep 1; done; "$HERE/stop.sh" "$D" ) >/dev/null 2>&1 </dev/null &
  echo $! > "$D/watch.pid"
fi
if [ "${WORKBENCH_K8S_NO_CRD:-0}" != 1 ]; then
  "$PY" -c "import sys; from workbench.targets.k8s.cluster import connect, install_dgd_crd; install_dgd_crd(connect(sys.argv[1]))" "$D/kubeconfig" \
    || { echo "CRD install failed" >&2; "$HERE/stop.sh" "$D"; exit 1; }
fi
echo "ready: KUBECONFIG=$D/kubeconfig"
