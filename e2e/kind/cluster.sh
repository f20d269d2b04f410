# Sourced by e2e/kind/e2e.sh: the engine, the images, the fake GCE, the GCE network and the kind cluster.
# Everything runs inside the engine's network namespace ($NS): dockerd, the kind node containers, the API
# server kind publishes on 127.0.0.1 there, svcnet-fake-gce on the kind network's gateway, the lab's GCE
# network agent, and every client of them (kubectl, curl).

CLUSTER=svcnet-e2e
SUBNET=172.18.0.0/16
GATEWAY=172.18.0.1
# The kind network's IPv6 half (kind's own default ULA subnet): the nodes are dual-stack instances.
SUBNET6=fc00:f853:ccd:e793::/64
GATEWAY6=fc00:f853:ccd:e793::1
BRIDGE=svcnet-kind0
GCE_PORT=8085
PROJECT=svcnet-kind
ZONE=us-central1-b
NODE_TAG=svcnet-kind-node
POD_SUBNET=10.244.0.0/16
# kind's dual-stack defaults: a /64 of the pods' /56 per node, the Services' IPv6 /112.
POD_SUBNET6=fd00:10:244::/56
SERVICE_SUBNET=10.96.0.0/16,fd00:10:96::/112
# The client outside the VPC (link cl0 of the engine's namespace) and the VM inside it (link vm), as the
# lab has them (e2e/lab/src/state.rs): the GCE network's firewall filters what they send to the nodes.
CLIENT_GW=192.0.2.1
CLIENT_IP=192.0.2.10
VM_IP=10.128.15.200
# Their IPv6 addresses, the lab's (e2e/lab/src/state.rs).
CLIENT_GW6=2001:db8:c0::1
CLIENT_IP6=2001:db8:c0::10
VM_IP6=fd20:128::15:200
# The fake's pool of EXTERNAL IPv6 /64s for dual-stack subnetworks (IPv6 LB addresses come from it).
EXTERNAL_IPV6_RANGE=2001:db8:4000::/48
# The fake's subnet, where internal LBs get their addresses.
INTERNAL_RANGE=10.128.0.0/20
# The zone's region: regional backend services, health checks and forwarding rules.
REGION=${ZONE%-*}

# in_ns CMD...: CMD inside the engine's network namespace.
in_ns() { ip netns exec "$NS" "$@"; }
K() { in_ns "$KUBECTL" --kubeconfig "$WORK/kubeconfig" "$@"; }
D() { "$DOCKER" "$@"; }
# gc ARGS...: the real gcloud in the engine's namespace, pointed at the fake GCE with a config of its own
# ($GC_CONFIG when set, for gcloud runs in parallel; DESIGN.md, "Real clients against the fake GCE").
gc() {
  in_ns env CLOUDSDK_CONFIG="${GC_CONFIG:-$WORK/gcloud}" CLOUDSDK_CORE_PROJECT="$PROJECT" \
    CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE="http://$GATEWAY:$GCE_PORT/compute/v1/" \
    CLOUDSDK_AUTH_ACCESS_TOKEN_FILE="$WORK/gcloud-token" CLOUDSDK_CORE_DISABLE_PROMPTS=1 \
    CLOUDSDK_CORE_CHECK_GCE_METADATA=false CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1 gcloud "$@"
}
gce() { in_ns curl -fsS --max-time 10 -X "$1" -H 'Content-Type: application/json' ${3:+--data "$3"} "http://$GATEWAY:$GCE_PORT$2"; }

# engine_up: dockerd in a namespace of its own (testing/engine/dockerd.sh), owned by this script; a watchdog
# stops it (and so every container, the fake GCE and the network agent in it) if this script dies without
# its exit trap running (SIGKILL). The next run's sweep would too.
engine_up() {
  bash "$repo/testing/engine/dockerd.sh" sweep
  local out
  out=$(bash "$repo/testing/engine/dockerd.sh" start $$)
  NS=$(head -n1 <<<"$out")
  export "$(tail -n1 <<<"$out")"
  DOCKER=/usr/bin/docker
  [ -x "$DOCKER" ] || DOCKER=$(command -v docker)
  export DOCKER
  # kind runs `docker`: the engine's own CLI, first on PATH.
  mkdir -p "$WORK/bin"
  ln -sf "$DOCKER" "$WORK/bin/docker"
  export PATH="$WORK/bin:$PATH"
  setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 2; done
    bash "$2/testing/engine/dockerd.sh" stop "$3" >/dev/null 2>&1
    rm -rf "$4"' watchdog $$ "$repo" "$NS" "$WORK" \
    </dev/null >/dev/null 2>&1 &
  WATCHDOG=$!
}

