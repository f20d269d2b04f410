#!/bin/bash
# Runs in every node of the kind cluster made here (a systemd unit of testing/kind/node-image.sh), doing what
# kindnetd does in a stock kind cluster, whose image cannot be had here: once the node has its podCIDRs (one,
# or an IPv4 and an IPv6 one in a dual-stack cluster), writes a ptp + host-local CNI config giving each pod an
# address of each, and masquerades pod traffic leaving the cluster CIDRs (ip-masq-agent's job on GCE). Reads its own Node with the kubelet's credentials (the node authorizer allows no more).
# Unlike kindnetd it routes no other node's podCIDR: pod traffic to another node leaves by the default route
# to the kind network's gateway, where the e2e's GCE network (svcnet-lab gce-network) routes each podCIDR
# as the GCE route svcnet's route controller made for it, as GCE's VPC does.
set -euo pipefail

CLUSTER_CIDR=${SVCNET_CLUSTER_CIDR:-10.244.0.0/16}
CLUSTER_CIDR6=${SVCNET_CLUSTER_CIDR6:-fd00:10:244::/56}
kubeconfig=/etc/kubernetes/kubelet.conf
conf=/etc/cni/net.d/10-svcnet.conflist
node=$(hostname)

until [ -s "$kubeconfig" ]; do sleep 1; done
masq() {
  local ipt=$1 cidr=$2
  $ipt -t nat -N SVCNET-CNI-MASQ 2>/dev/null || true
  $ipt -t nat -C POSTROUTING -j SVCNET-CNI-MASQ 2>/dev/null || $ipt -t nat -A POSTROUTING -j SVCNET-CNI-MASQ
  $ipt -t nat -F SVCNET-CNI-MASQ
  $ipt -t nat -A SVCNET-CNI-MASQ -d "$cidr" -j RETURN
  $ipt -t nat -A SVCNET-CNI-MASQ -s "$cidr" -j MASQUERADE
}
masq iptables "$CLUSTER_CIDR"
masq ip6tables "$CLUSTER_CIDR6"

while :; do
  cidrs=$(kubectl --kubeconfig="$kubeconfig" get node "$node" -o jsonpath='{.spec.podCIDRs[*]}' 2>/dev/null || true)
  if [ -n "$cidrs" ]; then
    ranges= routes=
    for cidr in $cidrs; do
      ranges="$ranges${ranges:+,}[{\"subnet\":\"$cidr\"}]"
      case $cidr in *:*) dst=::/0 ;; *) dst=0.0.0.0/0 ;; esac
      routes="$routes${routes:+,}{\"dst\":\"$dst\"}"
    done
    want=$(printf '{"cniVersion":"0.4.0","name":"svcnet","plugins":[{"type":"ptp","mtu":1500,"ipam":{"type":"host-local","ranges":[%s],"routes":[%s]}},{"type":"portmap","capabilities":{"portMappings":true}}]}' "$ranges" "$routes")
    if [ "$(cat "$conf" 2>/dev/null)" != "$want" ]; then
      mkdir -p "$(dirname "$conf")"
      echo "$want" >"$conf.tmp"
      mv "$conf.tmp" "$conf"
    fi
  fi
  sleep 5
done
