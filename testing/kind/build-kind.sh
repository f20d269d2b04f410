#!/usr/bin/env bash
# kind, pinned, built from the Go module proxy once per machine into a cache outside the repository
# (SVCNET_KIND_CACHE, default /var/cache/svcnet), keyed by the version and this recipe. Prints the path of the
# kind binary as the last line of stdout. Its module source (the base image's files that node-image.sh copies)
# stays in Go's module cache; `build-kind.sh src` prints that directory instead.
set -euo pipefail

KIND_VERSION=v0.33.0
command -v go >/dev/null 2>&1 || PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null 2>&1 || { echo "build-kind: no Go toolchain" >&2; exit 1; }
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false

if [ "${1:-}" = src ]; then
  GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'
  exit 0
fi

key=$(cat "$0" | sha256sum | cut -c1-12)
root=${SVCNET_KIND_CACHE:-/var/cache/svcnet}
dir="$root/kind-$KIND_VERSION-$key"
if [ -x "$dir/bin/kind" ]; then
  echo "$dir/bin/kind"
  exit 0
fi
mkdir -p "$root"
exec 9>"$root/.kind-build.lock"
flock 9
if [ ! -x "$dir/bin/kind" ]; then
  echo "build-kind: go install sigs.k8s.io/kind@$KIND_VERSION (about a minute)" >&2
  tmp="$dir.tmp.$$"
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/bin"
  GOBIN="$tmp/bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kind@$KIND_VERSION"
  rm -rf "$dir"
  mv "$tmp" "$dir"
fi
echo "$dir/bin/kind"
