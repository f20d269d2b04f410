# Sourced by e2e/kind/e2e.sh: what each step does. A step is a function that returns non-zero on failure.

# retry SECONDS CMD...: CMD until it succeeds or SECONDS pass.
retry() {
  local secs=$1 until=$(($(date +%s) + $1))
  shift
  until "$@"; do
    [ "$(date +%s)" -lt "$until" ] || { why "gave up after $secs s: $*"; return 1; }
    sleep 1
  done
}

# why LINE: a failure's reason, printed now and again after the diagnosis, at the end of the run's output
# (where a CI log's tail shows it).
why() { echo "$*" | tee -a "$WORK/why"; }

build_all() {
  command -v go >/dev/null 2>&1 || PATH="$PATH:/usr/local/go/bin"
  command -v gcloud >/dev/null 2>&1 || { echo "e2e: no gcloud (the RBS steps read GCE objects back with it)"; return 1; }
  K8SBIN=$(bash "$repo/testing/k8s/build.sh" | tail -n1)
  KUBECTL=$K8SBIN/kubectl
  KIND=$(bash "$repo/testing/kind/build-kind.sh" | tail -n1)
  # Debug binaries unless E2E_RELEASE=1: the images' test does the same; a cold release build of the
  # workspace costs more than the whole e2e.
  local profile=debug flag=()
  [ "${E2E_RELEASE:-}" != 1 ] || { profile=release flag=(--release); }
  cargo build "${flag[@]}" --locked -q --manifest-path "$repo/Cargo.toml" \
    -p svcnet-proxy -p svcnet-cloud-controller -p svcnet-fake-gce -p svcnet-lab
  BIN=$(cd "$repo" && cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/$profile
}

images_all() {
  NODE_IMAGE=$(node_image)
  echo "node image: $NODE_IMAGE"
  SVCNET_ENGINE_STARTED=1 SVCNET_IMAGE_BINARIES=$BIN IMAGE_PREFIX=svcnet IMAGE_TAG=dev \
    bash "$repo/testing/engine/images.sh"
  WORKLOAD=$(bash "$repo/testing/kind/workload-image.sh")
  echo "workload image: $WORKLOAD"
}

load_images() {
  in_ns "$KIND" load docker-image --name "$CLUSTER" svcnet/svcnet-proxy:dev svcnet/svcnet-cloud-controller:dev \
    "$WORKLOAD"
}

# overlay_without_proxy: the kind overlay without svcnet-proxy's DaemonSet, for the cluster as it is
# before the switch (kube-proxy and a cloud controller).
overlay_without_proxy() {
  K kustomize "$repo/manifests/overlays/kind" | python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
keep = [d for d in docs if not (d["kind"] == "DaemonSet" and d["metadata"]["name"] == "svcnet-proxy")]
assert len(keep) == len(docs) - 1, "no svcnet-proxy DaemonSet in the overlay"
yaml.safe_dump_all(keep, sys.stdout)'
}

install_controller() {
  overlay_without_proxy >"$WORK/controller.yaml"
  K apply -f "$WORK/controller.yaml"
  K -n kube-system rollout status deployment/svcnet-cloud-controller --timeout=180s
}

node_ok() {
  local n=$1 pid taints
  pid=$(K get node "$n" -o jsonpath='{.spec.providerID}')
  [ "$pid" = "gce://$PROJECT/$ZONE/$n" ] || return 1
  taints=$(K get node "$n" -o jsonpath='{.spec.taints[*].key}')
  [[ $taints != *node.cloudprovider.kubernetes.io/uninitialized* ]] || return 1
  K get node "$n" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}' | grep -q .
}

routes_ok() {
  local want have
  want=$(K get nodes -o jsonpath='{range .items[*]}{.spec.podCIDR}{"\n"}{end}' | sort)
  have=$(gce GET /_fake/state | python3 -c 'import json,sys; print("\n".join(sorted(r["destRange"] for r in json.load(sys.stdin).get("routes",[]))))')
  [ -n "$want" ] && [ "$want" = "$have" ]
}

