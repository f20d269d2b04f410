#!/usr/bin/env bash
# The e2e's workload image, made here for every machine (no registry needed): upstream's e2e test image
# program agnhost (built by testing/k8s from k8s.io/kubernetes v1.34.12's test/images/agnhost, VERSION 2.56),
# whose `serve-hostname` is the walkthrough's serve_hostname (it answers its pod name on :9376), plus Debian's
# static busybox for a shell (`sleep`, `sh`). Named svcnet-e2e/agnhost:2.56: upstream's
# registry.k8s.io/e2e-test-images/agnhost:2.56 runs the same agnhost but has no busybox.
#
#   workload-image.sh     prints the image name, building it when the engine (DOCKER_HOST) lacks it
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
DOCKER=${DOCKER:-docker}
CACHE=${SVCNET_KIND_CACHE:-/var/cache/svcnet}/kind-node
image=svcnet-e2e/agnhost:2.56

k8sbin=$(bash "$repo/testing/k8s/build.sh" | tail -n1)
key=$({ cat "$0"; echo "$k8sbin"; } | sha256sum | cut -c1-12)
if [ "$("$DOCKER" image inspect -f '{{index .Config.Labels "svcnet.key"}}' "$image" 2>/dev/null)" = "$key" ]; then
  echo "$image"
  exit 0
fi
mkdir -p "$CACHE"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
busybox="$CACHE/busybox-static"
if [ ! -x "$busybox" ]; then
  (cd "$work" && apt-get download -qq -o APT::Sandbox::User=root busybox-static >/dev/null)
  dpkg-deb -x "$work"/busybox-static_*.deb "$work/deb"
  install -m 0755 "$work/deb/bin/busybox" "$busybox"
fi
mkdir -p "$work/root/bin" "$work/root/tmp" "$work/root/etc"
chmod 1777 "$work/root/tmp"
install -m 0755 "$k8sbin/agnhost" "$work/root/agnhost"
install -m 0755 "$busybox" "$work/root/bin/busybox"
for t in sh cat sleep hostname; do ln -s busybox "$work/root/bin/$t"; done
tar -C "$work/root" --numeric-owner -c . |
  "$DOCKER" import --change 'ENV PATH=/bin' --change 'ENTRYPOINT ["/agnhost"]' \
    --change "LABEL svcnet.key=$key" - "$image" >/dev/null
echo "$image"
