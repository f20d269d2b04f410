#!/bin/bash
# Runs in every node of the kind cluster made here (a systemd unit of testing/kind/node-image.sh), doing what
# kindnetd does in a stock kind cluster, whose image cannot be had here: once the node has a podCIDR, writes a
# ptp + host-local CNI config for it, and masquerades pod traffic leaving the cluster CIDR (ip-masq-agent's
# job on GCE). Reads its own Node with the kubelet's credentials (the node authorizer allows no more).
# Unlike kindnetd it routes no other node's podCIDR: pod traffic to another node leaves by the default route
# to the kind network's gateway, where the e2e's GCE network (svcnet-lab gce-network) routes each podCIDR
# as the GCE route svcnet's route controller made for it, as GCE's VPC does.
set -euo pipefail

CLUSTER_CIDR=${SVCNET_CLUSTER_CIDR:-10.244.0.0/16}
kubeconfig=/etc/kubernetes/kubelet.conf
conf=/etc/cni/net.d/10-svcnet.conflist
node=$(hostname)

until [ -s "$kubeconfig" ]; do sleep 1; done
iptables -t nat -N SVCNET-CNI-MASQ 2>/dev/null || true
iptables -t nat -C POSTROUTING -j SVCNET-CNI-MASQ 2>/dev/null || iptables -t nat -A POSTROUTING -j SVCNET-CNI-MASQ
iptables -t nat -F SVCNET-CNI-MASQ
iptables -t nat -A SVCNET-CNI-MASQ -d "$CLUSTER_CIDR" -j RETURN
iptables -t nat -A SVCNET-CNI-MASQ -s "$CLUSTER_CIDR" -j MASQUERADE

while :; do
  cidr=$(kubectl --kubeconfig="$kubeconfig" get node "$node" -o jsonpath='{.spec.podCIDR}' 2>/dev/null || true)
  if [ -n "$cidr" ]; then
    want=$(printf '{"cniVersion":"0.4.0","name":"svcnet","plugins":[{"type":"ptp","mtu":1500,"ipam":{"type":"host-local","ranges":[[{"subnet":"%s"}]],"routes":[{"dst":"0.0.0.0/0"}]}},{"type":"portmap","capabilities":{"portMappings":true}}]}' "$cidr")
    if [ "$(cat "$conf" 2>/dev/null)" != "$want" ]; then
      mkdir -p "$(dirname "$conf")"
      echo "$want" >"$conf.tmp"
      mv "$conf.tmp" "$conf"
    fi
  fi
  sleep 5
done