nodes_initialized() {
  local n
  for n in $(in_ns "$KIND" get nodes --name "$CLUSTER"); do
    retry 120 node_ok "$n" || { echo "node $n not initialized"; return 1; }
  done
  retry 60 routes_ok || { echo "GCE routes do not match the podCIDRs"; return 1; }
  pod_routes6
  K get nodes -o wide
}

workloads_ready() {
  K -n kube-system rollout status daemonset/kube-proxy --timeout=120s
  K -n kube-system wait --for=condition=Ready pod -l k8s-app=kube-proxy --timeout=120s
  K -n kube-system wait --for=condition=Ready pod -l app.kubernetes.io/name=svcnet-cloud-controller --timeout=120s
  K -n kube-system rollout status deployment/coredns --timeout=180s
  K -n kube-system get pods -o wide
}

# both_pods_from CMD...: the names CMD prints (one answer a line) cover both hostnames pods ($PODS).
both_pods_from() {
  local names
  names=$("$@" | sort -u | paste -sd' ')
  echo "answered: $names"
  [ "$names" = "$PODS" ]
}
lb_20() { local _; for _ in $(seq 1 20); do in_ns curl -s --max-time 2 "http://$LB_IP/" || true; echo; done; }

has_ingress() { [ -n "$(K get svc "$1" -o jsonpath='{.status.loadBalancer.ingress[0].ip}')" ]; }

walkthrough() {
  K create deployment hostnames --image="$WORKLOAD" --port=9376 -- /agnhost serve-hostname
  K scale deployment hostnames --replicas 2
  K rollout status deployment/hostnames --timeout=120s
  K expose deployment hostnames --port=80 --target-port=9376 --type=LoadBalancer
  retry 120 has_ingress hostnames
  K get svc hostnames
  K get pods -l app=hostnames -o wide
  LB_IP=$(K get svc hostnames -o jsonpath='{.status.loadBalancer.ingress[0].ip}')
  PODS=$(K get pods -l app=hostnames -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort | paste -sd' ')
  retry 90 both_pods_from lb_20
}

clusterip() {
  local cip node
  cip=$(K get svc hostnames -o jsonpath='{.spec.clusterIP}')
  # The pod-side client is upstream's: agnhost netexec's /dial makes the requests from inside the pod (as
  # Kubernetes' own e2e tests do) and answers with what it got; busybox's wget dies (SIGSEGV) in a pod.
  K run client --image="$WORKLOAD" --restart=Never -- netexec --http-port=8080
  K wait --for=condition=Ready pod/client --timeout=60s
  local podip
  podip=$(K get pod client -o jsonpath='{.status.podIP}')
  pod_20() {
    in_ns curl -s --max-time 30 "http://$podip:8080/dial?request=hostname&protocol=http&host=$cip&port=80&tries=20" |
      python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin).get("responses") or []))'
  }
  retry 30 both_pods_from pod_20
  node=$CLUSTER-worker
  node_20() { local _; for _ in $(seq 1 20); do D exec "$node" curl -s --max-time 2 "http://$cip/" || true; echo; done; }
  retry 30 both_pods_from node_20
}

nodeport() {
  local port ip
  port=$(K get svc hostnames -o jsonpath='{.spec.ports[0].nodePort}')
  ip=$(D inspect -f '{{(index .NetworkSettings.Networks "kind").IPAddress}}' "$CLUSTER-worker2")
  np_20() { local _; for _ in $(seq 1 20); do in_ns curl -s --max-time 2 "http://$ip:$port/" || true; echo; done; }
  retry 30 both_pods_from np_20
}

logs_readable() {
  K -n kube-system logs daemonset/svcnet-proxy --tail=5 | tee "$WORK/proxy.log"
  [ -s "$WORK/proxy.log" ]
  K -n kube-system logs deployment/svcnet-cloud-controller --tail=5 | tee "$WORK/controller.log"
  [ -s "$WORK/controller.log" ]
}

