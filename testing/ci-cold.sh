#!/usr/bin/env bash
# Runs CI as a brand-new machine would: `.ci/run` in a fresh clone of a commit, with empty caches of its own,
# so a green warm machine cannot hide a missing install step. Everything it builds or downloads lives under
# one temporary directory, removed at the end (also on failure or Ctrl-C):
#   CARGO_HOME (registry, git checkouts, the installed cargo-deny), CARGO_TARGET_DIR, GOMODCACHE, GOCACHE,
#   GOPATH, SVCNET_K8S_CACHE (the control plane), SVCNET_KIND_CACHE (kind and its node image),
#   SVCNET_BASE_CACHE (the images' debootstrap bases),
#   SVCNET_ENGINE_DATA (the container engine's images) and PIP_CACHE_DIR.
# It shares with the machine only the toolchains (Rust through the active rustup toolchain's own bin
# directory, so nothing installed into ~/.cargo/bin is seen, Go, Python) and the Debian packages.
#
#   testing/ci-cold.sh                      # .ci/run on HEAD
#   testing/ci-cold.sh --rev REV            # on another commit
#   testing/ci-cold.sh --rev REV -- make lint   # any command in the clone instead of .ci/run
#
# The log is kept outside the removed directory (its path is printed first and last). Run this before
# stopping whenever a change touches the build, the dependencies or the install scripts.
set -euo pipefail
# The whole script is one block, read before it runs: editing this file during a run (an hour) cannot
# change what the run does.
{
repo="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
rev=HEAD
cmd=(bash .ci/run)
while [ $# -gt 0 ]; do
  case "$1" in
    --rev) rev="$2"; shift 2 ;;
    --) shift; cmd=("$@"); break ;;
    *) echo "ci-cold: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ ${#cmd[@]} -gt 0 ] || { echo "ci-cold: empty command after --" >&2; exit 2; }
commit="$(git -C "$repo" rev-parse --verify "$rev^{commit}")"

tmp="${TMPDIR:-/tmp}"
root="$(mktemp -d "$tmp/svcnet-ci-cold.XXXXXX")"
log="$tmp/svcnet-ci-cold-$(date -u +%Y%m%dT%H%M%SZ)-${commit:0:8}.log"
cleanup() {
  # Runs as the EXIT trap: nothing in it may end the script early (set -e) or change its exit status.
  set +e
  # A mount left below the directory (an engine's, after a crash) is detached before anything is removed.
  grep -o " $root/[^ ]*" /proc/self/mounts 2>/dev/null | sort -r | while read -r m; do umount -l "$m"; done
  # Go writes its module cache read-only.
  chmod -R u+w "$root" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "ci-cold: log $log"
git clone -q --no-local "$repo" "$root/src"
git -C "$root/src" checkout -q --detach "$commit"

# Rust: the active toolchain's binaries directly (cargo, rustc, clippy, rustfmt), not ~/.cargo/bin, which
# also holds whatever `cargo install` put there on this machine (cargo-deny among them).
toolchain_bin="$(dirname "$(rustup which cargo)")"
export CARGO_HOME="$root/cargo-home"
mkdir -p "$CARGO_HOME/bin"
clean_path=""
IFS=: read -r -a parts <<<"$PATH"
for p in "${parts[@]}"; do
  case "$p" in
    "$HOME/.cargo/bin" | "${HOME}/.cargo/bin/") ;;
    *) clean_path="${clean_path:+$clean_path:}$p" ;;
  esac
done
command -v go >/dev/null 2>&1 || clean_path="$clean_path:/usr/local/go/bin"
export PATH="$CARGO_HOME/bin:$toolchain_bin:$clean_path"
export CARGO_TARGET_DIR="$root/target"
export GOPATH="$root/go" GOMODCACHE="$root/go/pkg/mod" GOCACHE="$root/go-build"
export SVCNET_K8S_CACHE="$root/svcnet-cache"
export SVCNET_BASE_CACHE="$root/svcnet-cache/base" SVCNET_ENGINE_DATA="$root/svcnet-cache/engine"
export SVCNET_KIND_CACHE="$root/svcnet-cache"
export PIP_CACHE_DIR="$root/pip-cache"
export CI=true

if cargo deny --version >/dev/null 2>&1; then
  echo "ci-cold: cargo-deny is visible before the run: the caches are not empty" >&2
  exit 1
fi

start=$SECONDS
echo "ci-cold: ${cmd[*]} at ${commit:0:12} in $root/src ($(date -u +%H:%M:%S) UTC)" | tee "$log"
rc=0
(cd "$root/src" && "${cmd[@]}") </dev/null 2>&1 | tee -a "$log" || rc=$?
took=$((SECONDS - start))
{
  echo "ci-cold: phases:"
  grep -E '^ci: phase .*(done|FAILED)' "$log" | sed 's/^/  /' || true
  echo "ci-cold: exit $rc after $((took / 60)) min $((took % 60)) s; log $log"
} | tee -a "$log"
exit "$rc"
}
