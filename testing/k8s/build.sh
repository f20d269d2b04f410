#!/usr/bin/env bash
# Builds the pinned upstream control plane (etcd, kube-apiserver, kube-controller-manager, kube-proxy), the
# kubectl of the same release (the machine's may be outside the version skew policy), and what a kind node
# image needs beside them (kubelet, kubeadm, kube-scheduler; testing/kind/node-image.sh) and the e2e's workload
# (agnhost, upstream's e2e test image: its serve-hostname is the walkthrough's serve_hostname) from
# go.mod/go.sum beside this script into a cache outside the repository, keyed by the pinned versions and
# this recipe, and prints the bin directory as the last line of stdout. A second call reuses the cache.
#
#   testing/k8s/build.sh            # build if missing; print the bin dir
#   SVCNET_K8S_CACHE=DIR            # cache root (default /var/cache/svcnet)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
k8s_version=v1.34.12
etcd_version=v3.6.4

log() { echo "k8s-build: $*" >&2; }

# The machine image installs Go under /usr/local/go; a non-login shell may not have it on PATH.
command -v go >/dev/null 2>&1 || PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null 2>&1; then
  log "go not found: the recipe needs Go >= 1.25 (go.mod); the machine image ships it"
  exit 1
fi
# A toolchain download would be a hidden, unpinned input; the machine's Go must do.
export GOTOOLCHAIN=local
# Fail instead of silently re-resolving when go.mod/go.sum and the sources disagree.
export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=0

# The key changes with any pinned version or recipe change, so a stale build is never reused.
key="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-12)"
root="${SVCNET_K8S_CACHE:-/var/cache/svcnet}"
dir="$root/k8s-$k8s_version-etcd-$etcd_version-$key"
bins=(etcd kube-apiserver kube-controller-manager kube-proxy kubectl kubelet kubeadm kube-scheduler agnhost)

complete() {
  for b in "${bins[@]}"; do [ -x "$dir/bin/$b" ] || return 1; done
}

if complete; then
  echo "$dir/bin"
  exit 0
fi

mkdir -p "$root"
# Parallel tests (and make k8s beside them) must not build twice into the same place.
exec 9>"$root/.k8s-build.lock"
flock 9
if complete; then
  echo "$dir/bin"
  exit 0
fi

start=$(date +%s)
log "building Kubernetes $k8s_version and etcd $etcd_version into $dir (cold: several minutes)"
cd "$here"
go mod download

# What kubectl version shows: the module proxy carries no git commit, so the source's go.sum hash stands in
# for it, and the release's own publication time is the build date (reproducible across machines).
sum="$(go list -m -f '{{.Sum}}' k8s.io/kubernetes)"
date="$(go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)"
minor="${k8s_version#v1.}"
minor="${minor%%.*}"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitCommit=$sum -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
done
ldflags+=" -X go.etcd.io/etcd/api/v3/version.GitSHA=$etcd_version"

tmp="$dir.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp/bin"
trap 'rm -rf "$tmp"' EXIT
# One go build for all of them: shared packages compile once.
go build -trimpath -ldflags "$ldflags" -o "$tmp/bin/" \
  go.etcd.io/etcd/server/v3 \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-proxy \
  k8s.io/kubernetes/cmd/kubectl \
  k8s.io/kubernetes/cmd/kubelet \
  k8s.io/kubernetes/cmd/kubeadm \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/test/images/agnhost
# The etcd main package is the module root go.etcd.io/etcd/server/v3; go build names a /vN path after the
# element before it.
mv "$tmp/bin/server" "$tmp/bin/etcd"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
log "built in $(($(date +%s) - start)) s: $dir/bin"
echo "$dir/bin"
