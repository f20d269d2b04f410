#!/usr/bin/env bash
# `make images`: builds svcnet-proxy and svcnet-cloud-controller images from proxy/Dockerfile and
# cloud-controller/Dockerfile, one command on any machine:
# - engine: the machine's own Docker daemon when one answers (DOCKER_HOST or the default socket), else one
#   started for this run in a network namespace of its own (testing/engine/dockerd.sh; needs root);
# - way: "registry" when debian:bookworm-slim can be pulled (the Dockerfiles' own bases, the binaries built
#   in the Rust image), else "local": Debian bases made by debootstrap (testing/engine/base-image.sh, cached
#   per machine) and the binaries built by cargo here (release), copied in.
# Prints each image's name and size. Settings (environment):
#   IMAGE_PREFIX (svcnet), IMAGE_TAG (dev)      names: $IMAGE_PREFIX/svcnet-proxy:$IMAGE_TAG, ...
#   SVCNET_IMAGES_MODE=auto|registry|local      force a way (default auto)
#   SVCNET_IMAGE_BINARIES=DIR                   local way: take the binaries from DIR instead of building
#                                               them (the image test passes the debug ones cargo test built)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
PREFIX=${IMAGE_PREFIX:-svcnet}
TAG=${IMAGE_TAG:-dev}
MODE=${SVCNET_IMAGES_MODE:-auto}
DOCKER=${DOCKER:-docker}
export DOCKER

# release_binaries: builds both binaries (release) and prints their directory.
release_binaries() {
  cargo build --release --locked -p svcnet-proxy -p svcnet-cloud-controller --manifest-path "$repo/Cargo.toml" >&2
  echo "$(cd "$repo" && cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release"
}

if [ -z "${SVCNET_ENGINE_STARTED:-}" ] && ! timeout 20 "$DOCKER" info >/dev/null 2>&1; then
  # That engine has no network at all, so no registry: the local way, with the binaries built first
  # (the engine's data root is locked while it runs).
  [ "$MODE" != registry ] || { echo "images: registry way asked for, but no Docker daemon answers" >&2; exit 1; }
  export SVCNET_IMAGES_MODE=local
  SVCNET_IMAGE_BINARIES=${SVCNET_IMAGE_BINARIES:-$(release_binaries)}
  export SVCNET_IMAGE_BINARIES
  echo "images: no Docker daemon answers; starting one in a network namespace (testing/engine/dockerd.sh)" >&2
  SVCNET_ENGINE_STARTED=1 exec bash "$here/dockerd.sh" run bash "$0" "$@"
fi

if [ "$MODE" = auto ]; then
  if timeout 120 "$DOCKER" pull -q debian:bookworm-slim >/dev/null 2>&1; then MODE=registry; else MODE=local; fi
  echo "images: ${MODE} build (a registry $([ "$MODE" = registry ] && echo answers || echo "does not answer"))" >&2
fi

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n1)
revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null || true)
labels=(--build-arg "VERSION=$version" --build-arg "REVISION=$revision" --build-arg "SOURCE=${IMAGE_SOURCE:-}")

# build NAME DOCKERFILE BASE_VARIANT
build() {
  local name=$1 dockerfile=$2 variant=$3 image="$PREFIX/$1:$TAG"
  if [ "$MODE" = registry ]; then
    # The daemon's own builder; its progress (the cargo build) on stderr.
    "$DOCKER" build "${labels[@]}" -f "$repo/$dockerfile" -t "$image" "$repo" >&2
  else
    local base ctx
    base=$(bash "$here/base-image.sh" "$variant")
    ctx=$(mktemp -d)
    cp "$bins/$name" "$ctx/$name"
    # The classic builder: it resolves FROM against the local images without asking a registry.
    DOCKER_BUILDKIT=0 "$DOCKER" build -q "${labels[@]}" --build-arg "BASE=$base" --build-arg "BUILDER=$base" \
      --build-arg PREBUILT=1 -f "$repo/$dockerfile" -t "$image" "$ctx" >/dev/null || { rm -rf "$ctx"; return 1; }
    rm -rf "$ctx"
  fi
  local bytes
  bytes=$("$DOCKER" image inspect -f '{{.Size}}' "$image")
  echo "$image $((bytes / 1000000)) MB"
}

if [ "$MODE" = local ]; then
  bins=${SVCNET_IMAGE_BINARIES:-$(release_binaries)}
fi

build svcnet-proxy proxy/Dockerfile proxy
build svcnet-cloud-controller cloud-controller/Dockerfile controller

# The engine's data root is kept between runs: drop what no tag names any more (earlier builds of these
# images) and bases made from earlier inputs.
if [ "$MODE" = local ]; then
  for variant in proxy controller; do
    current=$(bash "$here/base-image.sh" "$variant")
    for old in $("$DOCKER" image ls --format '{{.Repository}}:{{.Tag}}' "svcnet-base/$variant"); do
      [ "$old" = "$current" ] || "$DOCKER" rmi "$old" >/dev/null 2>&1 || true
    done
  done
fi
"$DOCKER" image prune -f >/dev/null 2>&1 || true
