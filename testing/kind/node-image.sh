#!/usr/bin/env bash
# A kind node image made here, for machines where no registry answers (kindest/node cannot be pulled and
# `kind build node-image` needs one): Debian bookworm (debootstrap) with the packages kind's base image
# installs, kind's own base-image files (from the pinned kind module), kubelet/kubeadm/kubectl from the pinned
# Kubernetes recipe (testing/k8s), and the control-plane images kubeadm runs already in containerd's k8s.io
# namespace. Cached per machine (SVCNET_KIND_CACHE, default /var/cache/svcnet; kind-node/) as a tarball named
# by a hash of everything that went into it, and as the image tag.
#
#   node-image.sh key    prints the cache key alone
#   node-image.sh        prints the image name (svcnet-kind/node:v1.34.12-<hash>), building what is missing;
#                        needs DOCKER_HOST (testing/engine/dockerd.sh), root (debootstrap) and Go
#
# Differences from kindest/node, each forced by this machine or by what can be built here:
# - Debian's containerd 1.6 and runc (kind builds containerd 2.x): config version 2, `restrict_oom_score_adj`
#   (the sandbox cannot lower oom_score_adj), sandbox image pause:3.10.1 (kubeadm 1.34's).
# - No kindnetd image: /kind/bin/svcnet-cni.sh (a systemd unit) writes a ptp + host-local CNI config for the
#   node's podCIDR and routes the other nodes' podCIDRs to them, which is what kindnetd does.
# - etcd is v3.6.4 (the recipe's pin), tagged registry.k8s.io/etcd:3.6.4-0; the cluster config points kubeadm
#   at that tag (testing/kind/cluster.sh). coredns v1.12.1 is built from the Go module proxy; pause from the
#   pause.c the kubernetes module ships, linked statically.
# - No crictl (not packaged in bookworm): `ctr -n k8s.io` does its jobs.
# - kube-proxy's image carries the node's Debian iptables (nft and legacy), conntrack and nft with their
#   libraries (upstream's is distroless-iptables).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
ROOT=${SVCNET_KIND_CACHE:-/var/cache/svcnet}
CACHE=$ROOT/kind-node
DOCKER=${DOCKER:-docker}
SUITE=bookworm
MIRROR=${SVCNET_DEBIAN_MIRROR:-http://deb.debian.org/debian}
K8S=v1.34.12
COREDNS=v1.12.1
PAUSE=3.10.1
ETCD_TAG=3.6.4-0
packages="systemd dbus containerd runc containernetworking-plugins iptables nftables conntrack iproute2 ethtool
  mount util-linux kmod socat ebtables ipset jq procps pigz fuse-overlayfs e2fsprogs libseccomp2 bash
  ca-certificates curl"
packages=$(echo $packages)

log() { echo "node-image: $*" >&2; }
command -v go >/dev/null 2>&1 || PATH="$PATH:/usr/local/go/bin"
export GOTOOLCHAIN=local

k8sbin=$(bash "$repo/testing/k8s/build.sh" | tail -n1)
kindsrc=$(bash "$here/build-kind.sh" src | tail -n1)
arch=$(dpkg --print-architecture)
# Everything the image is made of: this script and the CNI helper, the package set, the k8s build (its
# directory name carries the recipe's hash), the kind module, coredns' version.
key=$({ cat "$0" "$here/svcnet-cni.sh"; echo "$SUITE $MIRROR $arch $packages $k8sbin $kindsrc $COREDNS"; } |
  sha256sum | cut -c1-16)
image="svcnet-kind/node:$K8S-$key"
tarball="$CACHE/node-$key.tar"
[ "${1:-}" != key ] || { echo "$key"; exit 0; }

if "$DOCKER" image inspect "$image" >/dev/null 2>&1; then
  echo "$image"
  exit 0
fi

# build_coredns DIR: coredns from the Go module proxy into DIR, cached beside the node images.
build_coredns() {
  local out="$ROOT/coredns-$COREDNS"
  if [ ! -x "$out/coredns" ]; then
    log "building coredns $COREDNS from the Go module proxy"
    GOBIN="$out.tmp" CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install -trimpath -ldflags "-s -w" \
      "github.com/coredns/coredns@$COREDNS" >&2
    rm -rf "$out"
    mv "$out.tmp" "$out"
  fi
  echo "$out/coredns"
}

# image_tar NAME ENTRYPOINT_JSON FILE... : a one-layer image NAME holding FILEs (dest=src pairs), saved as
# a docker archive in $work/images for containerd to import.
image_tar() {
  local name=$1 entry=$2 dir pair
  shift 2
  dir=$(mktemp -d "$work/img.XXXXXX")
  mkdir -p "$dir/etc/ssl/certs" "$dir/tmp"
  chmod 1777 "$dir/tmp"
  cp /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/"
  for pair in "$@"; do
    mkdir -p "$dir/$(dirname "${pair%%=*}")"
    cp "${pair#*=}" "$dir/${pair%%=*}"
  done
  tar -C "$dir" --numeric-owner -c . |
    "$DOCKER" import --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
      --change "ENTRYPOINT $entry" - "$name" >/dev/null
  "$DOCKER" save "$name" -o "$work/images/$(echo "$name" | tr '/:' '__').tar"
  "$DOCKER" rmi "$name" >/dev/null
  rm -rf "$dir"
}

build_images() {
  mkdir -p "$work/images"
  local b coredns
  coredns=$(build_coredns)
  gcc -Os -static -DVERSION="v$PAUSE" -o "$work/pause" \
    "$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S/build/pause/linux/pause.c"
  strip "$work/pause"
  for b in kube-apiserver kube-controller-manager kube-scheduler; do
    image_tar "registry.k8s.io/$b:$K8S" '[]' "usr/local/bin/$b=$k8sbin/$b"
  done
  image_tar "registry.k8s.io/etcd:$ETCD_TAG" '[]' "usr/local/bin/etcd=$k8sbin/etcd"
  image_tar "registry.k8s.io/coredns/coredns:$COREDNS" '["/coredns"]' "coredns=$coredns"
  image_tar "registry.k8s.io/pause:$PAUSE" '["/pause"]' "pause=$work/pause"
}

# kube_proxy_image: kubeadm's kube-proxy image with what its iptables mode runs (upstream's is
# distroless-iptables): the node's own Debian iptables (nft and legacy, IPv4 and IPv6, its alternatives
# links and extensions), conntrack and nft, with the libraries they load, taken from the assembled rootfs.
kube_proxy_image() {
  local dir f lib real triplet
  triplet=$(cd "$root/usr/lib" && ls -d -- *-linux-gnu* | head -n1)
  dir=$(mktemp -d "$work/kp.XXXXXX")
  # Merged /usr, as the rootfs (and so the binaries' interpreter path /lib64/...) has it.
  mkdir -p "$dir/usr/bin" "$dir/usr/sbin" "$dir/usr/lib" "$dir/usr/lib64"
  for f in bin sbin lib lib64; do ln -s "usr/$f" "$dir/$f"; done
  (cd "$root" && cp -a --parents usr/sbin/iptables* usr/sbin/ip6tables* usr/sbin/xtables-*-multi \
    usr/sbin/conntrack usr/sbin/nft etc/alternatives/iptables* etc/alternatives/ip6tables* \
    "usr/lib/$triplet/xtables" "$dir/")
  for f in $(cd "$dir" && find usr -type f); do
    for lib in $(chroot "$root" ldd "/$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
      # Where the library really lives (the rootfs' /lib is a link), under the name the loader asks for.
      real=$(chroot "$root" readlink -f "$(dirname "$lib")")
      [ -e "$dir$real/$(basename "$lib")" ] || { mkdir -p "$dir$real"; cp -L "$root$lib" "$dir$real/"; }
    done
  done
  mkdir -p "$dir/etc/ssl/certs" "$dir/tmp" "$dir/usr/local/bin"
  chmod 1777 "$dir/tmp"
  install -m 0755 "$k8sbin/kube-proxy" "$dir/usr/local/bin/kube-proxy"
  chroot "$dir" /usr/sbin/iptables --version >&2
  chroot "$dir" /usr/sbin/conntrack --version >&2
  tar -C "$dir" --numeric-owner -c . |
    "$DOCKER" import --change 'ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin' --change 'ENTRYPOINT []' - \
      "registry.k8s.io/kube-proxy:$K8S" >/dev/null
  "$DOCKER" save "registry.k8s.io/kube-proxy:$K8S" -o "$work/images/registry.k8s.io_kube-proxy_$K8S.tar"
  "$DOCKER" rmi "registry.k8s.io/kube-proxy:$K8S" >/dev/null
  rm -rf "$dir"
}

# import_images: containerd (the machine's, the same Debian build as the node's) unpacks the images into
# the node's /var/lib/containerd, in a network namespace of its own that vanishes with it.
import_images() {
  local state="$work/containerd-state" sock
  sock="$state/containerd.sock"
  mkdir -p "$root/var/lib/containerd" "$state"
  cat >"$work/containerd.toml" <<TOML
version = 2
root = "$root/var/lib/containerd"
state = "$state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$sock"
TOML
  unshare --net --fork --kill-child sh -c '
    containerd --config "$1" >"$2/containerd.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do ctr -a "$3" version >/dev/null 2>&1 && break; sleep 0.1; done
    for t in "$2"/images/*.tar; do
      ctr -a "$3" -n k8s.io images import --snapshotter overlayfs "$t" >/dev/null || exit 1
    done
    ctr -a "$3" -n k8s.io images ls -q
    kill "$pid"; wait "$pid" || true' sh "$work/containerd.toml" "$work" "$sock" >&2
}

assemble() {
  local files="$kindsrc/images/base/files"
  tar -C "$root" -xf "$rootfs"
  # kind's base image files, as its Dockerfile copies them.
  mkdir -p "$root/kind/bin" "$root/etc/systemd/system/kubelet.service.d" "$root/LICENSES"
  install -m 0755 "$files"/usr/local/bin/* "$root/usr/local/bin/"
  install -m 0755 "$files"/kind/bin/* "$here/svcnet-cni.sh" "$root/kind/bin/"
  install -m 0644 "$files/kind/README.txt" "$root/kind/"
  install -m 0644 "$files/etc/crictl.yaml" "$root/etc/"
  install -m 0644 -D "$files/etc/containerd/config.toml" "$root/etc/containerd/config.toml"
  install -m 0644 "$files"/etc/default/* "$root/etc/default/"
  install -m 0644 "$files"/etc/sysctl.d/* "$root/etc/sysctl.d/"
  install -m 0644 "$files"/etc/systemd/system/*.service "$files"/etc/systemd/system/*.slice \
    "$root/etc/systemd/system/"
  install -m 0644 "$files"/etc/systemd/system/kubelet.service.d/* "$root/etc/systemd/system/kubelet.service.d/"
  cat >"$root/etc/systemd/system/svcnet-cni.service" <<'UNIT'
[Unit]
Description=svcnet-cni: the CNI config for this node's podCIDR and routes to the other nodes' (kindnetd's job)
After=kubelet.service
[Service]
ExecStart=/kind/bin/svcnet-cni.sh
Restart=always
RestartSec=2
[Install]
WantedBy=multi-user.target
UNIT
  # Debian's containerd and CNI plugins where kind's files expect them.
  ln -sf /usr/bin/containerd "$root/usr/local/bin/containerd"
  mkdir -p "$root/opt/cni"
  ln -sfn /usr/lib/cni "$root/opt/cni/bin"
  sed -i -e "s|sandbox_image = .*|sandbox_image = \"registry.k8s.io/pause:$PAUSE\"|" \
    -e 's|restrict_oom_score_adj = false|restrict_oom_score_adj = true|' "$root/etc/containerd/config.toml"
  ctr oci spec | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
    jq 'del(.process.rlimits)' >"$root/etc/containerd/cri-base.json"
  for b in kubelet kubeadm kubectl; do install -m 0755 "$k8sbin/$b" "$root/usr/bin/$b"; done
  echo "$K8S" >"$root/kind/version"
  mkdir -p "$root/etc/kubernetes/manifests" "$root/kind/manifests"
  # What kind's Dockerfile does to systemd.
  find "$root/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
  rm -f "$root"/lib/systemd/system/multi-user.target.wants/* "$root"/etc/systemd/system/*.wants/* \
    "$root"/lib/systemd/system/local-fs.target.wants/* "$root"/lib/systemd/system/sockets.target.wants/*udev* \
    "$root"/lib/systemd/system/sockets.target.wants/*initctl* "$root"/lib/systemd/system/basic.target.wants/*
  echo "ReadKMsg=no" >>"$root/etc/systemd/journald.conf"
  ln -sf /usr/lib/systemd/systemd "$root/sbin/init"
  chroot "$root" systemctl enable kubelet.service containerd.service undo-mount-hacks.service \
    svcnet-cni.service >/dev/null 2>&1
  chroot "$root" systemctl mask systemd-binfmt.service >/dev/null 2>&1
  : >"$root/etc/resolv.conf"
  kube_proxy_image
  import_images
}

mkdir -p "$CACHE"
if [ ! -s "$tarball" ]; then
  command -v debootstrap >/dev/null || { log "no debootstrap (bash testing/install-deps.sh)"; exit 1; }
  exec 9>"$CACHE/.lock"
  flock 9
  work=$(mktemp -d "$CACHE/work.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  # The Debian part alone is cached too: it changes least and costs most.
  rkey=$(echo "$SUITE $MIRROR $arch $packages" | sha256sum | cut -c1-16)
  rootfs="$CACHE/rootfs-$rkey.tar"
  if [ ! -s "$rootfs" ]; then
    log "debootstrap $SUITE with $packages (a few minutes)"
    mkdir "$work/rootfs"
    debootstrap --variant=minbase --include="$(tr ' ' ',' <<<"$packages")" "$SUITE" "$work/rootfs" "$MIRROR" \
      >"$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
    rm -rf "$work"/rootfs/var/lib/apt/lists/* "$work"/rootfs/var/cache/apt/*.bin "$work"/rootfs/usr/share/man/* \
      "$work"/rootfs/usr/share/locale/*
    tar -C "$work/rootfs" --numeric-owner -cf "$rootfs.tmp" .
    mv "$rootfs.tmp" "$rootfs"
    rm -rf "$work/rootfs"
    find "$CACHE" -maxdepth 1 -name 'rootfs-*.tar' ! -name "rootfs-$rkey.tar" -delete
  fi
  log "assembling the node image (control-plane images, kind's files)"
  build_images
  root="$work/root"
  mkdir "$root"
  assemble
  tar -C "$root" --numeric-owner -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  find "$CACHE" -maxdepth 1 -name 'node-*.tar' ! -name "node-$key.tar" -delete
fi

# kindest/node also has STOPSIGNAL SIGRTMIN+3, which `docker import` cannot set; kind removes its nodes
# with `docker rm -f` anyway.
"$DOCKER" import --change 'ENV container=docker' \
  --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' "$tarball" "$image" >/dev/null
# The engine's data root is kept between runs: node images of earlier inputs are never used again.
for old in $("$DOCKER" image ls --format '{{.Repository}}:{{.Tag}}' svcnet-kind/node); do
  [ "$old" = "$image" ] || "$DOCKER" rmi "$old" >/dev/null 2>&1 || true
done
echo "$image"