metrics_scraped() {
  # The proxy's metrics listen on the node's 127.0.0.1:10249 (kube-proxy's default), the controller's on
  # its node's :10258.
  D exec "$CLUSTER-worker" curl -fsS --max-time 5 http://127.0.0.1:10249/metrics >"$WORK/proxy.metrics"
  grep -E '^kubeproxy_sync_proxy_rules_last_timestamp_seconds' "$WORK/proxy.metrics"
  local pod host
  pod=$(K -n kube-system get pods -l app.kubernetes.io/name=svcnet-cloud-controller -o jsonpath='{.items[0].metadata.name}')
  host=$(K -n kube-system get pod "$pod" -o jsonpath='{.status.hostIP}')
  in_ns curl -fsS --max-time 5 "http://$host:10258/metrics" >"$WORK/controller.metrics"
  grep -c . "$WORK/controller.metrics"
  [ -s "$WORK/controller.metrics" ]
}

# load_start NAME NSENTER_PID TARGET...: the lab's load generator (a new connection every 20 ms) in the
# network namespace of process NSENTER_PID (a node container) or of the engine (0).
load_start() {
  local name=$1 pid=$2
  shift 2
  if [ "$pid" = 0 ]; then
    in_ns "$BIN/svcnet-lab" load --long 0 --stop-file "$WORK/$name.stop" "$@" >"$WORK/$name.out" 2>&1 &
  else
    nsenter -t "$pid" -n "$BIN/svcnet-lab" load --long 0 --stop-file "$WORK/$name.stop" "$@" \
      >"$WORK/$name.out" 2>&1 &
  fi
  LOADS+=("$!")
  retry 20 grep -q ready "$WORK/$name.out"
}
load_stop() {
  touch "$WORK/$1.stop"
  retry 30 grep -q new_ok "$WORK/$1.out"
  grep new_ok "$WORK/$1.out"
  if python3 - "$WORK/$1.out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
bad = sum(r["new_failed"] for r in rows)
print(f"{sum(r['new_ok'] for r in rows)} ok, {bad} failed")
sys.exit(1 if bad or not rows else 0)
PY
  then
    return 0
  fi
  why "load $1: $(grep new_ok "$WORK/$1.out" | tail -n 1 | cut -c1-600)"
  return 1
}

rollout_restart() {
  local cip pid
  cip=$(K get svc hostnames -o jsonpath='{.spec.clusterIP}')
  pid=$(D inspect -f '{{.State.Pid}}' "$CLUSTER-worker")
  load_start lb 0 "$LB_IP:80"
  load_start cip "$pid" "$cip:80"
  K -n kube-system rollout restart daemonset/svcnet-proxy
  K -n kube-system rollout status daemonset/svcnet-proxy --timeout=300s
  sleep 3
  local rc=0
  load_stop lb || rc=1
  load_stop cip || rc=1
  return $rc
}

proxy_on() { K -n kube-system get pods -l app.kubernetes.io/name=svcnet-proxy --field-selector "spec.nodeName=$1" -o jsonpath='{.items[0].metadata.name}'; }
replaced() { local p; p=$(proxy_on "$1"); [ -n "$p" ] && [ "$p" != "$2" ]; }
restarted() { [ "$(K -n kube-system get pod "$1" -o jsonpath='{.status.containerStatuses[0].restartCount}')" -ge 1 ]; }
# (grep -c, not -q: an early exit would SIGPIPE iptables-save and fail the pipeline)
rules_there() { D exec "$1" iptables-save -t nat | grep -c 'KUBE-SVC-.*default/hostnames' >/dev/null; }