engine_down() {
  [ -n "${NS:-}" ] || return 0
  if [ -n "${KIND:-}" ]; then
    in_ns timeout 120 "$KIND" delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  fi
  bash "$repo/testing/engine/dockerd.sh" stop "$NS" || true
  [ -z "${WATCHDOG:-}" ] || kill "$WATCHDOG" 2>/dev/null || true
  NS=
}

# node_image: the stock kind node image where a registry answers, else the one testing/kind builds here.
node_image() {
  if [ -n "${KIND_NODE_IMAGE:-}" ]; then
    echo "$KIND_NODE_IMAGE"
  elif timeout 60 "$DOCKER" pull -q "$STOCK_NODE_IMAGE" >/dev/null 2>&1; then
    echo "$STOCK_NODE_IMAGE"
  else
    bash "$repo/testing/kind/node-image.sh"
  fi
}

# kind_config IMAGE: one control plane and two workers, dual stack (IPv4 first: kind gives each kubelet
# --node-ip=IPv4,IPv6, which the cloud controller honours as the instance has both), kubeadm's kube-proxy
# (iptables mode; the run switches the cluster to svcnet-proxy as an operator would), kubelets with
# --cloud-provider=external (and no kind:// providerID: svcnet's node controller sets gce://...).
kind_config() {
  local cni=false local_image=false
  case "$1" in svcnet-kind/node:*) cni=true local_image=true ;; esac
  cat <<YAML
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking:
  kubeProxyMode: iptables
  ipFamily: dual
  podSubnet: $POD_SUBNET,$POD_SUBNET6
  serviceSubnet: $SERVICE_SUBNET
  # The image made here has no kindnetd; its svcnet-cni unit does that job (testing/kind/svcnet-cni.sh).
  disableDefaultCNI: $cni
nodes:
  - role: control-plane
  - role: worker
  - role: worker
kubeadmConfigPatchesJSON6902:
YAML
  # kind writes kubeadm v1beta3 for Kubernetes 1.34 (kubeletExtraArgs a map) and v1beta4 for later
  # releases (a list of name/value); a patch whose version does not match is not applied.
  local k
  for k in InitConfiguration JoinConfiguration; do
    cat <<YAML
  - group: kubeadm.k8s.io
    version: v1beta3
    kind: $k
    patch: |
      - {op: remove, path: /nodeRegistration/kubeletExtraArgs/provider-id}
      - {op: add, path: /nodeRegistration/kubeletExtraArgs/cloud-provider, value: external}
  - group: kubeadm.k8s.io
    version: v1beta4
    kind: $k
    patch: |
      - {op: test, path: /nodeRegistration/kubeletExtraArgs/1/name, value: provider-id}
      - {op: replace, path: /nodeRegistration/kubeletExtraArgs/1, value: {name: cloud-provider, value: external}}
YAML
  done
  if $local_image; then
    # The etcd of the pinned recipe (testing/k8s), under its own tag. The cgroupfs driver for kubelet and
    # containerd: on this cgroup v1 host, bookworm's systemd 252 in the node does not make the
    # kubelet-kubepods.slice cgroup in its name=systemd hierarchy, and the kubelet refuses to start.
    cat <<YAML
  - group: kubeadm.k8s.io
    version: v1beta3
    kind: ClusterConfiguration
    patch: |
      - {op: add, path: /etcd, value: {local: {imageTag: "3.6.4-0"}}}
  - group: kubelet.config.k8s.io
    version: v1beta1
    kind: KubeletConfiguration
    patch: |
      - {op: replace, path: /cgroupDriver, value: cgroupfs}
containerdConfigPatches:
  - |-
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
YAML
  fi
}

# fake_gce_up: svcnet-fake-gce on the kind network's gateway, so pods on the nodes reach it.
fake_gce_up() {
  in_ns setsid "$BIN/svcnet-fake-gce" --listen "$GATEWAY:$GCE_PORT" --project "$PROJECT" --zones "$ZONE" \
    --internal-range "$INTERNAL_RANGE" --external-ipv6-range "$EXTERNAL_IPV6_RANGE" --op-latency-ms 100 >"$WORK/fake-gce.log" 2>&1 </dev/null &
  local _
  for _ in $(seq 1 100); do
    gce GET /_fake/state >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$WORK/fake-gce.log" >&2
  return 1
}

