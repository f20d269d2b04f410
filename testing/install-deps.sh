#!/usr/bin/env bash
# Installs the system tools svcnet's tests, lab and demo run that a fresh Debian/Ubuntu machine may lack
# (`make demo`, `make test`, `make e2e` and .ci/run call it; a no-op once they are there):
#   iptables (iptables-restore/-save, ip6tables), iproute2 (ip, network namespaces), conntrack, nfacct,
#   nftables (nft: the proxy's nftables mode),
#   docker.io + containerd + runc (the engine testing/engine/dockerd.sh starts in a namespace of its own for
#   `make images` and the image test; installed with service starts held by policy-rc.d, so no daemon
#   starts in the machine's own namespace), debootstrap (the images' base when no registry answers),
#   curl (the image test reaches the fake GCE inside a container's namespace with it),
#   gcc + libc6-dev and jq (the kind e2e's node image: a static pause, cri-base.json),
#   util-linux (setpriv: children die with their test; flock: one control-plane build at a time), make.
# cargo-deny is not here: only `make lint` needs it, and it builds it (install-cargo-deny.sh), so
# `make test` and `make demo` do not wait for its build.
# Go (for the control plane, testing/k8s) and gcloud (the demo's GCE listings) are not Debian packages
# of a usable version: they come with the machine image; this script only says when they are missing.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have iptables-restore || need+=(iptables)
have ip || need+=(iproute2)
have conntrack || need+=(conntrack)
have nfacct || need+=(nfacct)
have nft || need+=(nftables)
{ have setpriv && have flock; } || need+=(util-linux)
have make || need+=(make)
have dockerd || need+=(docker.io)
have containerd || need+=(containerd)
have runc || need+=(runc)
have debootstrap || need+=(debootstrap)
have curl || need+=(curl)
# The kind e2e's node image (testing/kind/node-image.sh): pause is compiled statically, cri-base.json made
# with jq.
have gcc || need+=(gcc libc6-dev)
have jq || need+=(jq)

if [ "${#need[@]}" -gt 0 ]; then
  echo "install-deps: installing ${need[*]}" >&2
  if ! have apt-get; then
    echo "install-deps: no apt-get here: install ${need[*]} by hand" >&2
    exit 1
  fi
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  # Installing docker.io must not start a daemon in the machine's own network namespace (bridges,
  # iptables rules): hold every service start with policy-rc.d (exit 101) unless the machine has one.
  held=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null
    "${sudo[@]}" chmod 755 /usr/sbin/policy-rc.d
    held=1
  fi
  trap '[ -z "$held" ] || "${sudo[@]}" rm -f /usr/sbin/policy-rc.d' EXIT
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi

have go || [ -x /usr/local/go/bin/go ] ||
  echo "install-deps: note: no Go toolchain (>= 1.25): testing/k8s cannot build the control plane" >&2
have gcloud || echo "install-deps: note: no gcloud: make demo's GCE listings need it" >&2
exit 0