proxy_killed() {
  local node=$CLUSTER-worker old new cid
  old=$(proxy_on "$node")
  K -n kube-system delete pod "$old" --wait=false
  rules_there "$node" || { echo "rules gone right after the pod's deletion"; return 1; }
  K -n kube-system wait --for=delete "pod/$old" --timeout=90s
  retry 90 replaced "$node" "$old"
  K -n kube-system wait --for=condition=Ready pod -l app.kubernetes.io/name=svcnet-proxy --timeout=120s
  rules_there "$node"
  retry 30 both_pods_from lb_20
  # A crash: SIGKILL of the container by the runtime; the kubelet restarts it in the same pod.
  new=$(proxy_on "$node")
  cid=$(D exec "$node" ctr -n k8s.io containers ls -q \
    "labels.\"io.kubernetes.pod.name\"==$new,labels.\"io.kubernetes.container.name\"==svcnet-proxy" | tail -n1)
  [ -n "$cid" ] || { echo "no svcnet-proxy container found on $node"; return 1; }
  D exec "$node" ctr -n k8s.io tasks kill -s SIGKILL "$cid"
  rules_there "$node"
  retry 90 restarted "$new"
  K -n kube-system wait --for=condition=Ready "pod/$new" --timeout=120s
  retry 30 both_pods_from lb_20
}

new_leader() { local l; l=$(leader); [ -n "$l" ] && [ "$l" != "$1" ]; }
leader() { K -n kube-system get lease svcnet-cloud-controller -o jsonpath='{.spec.holderIdentity}'; }

leader_failover() {
  local old
  old=$(leader)
  echo "leader: $old"
  [ -n "$old" ]
  K -n kube-system delete pod "$old" --wait=false
  retry 120 new_leader "$old"
  echo "new leader: $(leader)"
  K expose deployment hostnames --name hostnames-2 --port=8080 --target-port=9376 --type=LoadBalancer
  retry 120 has_ingress hostnames-2
  K get svc hostnames-2
  local ip
  ip=$(K get svc hostnames-2 -o jsonpath='{.status.loadBalancer.ingress[0].ip}')
  retry 60 in_ns curl -fsS --max-time 2 "http://$ip:8080/"
  echo
}

gce_lb_objects() {
  gce GET /_fake/state | python3 -c '
import json, sys
s = json.load(sys.stdin)
left = {k: [o["name"] for o in s.get(k, [])] for k in
        ("forwardingRules", "targetPools", "firewalls", "httpHealthChecks", "healthChecks", "regionHealthChecks",
         "addresses", "backendServices", "instanceGroups")}
left = {k: v for k, v in left.items() if v}
print(left)
sys.exit(1 if left else 0)'
}

delete_all() {
  K delete service hostnames hostnames-2
  retry 120 gce_lb_objects
  K delete -k "$repo/manifests/overlays/kind"
  gce_lb_objects
}

diagnose() {
  [ -n "${NS:-}" ] || return 0
  echo "==== diagnose"
  local n
  for n in $(D ps --format '{{.Names}}' 2>/dev/null); do
    echo "-- $n: entrypoint, kubelet and containerd (last lines), containers"
    D logs "$n" 2>&1 | grep -E 'INFO|WARN|ERROR' | head -n 20 || true
    D exec "$n" journalctl -u kubelet -u containerd --no-pager -n 30 -o cat 2>/dev/null | cut -c1-1200 || true
    D exec "$n" ctr -n k8s.io tasks ls 2>/dev/null || true
  done
  [ -s "$WORK/kubeconfig" ] || return 0
  K get nodes -o wide || true
  K get pods -A -o wide || true
  K get svc -A || true
  K -n kube-system logs deployment/svcnet-cloud-controller --tail=40 || true
  K -n kube-system logs daemonset/svcnet-proxy --tail=40 || true
  K -n kube-system logs daemonset/kube-proxy --tail=20 2>/dev/null || true
  K get events -A --sort-by=.lastTimestamp | tail -n 40 || true
  tail -n 20 "$WORK/gce-network.log" "$WORK/fake-gce.log" 2>/dev/null || true
  in_ns ip route || true
  in_ns iptables -vnL FORWARD || true
  in_ns iptables -vnL LAB-ILB || true
  in_ns iptables -vnL LAB-FW || true
}

