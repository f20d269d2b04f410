#!/usr/bin/env bash
# The images' runtime base made from Debian packages, for machines where no registry answers (so
# `debian:bookworm-slim` cannot be pulled): `debootstrap --variant=minbase bookworm` with the packages the
# image's Dockerfile would install, trimmed like Debian's slim images, then `docker import`ed. Cached per
# machine (SVCNET_BASE_CACHE, default /var/cache/svcnet/base) as a tarball named by a hash of everything that
# went into it (this script, suite, mirror, architecture, packages), and as the image tag.
#
#   base-image.sh VARIANT     prints the image name (svcnet-base/VARIANT:<hash>), building what is missing;
#                             needs DOCKER_HOST (testing/engine/dockerd.sh) and root for debootstrap
# VARIANT: proxy (the tools svcnet-proxy runs) or controller (CA certificates only).
set -euo pipefail

variant=${1:?variant: proxy or controller}
SUITE=bookworm
MIRROR=${SVCNET_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${SVCNET_BASE_CACHE:-/var/cache/svcnet/base}
DOCKER=${DOCKER:-docker}

# Keep in step with the `apt-get install` lines of proxy/Dockerfile and cloud-controller/Dockerfile: the
# Dockerfiles install only what the base lacks, so a package missing here would need a network there.
case "$variant" in
proxy) packages="iptables nftables conntrack nfacct iproute2 kmod ca-certificates" ;;
controller) packages="ca-certificates" ;;
*) echo "base-image: unknown variant $variant" >&2; exit 2 ;;
esac

arch=$(dpkg --print-architecture)
key=$({ cat "$0"; echo "$SUITE $MIRROR $arch $packages"; } | sha256sum | cut -c1-16)
image="svcnet-base/$variant:$key"
tarball="$CACHE/$variant-$key.tar"

if "$DOCKER" image inspect "$image" >/dev/null 2>&1; then
  echo "$image"
  exit 0
fi

if [ ! -s "$tarball" ]; then
  command -v debootstrap >/dev/null || { echo "base-image: no debootstrap (bash testing/install-deps.sh)" >&2; exit 1; }
  mkdir -p "$CACHE"
  root=$(mktemp -d "$CACHE/rootfs.XXXXXX")
  trap 'rm -rf "$root" "$root.log"' EXIT
  echo "base-image: debootstrap $SUITE ($variant: $packages) from $MIRROR, about a minute" >&2
  include=$(tr ' ' ',' <<<"$packages")
  debootstrap --variant=minbase --include="$include" "$SUITE" "$root" "$MIRROR" >"$root.log" 2>&1 || {
    tail -n 30 "$root.log" >&2
    exit 1
  }
  # What Debian's slim images leave out, and what debootstrap copied from this machine.
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
    "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
    "$root"/var/log/* "$root"/tmp/* "$root"/root/.[!.]* 2>/dev/null || true
  find "$root/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  : >"$root/etc/resolv.conf"
  echo localhost >"$root/etc/hostname"
  # Debian's slim images keep docs and man pages out of later installs too.
  cat >"$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
CFG
  chmod 755 "$root"
  tar -C "$root" --numeric-owner -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  # Tarballs of earlier inputs are never used again.
  find "$CACHE" -maxdepth 1 -name "$variant-*.tar" ! -name "$variant-$key.tar" -delete
fi

"$DOCKER" import --change 'CMD ["bash"]' "$tarball" "$image" >/dev/null
echo "$image"