# register_instances: every kind node becomes a GCE instance of the fake (name, IPv4 and internal IPv6,
# zone, tag), as the dual-stack VMs of a GCE cluster are.
register_instances() {
  local n ip ip6 i=1
  for n in $(in_ns "$KIND" get nodes --name "$CLUSTER"); do
    ip=$(D inspect -f "{{(index .NetworkSettings.Networks \"kind\").IPAddress}}" "$n")
    ip6=$(D inspect -f "{{(index .NetworkSettings.Networks \"kind\").GlobalIPv6Address}}" "$n")
    [ -n "$ip6" ] || { echo "node $n has no IPv6 address on the kind network"; return 1; }
    gce POST /_fake/instances "{\"name\":\"$n\",\"zone\":\"$ZONE\",\"networkIP\":\"$ip\",\"ipv6Address\":\"$ip6\",\"natIP\":\"198.51.100.$i\",\"tags\":[\"$NODE_TAG\"],\"machineType\":\"e2-medium\",\"status\":\"RUNNING\"}" >/dev/null
    i=$((i + 1))
  done
}

cluster_up() {
  local image=$NODE_IMAGE
  # The engine's data root keeps networks between runs: a fixed subnet each time (the overlay's gateway).
  D network rm kind >/dev/null 2>&1 || true
  D network create --driver bridge --subnet "$SUBNET" --gateway "$GATEWAY" \
    --ipv6 --subnet "$SUBNET6" --gateway "$GATEWAY6" \
    -o "com.docker.network.bridge.name=$BRIDGE" -o com.docker.network.bridge.enable_ip_masquerade=false \
    -o com.docker.network.driver.mtu=1500 kind >/dev/null
  fake_gce_up
  echo svcnet-kind-token >"$WORK/gcloud-token"
  kind_config "$image" >"$WORK/kind.yaml"
  in_ns "$KIND" create cluster --name "$CLUSTER" --image "$image" --config "$WORK/kind.yaml" \
    --kubeconfig "$WORK/kubeconfig" --wait 0s --retain
  register_instances
  # The lab's GCE network, in the engine's namespace: LB IPs routed to the healthy pool members over the
  # kind bridge, GCE routes to their instances (e2e/lab: svcnet-lab gce-network).
  # The engine's namespace routes like GCE's VPC: between the nodes' pod CIDRs (GCE routes) and to LB IPs.
  in_ns sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
  in_ns setsid "$BIN/svcnet-lab" gce-network --gce "http://$GATEWAY:$GCE_PORT" --dev "$BRIDGE" \
    >"$WORK/gce-network.log" 2>&1 </dev/null &
  vpc_hosts_up
}

# vpc_hosts_up: the outside client and the VM, each a container of the engine with no network of its own
# but a veth to the engine's namespace (so `dockerd.sh stop` removes them with everything else): the
# client on 192.0.2.0/24 and 2001:db8:c0::/64 behind cl0, the VM a /32 (and a /128) of the VPC whose only
# neighbour and gateway is the router, as GCE links an instance (the lab's instance link).
vpc_hosts_up() {
  local pid
  D run -d --name e2e-client --network none "$WORKLOAD" pause >/dev/null
  D run -d --name e2e-vm --network none "$WORKLOAD" pause >/dev/null
  pid=$(D inspect -f '{{.State.Pid}}' e2e-client)
  in_ns ip link add cl0 type veth peer name eth0 netns "$pid"
  in_ns ip addr add "$CLIENT_GW/24" dev cl0
  in_ns ip addr add "$CLIENT_GW6/64" dev cl0 nodad
  in_ns ip link set cl0 up
  # The engine turns IPv6 off in containers without an IPv6 network.
  nsenter -t "$pid" -n sh -ec "sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.eth0.disable_ipv6=0
    ip link set lo up; ip addr add $CLIENT_IP/24 dev eth0
    ip addr add $CLIENT_IP6/64 dev eth0 nodad; ip link set eth0 up
    ip route add default via $CLIENT_GW; ip -6 route add default via $CLIENT_GW6"
  pid=$(D inspect -f '{{.State.Pid}}' e2e-vm)
  in_ns ip link add vm type veth peer name eth0 netns "$pid"
  in_ns ip link set vm up
  in_ns ip route add "$VM_IP/32" dev vm
  # IPv6 neighbours answer only for their link's own addresses: the router is fe80::1 on the VM's link.
  in_ns ip addr add fe80::1/64 dev vm nodad
  in_ns ip -6 route add "$VM_IP6/128" dev vm
  nsenter -t "$pid" -n sh -ec "sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.eth0.disable_ipv6=0
    ip link set lo up; ip addr add $VM_IP/32 dev eth0
    ip addr add $VM_IP6/128 dev eth0 nodad; ip link set eth0 up
    ip route add $GATEWAY/32 dev eth0; ip route add default via $GATEWAY
    ip -6 route add default via fe80::1 dev eth0"
}

# from HOST CMD...: CMD (a program of this machine) in the network namespace of e2e-HOST (client, vm).
from() {
  local pid
  pid=$(D inspect -f '{{.State.Pid}}' "e2e-$1")
  shift
  nsenter -t "$pid" -n "$@"
}
