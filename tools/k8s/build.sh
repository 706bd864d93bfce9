#!/usr/bin/env bash
# Build kube-apiserver (+ kube-controller-manager) v1.20.2 offline from Debian bookworm's `kubernetes`
# SOURCE package, for the workbench's `#| cluster` tests. Caches the binaries OUTSIDE the repo at
# $WORKBENCH_K8S_BIN (default /var/cache/workbench-k8s/bin) and is a no-op when they (and etcd) exist.
# Takes 6-9 min on 2 cores, ~1.4 GB RSS peak. Needs root (apt-get) or the tools already installed.
set -euo pipefail
BIN=${WORKBENCH_K8S_BIN:-/var/cache/workbench-k8s/bin}
W=${WORKBENCH_K8S_BUILD:-/var/cache/workbench-k8s/build}
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
# One build at a time: a second caller (another test run on this machine) waits for the lock, then finds the binaries.
mkdir -p "$(dirname "$BIN")"
exec 9>"$(dirname "$BIN")/.build.lock"
if ! flock -n 9; then echo "k8s harness: another build holds $(dirname "$BIN")/.build.lock; waiting for it"; flock 9; fi
need_pkgs() { for c in etcd openssl curl; do command -v "$c" >/dev/null || return 0; done; return 1; }
if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-controller-manager" ] && ! need_pkgs; then
  echo "k8s harness: binaries present in $BIN (skip build)"; exit 0
fi
if need_pkgs; then
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server openssl curl >/dev/null \
    || { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server openssl curl >/dev/null; }
fi
if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-controller-manager" ]; then
  echo "k8s harness: binaries present in $BIN (skip build)"; exit 0
fi
t0=$(date +%s)
mkdir -p "$W/lists/partial" "$BIN"; cd "$W"
# Private deb-src list derived from the system's own Debian archive entry: the system apt config is untouched.
URI=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$URI" ] || URI=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list)
echo "deb-src $URI bookworm main" > src.list
APTO="-o Dir::Etc::SourceList=$W/src.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$W/lists"
ls kubernetes_*.orig.tar.gz >/dev/null 2>&1 || {
  apt-get $APTO update -qq
  apt-get $APTO source --download-only kubernetes 2>&1 | grep -v 'Download is performed unsandboxed' || true; }
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go rsync make \
    golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev >/dev/null \
  || { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       golang-go rsync make golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev >/dev/null; }
rm -rf kubernetes-1.20.2; tar xzf kubernetes_*.orig.tar.gz; cd kubernetes-1.20.2
# v1.20 vendors reflect2 v1.0.1, which segfaults on the first custom-object request when built with Go >= 1.18:
# swap in Debian's reflect2 1.0.2 and json-iterator 1.1.12.
for pkg in github.com/modern-go/reflect2 github.com/json-iterator/go; do
  rm -rf "vendor/$pkg"; mkdir -p "vendor/$pkg"
  find "/usr/share/gocode/src/$pkg" -maxdepth 1 -type f \( -name '*.go' -o -name '*.s' -o -name LICENSE \) ! -name '*_test.go' -exec cp {} "vendor/$pkg/" \;
done
export CGO_ENABLED=0 GOPROXY=off GOFLAGS= HOME=${HOME:-/root}
make WHAT="cmd/kube-apiserver cmd/kube-controller-manager" GOLDFLAGS="-s -w"
# Install atomically so an interrupted build never leaves a half-written binary that the skip check trusts.
for b in kube-apiserver kube-controller-manager; do cp "_output/bin/$b" "$BIN/.$b.tmp"; mv "$BIN/.$b.tmp" "$BIN/$b"; done
cd "$W"; rm -rf kubernetes-1.20.2   # keep the source tarball, drop the 1+ GB tree
"$BIN/kube-apiserver" --version
echo "k8s harness: built in $(( $(date +%s) - t0 )) s -> $BIN"