# stale_chains NODE: KUBE-* chains of either family nothing jumps to (kube-proxy's left behind), but the
# kubelet's and the proxies' canaries and the kubelet's iptables-mode hint, which are never jumped to.
stale_chains() {
  { D exec "$1" iptables-save; D exec "$1" ip6tables-save; } | python3 -c '
import re, sys
declared, used, table = set(), set(), ""
for l in sys.stdin:
    if l.startswith("*"):
        table = l[1:].strip()
    elif l.startswith(":KUBE-"):
        c = l[1:].split()[0]
        if not c.endswith("-CANARY") and c != "KUBE-IPTABLES-HINT":
            declared.add((table, c))
    elif l.startswith("-A "):
        for m in re.finditer(r"-[jg] (\S+)", l):
            used.add((table, m.group(1)))
left = sorted(f"{t}/{c}" for t, c in declared - used)
print("unreferenced:", left)
sys.exit(1 if left else 0)'
}

# chains NODE: the node's KUBE-* chains of both families (family/table/chain), sorted.
chains() {
  { D exec "$1" iptables-save | sed 's|^|4 |'; D exec "$1" ip6tables-save | sed 's|^|6 |'; } |
    awk '$2 ~ /^\*/ {t = substr($2, 2)} $2 ~ /^:KUBE-/ {print $1 "/" t "/" substr($2, 2)}' | sort
}

# kube_proxy_addon_disabled: kubeadm's own upgrade phase for the addon, run on the control plane, skips it
# (without proxy.disabled it installs kube-proxy's DaemonSet and ConfigMap again).
kube_proxy_addon_disabled() {
  local cp=$CLUSTER-control-plane version out
  version=$(D exec "$cp" kubeadm version -o short)
  out=$(D exec "$cp" kubeadm upgrade apply phase addon kube-proxy "$version" 2>&1) || { echo "$out"; return 1; }
  grep 'addon/kube-proxy' <<<"$out" || true
  grep -q 'The addon is disabled' <<<"$out" && ! K -n kube-system get daemonset kube-proxy >/dev/null 2>&1
}

# The operator's switch of docs/proxy-daemon.md ("Switching a kubeadm cluster from kube-proxy to
# svcnet-proxy"), under the load
# generator through the LB IP (from the engine's namespace) and the ClusterIP (from a node).
switch_to_svcnet() {
  local cip pid n
  cip=$(K get svc hostnames -o jsonpath='{.spec.clusterIP}')
  pid=$(D inspect -f '{{.State.Pid}}' "$CLUSTER-worker")
  load_start switch-lb 0 "$LB_IP:80"
  load_start switch-cip "$pid" "$cip:80"
  # 1. kube-proxy goes; its rules stay and keep serving (neither proxy removes them when it stops).
  K -n kube-system delete daemonset kube-proxy
  K -n kube-system wait --for=delete pod -l k8s-app=kube-proxy --timeout=120s
  # 2. kubeadm's leftovers: its config, and the addon disabled so `kubeadm upgrade` does not bring it back.
  K -n kube-system delete configmap kube-proxy
  K -n kube-system get configmap kubeadm-config -o json | python3 -c '
import json, sys, yaml
cm = json.load(sys.stdin)
cc = yaml.safe_load(cm["data"]["ClusterConfiguration"])
cc["proxy"] = dict(cc.get("proxy") or {}, disabled=True)
cm["data"]["ClusterConfiguration"] = yaml.safe_dump(cc)
json.dump(cm, sys.stdout)' >"$WORK/kubeadm-config.json"
  K replace -f "$WORK/kubeadm-config.json"
  chains "$CLUSTER-worker" >"$WORK/chains.kube-proxy"
  # 3. svcnet, exactly as a user installs it: svcnet-proxy adopts the rules it finds.
  K apply -k "$repo/manifests/overlays/kind"
  K -n kube-system rollout status daemonset/svcnet-proxy --timeout=180s
  K -n kube-system wait --for=condition=Ready pod -l app.kubernetes.io/name=svcnet-proxy --timeout=120s
  sleep 3
  local rc=0
  load_stop switch-lb || rc=1
  load_stop switch-cip || rc=1
  kube_proxy_addon_disabled || rc=1
  # The node's proxy port is svcnet's now, and it has synced.
  D exec "$CLUSTER-worker" curl -fsS --max-time 5 http://127.0.0.1:10249/metrics |
    grep -E '^svcnet_proxy_full_syncs_total\{.*reason="start"' || rc=1
  chains "$CLUSTER-worker" >"$WORK/chains.svcnet"
  echo "$CLUSTER-worker: $(comm -23 "$WORK/chains.kube-proxy" "$WORK/chains.svcnet" | wc -l) of kube-proxy's" \
    "$(wc -l <"$WORK/chains.kube-proxy") KUBE-* chains gone, $(comm -13 "$WORK/chains.kube-proxy" \
    "$WORK/chains.svcnet" | wc -l) of svcnet's own added"
  # svcnet's first sync removed what kube-proxy left that it does not write.
  for n in $(in_ns "$KIND" get nodes --name "$CLUSTER"); do
    echo "$n:"
    retry 30 stale_chains "$n" || rc=1
  done
  return $rc
}

