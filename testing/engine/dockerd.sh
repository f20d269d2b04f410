#!/usr/bin/env bash
# A Docker engine the project starts itself, for `make images`, the image test and the kind e2e run, on
# machines with no daemon of their own. dockerd (Debian's docker.io, with its own containerd) runs inside a
# network namespace made for it (`svcnet-engine-<owner pid>-<n>`), never linked to the root namespace, with
# bridge, iptables and ip-forwarding off: it cannot touch the machine's own network. Its socket, exec root
# and pid file live in /run/svcnet-engine/<name>; its data root (images, build cache) in a per-machine cache
# (SVCNET_ENGINE_DATA, default /var/cache/svcnet/engine), so images stay between runs. One engine at a time
# uses that data root: dockerd holds a lock on it for as long as it (or anything it started) lives.
#
#   dockerd.sh run CMD...         start an engine, run CMD with DOCKER_HOST set, stop it on every path
#   dockerd.sh start [OWNER_PID]  start one owned by OWNER_PID (default: the caller), print its name, then
#                                 `DOCKER_HOST=...` on a second line; `stop NAME` ends it
#   dockerd.sh stop NAME          remove its containers, stop dockerd, kill what is left, delete the namespace
#   dockerd.sh sweep              stop every engine whose owner is gone (a SIGKILLed test or make)
#
# Facts of the development machines this copes with: `ip netns exec` remounts /sys, so the cgroup v1
# hierarchies are mounted again inside; the capability bounding set lacks CAP_SYS_RESOURCE, so containers run
# through runc-wrapper.sh (registered as the default runtime), which removes it from each OCI spec; a negative
# oom_score_adj is refused, so dockerd keeps 0.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
RUN_ROOT=${SVCNET_ENGINE_RUN:-/run/svcnet-engine}
DATA=${SVCNET_ENGINE_DATA:-/var/cache/svcnet/engine}
PREFIX=svcnet-engine-

log() { echo "engine: $*" >&2; }

need_root() {
  [ "$(id -u)" -eq 0 ] || { log "needs root (network namespaces, dockerd)"; exit 1; }
  for t in dockerd containerd runc ip flock python3; do
    command -v "$t" >/dev/null 2>&1 || { log "missing $t (bash testing/install-deps.sh)"; exit 1; }
  done
}

# The docker CLI that matches this dockerd: Debian's, when a newer one sits first on PATH.
docker_cli() {
  if [ -x /usr/bin/docker ]; then echo /usr/bin/docker; else command -v docker; fi
}

# Kills every process of engine NAME and deletes what it made. Safe to call on a half-started engine.
stop() {
  # The name becomes paths that are deleted: only ours.
  [[ $1 =~ ^${PREFIX}[0-9]+-[0-9]+$ ]] || { log "not an engine name: $1"; return 1; }
  local name=$1 dir="$RUN_ROOT/$1" ns=$1 sock="unix://$RUN_ROOT/$1/docker.sock" cli pid
  cli=$(docker_cli)
  if [ -S "$dir/docker.sock" ]; then
    local ids
    ids=$(timeout 20 "$cli" -H "$sock" ps -aq 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -z "$ids" ] || timeout 60 "$cli" -H "$sock" rm -f $ids >/dev/null 2>&1 || true
  fi
  pid=$(cat "$dir/dockerd.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; then
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  fi
  # Whatever is left in the namespace (dockerd, containerd, shims), then what is left in its cgroups
  # (container processes live in namespaces of their own).
  if [ -e "/run/netns/$ns" ]; then
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  fi
  local cg
  for cg in /sys/fs/cgroup/*/"$name"; do
    [ -d "$cg" ] || continue
    find "$cg" -name tasks -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  done
  sleep 0.2
  for cg in /sys/fs/cgroup/*/"$name"; do
    [ -d "$cg" ] && find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$dir"
}

sweep() {
  local d name owner
  for d in "$RUN_ROOT"/"$PREFIX"*; do
    [ -d "$d" ] || continue
    name=$(basename "$d")
    owner=$(cat "$d/owner" 2>/dev/null || true)
    if [ -z "$owner" ] || [ ! -d "/proc/$owner" ]; then
      log "removing $name (its owner ${owner:-?} is gone)"
      stop "$name"
    fi
  done
  # A namespace whose state directory is gone (killed between the two steps).
  for name in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX" || true); do
    [ -d "$RUN_ROOT/$name" ] || { log "removing namespace $name (no state)"; stop "$name"; }
  done
}

start() {
  local owner=$1 name dir ns n=0
  need_root
  sweep
  mkdir -p "$RUN_ROOT" "$DATA"
  while :; do
    name="$PREFIX$owner-$n"
    mkdir "$RUN_ROOT/$name" 2>/dev/null && break
    n=$((n + 1))
  done
  dir="$RUN_ROOT/$name"
  ns=$name
  echo "$owner" >"$dir/owner"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  # Hierarchies to mount again inside, as the host has them (`cpu`, `name=systemd`, ...).
  local cgroups
  cgroups=$(awk '$3 == "cgroup" {print $4}' /proc/self/mounts | tr ',' '\n' |
    grep -Ev '^(rw|ro|relatime|nosuid|nodev|noexec)$' | paste -sd' ' || true)
  local inner
  # shellcheck disable=SC2016
  inner='set -e
    if [ -n "$CGROUPS" ]; then
      mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup
      for c in $CGROUPS; do
        d=/sys/fs/cgroup/${c#name=}
        mkdir -p "$d"
        mount -t cgroup -o "$c" cgroup "$d"
      done
    fi
    exec dockerd "$@"'
  # flock: the data root is this engine's while dockerd or any process it started lives (they inherit
  # the lock); another engine waits for it.
  CGROUPS=$cgroups setsid flock -w 1200 "$DATA/lock" ip netns exec "$ns" sh -c "$inner" sh \
    --data-root "$DATA/docker" \
    --exec-root "$dir/exec" \
    --pidfile "$dir/dockerd.pid" \
    --host "unix://$dir/docker.sock" \
    --bridge none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
    --storage-driver overlay2 \
    --cgroup-parent "/$name" \
    --oom-score-adjust 0 \
    --add-runtime "svcnet-runc=$here/runc-wrapper.sh" --default-runtime svcnet-runc \
    >"$dir/dockerd.log" 2>&1 </dev/null &
  local cli
  cli=$(docker_cli)
  # Up to the lock's wait and then some: another engine may hold the data root.
  for _ in $(seq 1 2600); do
    if [ -S "$dir/docker.sock" ] && "$cli" -H "unix://$dir/docker.sock" version >/dev/null 2>&1; then
      echo "$name"
      echo "DOCKER_HOST=unix://$dir/docker.sock"
      return 0
    fi
    if ! kill -0 $! 2>/dev/null; then break; fi
    sleep 0.5
  done
  log "dockerd did not come up; its log:"
  tail -n 30 "$dir/dockerd.log" >&2 || true
  stop "$name"
  return 1
}

cmd=${1:-}
shift || true
case "$cmd" in
start) start "${1:-$PPID}" ;;
stop) stop "${1:?engine name}" ;;
sweep) sweep ;;
run)
  [ $# -gt 0 ] || { log "run: no command"; exit 2; }
  out=$(start $$)
  name=$(head -n1 <<<"$out")
  trap 'stop "$name"' EXIT
  trap 'exit 130' INT TERM
  export "$(tail -n1 <<<"$out")"
  DOCKER=$(docker_cli)
  export DOCKER
  "$@"
  ;;
*)
  sed -n '2,16p' "$0" >&2
  exit 2
  ;;
esac
