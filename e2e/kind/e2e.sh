#!/usr/bin/env bash
# `make e2e`: svcnet on kind with the fake GCE (e2e/kind/README.md). Builds what is missing (kind, the node
# image, svcnet's images, the workload image; each cached per machine), starts a container engine in a
# network namespace of its own, creates a dual-stack 3-node kind cluster with kubeadm's kube-proxy and external cloud
# provider kubelets, installs svcnet's cloud controller, switches the cluster from kube-proxy to svcnet-proxy
# under traffic as an operator does (docs/proxy-daemon.md: kube-proxy deleted, then `kubectl apply -k
# manifests/overlays/kind`), and runs named, timed steps against it. Tears everything down on every path
# (a watchdog does it if this script is SIGKILLed).
# Needs root. Prints `N passed, N failed` last; exit status 0 only when every step passed.
#
#   e2e/kind/e2e.sh [--keep]    --keep: leave the cluster up at the end (Ctrl-C tears it down)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
KEEP=${1:-}
STOCK_NODE_IMAGE=${STOCK_NODE_IMAGE:-kindest/node:v1.34.0}
[ "$(id -u)" -eq 0 ] || { echo "e2e: needs root (network namespaces, the container engine)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/svcnet-kind-e2e.XXXXXX)
# shellcheck source=e2e/kind/cluster.sh
. "$here/cluster.sh"
# shellcheck source=e2e/kind/steps.sh
. "$here/steps.sh"
# shellcheck source=e2e/kind/rbs.sh
. "$here/rbs.sh"
# shellcheck source=e2e/kind/ipv6.sh
. "$here/ipv6.sh"

passed=0
failed=0
LOADS=()
STEP=0
started=$(date +%s)

finish() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$CURRENT" ]; then
    failed=$((failed + 1))
    echo "==== step $STEP FAILED: $CURRENT ($(elapsed) s, exit $rc)"
  fi
  if [ "$failed" -gt 0 ] || [ "$rc" -ne 0 ]; then
    diagnose || true
    [ -z "$CURRENT" ] || echo "==== step $STEP FAILED: $CURRENT"
    [ ! -s "$WORK/why" ] || tail -n 8 "$WORK/why"
  fi
  # Load generators a failed step left running (some sit in node namespaces, outside the engine's); a pid
  # is killed only while it is still one of them (its command line names this run's work directory).
  local p
  for p in "${LOADS[@]}"; do
    if tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -qF -- "$WORK/"; then kill "$p" 2>/dev/null || true; fi
  done
  engine_down
  rm -rf "$WORK"
  echo "e2e: total $(($(date +%s) - started)) s"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$rc" -eq 0 ]
}
trap finish EXIT
trap 'exit 130' INT TERM

# step NAME CMD...: runs one step, prints its name, result and time. A failing command inside a step ends
# the whole run through `set -e` (the exit trap reports the step as failed), so later steps never run on a
# broken cluster.
CURRENT=
T0=
step() {
  CURRENT=$1
  shift
  STEP=$((STEP + 1))
  echo "==== step $STEP: $CURRENT"
  T0=$(date +%s.%N)
  "$@"
  passed=$((passed + 1))
  echo "==== step $STEP PASSED: $CURRENT ($(elapsed) s)"
  CURRENT=
}
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }

step "build: kind, the control plane and node binaries (testing/k8s), svcnet's binaries" build_all
step "container engine in its own network namespace" engine_up
echo "engine: namespace $NS"
step "images: kind node, svcnet (make images), workload" images_all
step "kind cluster: 1 control plane + 2 workers, dual stack, kubeadm's kube-proxy, --cloud-provider=external; fake GCE instances" cluster_up
step "kind load docker-image: svcnet-proxy, svcnet-cloud-controller, the workload" load_images
step "the cloud controller alone (the overlay without svcnet-proxy): the cluster before the switch" install_controller
step "nodes initialized by the controller (providerID, IPv4 and IPv6 addresses, taint gone) and their GCE routes" nodes_initialized
step "kube-proxy and svcnet-cloud-controller Ready by their probes; CoreDNS Ready" workloads_ready
step "walkthrough (under kube-proxy): create deployment, scale 2, expose LoadBalancer, EXTERNAL-IP, both pods via the LB IP" walkthrough
step "switch to svcnet as an operator (kube-proxy deleted, kubectl apply -k) under a 20 ms client loop (LB IP, ClusterIP): 0 failed" switch_to_svcnet
step "ClusterIP from a pod and from a node" clusterip
step "NodePort from outside the nodes" nodeport
step "GCE firewall from a client outside the VPC: the LB IP open (k8s-fw-), the NodePort and :10256 dropped until a rule allows them" gce_firewall
step "internal LB (load-balancer-type: Internal): a VM inside the VPC reaches both pods, the outside client nothing" internal_lb
step "externalTrafficPolicy Local: the client's IP preserved, the health-check node port 200 only where endpoints run" etp_local
step "RBS NetLB (cloud.google.com/l4-rbs): the outside client reaches both pods; rule, backend service, groups, check, firewalls read back with gcloud" rbs_netlb
step "RBS NetLB switched to a target pool and back, then deleted: the gcloud lists show no object leaked" rbs_switch
step "mixed protocols (class l4-regional-external): TCP 80 and UDP 53 through one L3_DEFAULT rule; deleted, nothing left" mixed_rbs
step "weighted LB (pods-per-node, ETP Local): 1000 connections from the client split 1:3 like the pods per node" weighted
step "dual-stack RBS NetLB (RequireDualStack): both pods from the outside client through the IPv4 and the IPv6 ingress IP; both halves read back with gcloud" rbs_dual_stack
step "IPv6-only RBS NetLB: both pods over IPv6, no IPv4 rule; both IPv6 Services deleted, the gcloud lists show nothing left" rbs_ipv6_only
step "kubectl logs of both workloads" logs_readable
step "metrics scraped from the pods' ports" metrics_scraped
step "kubectl rollout restart daemonset/svcnet-proxy under a 20 ms client loop (LB IP, ClusterIP): 0 failed" rollout_restart
step "proxy pod deleted and its container SIGKILLed: rules stay, the kubelet brings it back" proxy_killed
step "controller leader's pod deleted: the other replica takes the Lease, a new LoadBalancer gets its IP" leader_failover
step "delete every Service and kubectl delete -k: no GCE load-balancer object left" delete_all

if [ "$KEEP" = --keep ]; then
  echo "e2e: cluster kept; kubectl: ip netns exec $NS $KUBECTL --kubeconfig $WORK/kubeconfig ...; Ctrl-C ends it"
  while :; do sleep 3600; done
fi