# hc_code NODE_IP PORT: the HTTP status of the health-check node port on that node.
hc_code() { in_ns curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$1:$2/" || true; }

# hc_matches SERVICE SELECTOR: on every node, the health-check node port answers 200 exactly when a pod of
# SELECTOR runs there, 503 elsewhere.
hc_matches() {
  local port n ip want got ok=0
  port=$(K get svc "$1" -o jsonpath='{.spec.healthCheckNodePort}')
  [ -n "$port" ] && [ "$port" != 0 ] || return 1
  for n in $(in_ns "$KIND" get nodes --name "$CLUSTER"); do
    ip=$(D inspect -f '{{(index .NetworkSettings.Networks "kind").IPAddress}}' "$n")
    want=503
    [ -z "$(K get pods -l "$2" --field-selector "spec.nodeName=$n" -o name)" ] || want=200
    got=$(hc_code "$ip" "$port")
    echo "$n $ip:$port -> $got (want $want)"
    [ "$got" = "$want" ] || ok=1
  done
  return $ok
}

client_ip_seen() { in_ns curl -s --max-time 2 "http://$1:8080/clientip" | grep -c "^$GATEWAY:" >/dev/null; }

etp_local() {
  # The in-pod client of step 10 (agnhost netexec, one pod) behind a LoadBalancer with
  # externalTrafficPolicy Local: /clientip must show the client's own address, not a node's.
  K expose pod client --name client-local --port=8080 --target-port=8080 --type=LoadBalancer \
    --overrides '{"spec":{"externalTrafficPolicy":"Local"}}'
  retry 120 has_ingress client-local
  K get svc client-local
  retry 60 hc_matches client-local run=client
  local ip
  ip=$(K get svc client-local -o jsonpath='{.status.loadBalancer.ingress[0].ip}')
  retry 60 client_ip_seen "$ip"
  in_ns curl -s --max-time 2 "http://$ip:8080/clientip"
  echo
  K delete svc client-local
}

# fw_has COMMENT_PREFIX: the GCE network rendered a firewall rule of that name into the router's filter.
fw_has() { in_ns iptables -S LAB-FW | grep -c -- "--comment \"\?$1" >/dev/null; }

# closed_from HOST URL: three tries from HOST all get no answer.
closed_from() {
  local _
  for _ in 1 2 3; do
    ! from "$1" curl -s --max-time 1 "$2" >/dev/null || { echo "$1 reached $2"; return 1; }
  done
}

gce_firewall() {
  local port ip fw
  port=$(K get svc hostnames -o jsonpath='{.spec.ports[0].nodePort}')
  ip=$(D inspect -f '{{(index .NetworkSettings.Networks "kind").IPAddress}}' "$CLUSTER-worker2")
  # The controller's rules for the walkthrough's LB: its k8s-fw- rule and the nodes' health-check rule.
  retry 30 fw_has k8s-fw-
  retry 30 fw_has 'k8s-.*-node-http-hc'
  in_ns iptables -S LAB-FW
  client_lb_20() { local _; for _ in $(seq 1 20); do from client curl -s --max-time 2 "http://$LB_IP/" || true; echo; done; }
  retry 30 both_pods_from client_lb_20
  # The health-check firewall admits GCE's probe ranges only; the client is outside them.
  closed_from client "http://$ip:10256/healthz"
  closed_from client "http://$ip:$port/"
  echo "client: LB IP answers; the node's :10256 and NodePort $port dropped (no rule allows them)"
  fw='{"name":"e2e-allow-nodeport","network":"global/networks/default","sourceRanges":["0.0.0.0/0"],
    "targetTags":["'$NODE_TAG'"],"allowed":[{"IPProtocol":"tcp","ports":["'$port'"]}]}'
  gce POST "/compute/v1/projects/$PROJECT/global/firewalls" "$fw" >/dev/null
  client_np_20() { local _; for _ in $(seq 1 20); do from client curl -s --max-time 2 "http://$ip:$port/" || true; echo; done; }
  retry 30 both_pods_from client_np_20
  gce DELETE "/compute/v1/projects/$PROJECT/global/firewalls/e2e-allow-nodeport" >/dev/null
  retry 30 closed_from client "http://$ip:$port/"
  echo "client: NodePort answered while e2e-allow-nodeport existed, dropped again once deleted"
}

in_internal_range() {
  python3 -c 'import ipaddress, sys; sys.exit(ipaddress.ip_address(sys.argv[1]) not in ipaddress.ip_network(sys.argv[2]))' \
    "$1" "$INTERNAL_RANGE"
}

# ilb_rule IP: the fake's forwarding rule for IP is INTERNAL, through a backend service, without target pool.
ilb_rule() {
  gce GET /_fake/state | python3 -c '
import json, sys
ip = sys.argv[1]
frs = [f for f in json.load(sys.stdin).get("forwardingRules", []) if f.get("IPAddress") == ip]
print(frs)
ok = len(frs) == 1 and frs[0].get("loadBalancingScheme") == "INTERNAL" and frs[0].get("backendService") \
    and not frs[0].get("target")
sys.exit(0 if ok else 1)' "$1"
}

# ilb_gone IP: no forwarding rule for IP, no backend service and no instance group left.
ilb_gone() {
  gce GET /_fake/state | python3 -c '
import json, sys
s = json.load(sys.stdin)
left = [f["name"] for f in s.get("forwardingRules", []) if f.get("IPAddress") == sys.argv[1]]
left += [o["name"] for k in ("backendServices", "instanceGroups") for o in s.get(k, [])]
print("left:", left)
sys.exit(1 if left else 0)' "$1"
}

internal_lb() {
  K apply -f - <<'YAML'
apiVersion: v1
kind: Service
metadata:
  name: hostnames-ilb
  annotations:
    networking.gke.io/load-balancer-type: Internal
spec:
  type: LoadBalancer
  selector: {app: hostnames}
  ports: [{port: 80, targetPort: 9376, protocol: TCP}]
YAML
  retry 120 has_ingress hostnames-ilb
  K get svc hostnames-ilb
  local ip
  ip=$(K get svc hostnames-ilb -o jsonpath='{.status.loadBalancer.ingress[0].ip}')
  in_internal_range "$ip" || { echo "internal LB IP $ip outside $INTERNAL_RANGE"; return 1; }
  ilb_rule "$ip"
  vm_20() { local _; for _ in $(seq 1 20); do from vm curl -s --max-time 2 "http://$ip/" || true; echo; done; }
  retry 60 both_pods_from vm_20
  closed_from client "http://$ip/"
  echo "internal LB $ip: the VM reached both pods, the client outside the VPC nothing"
  K delete svc hostnames-ilb
  retry 120 ilb_gone "$ip"
}
