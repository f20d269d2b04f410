# Sourced by e2e/kind/e2e.sh: issue 34's backend-service network LBs (RBS NetLBs, built by the controller
# the kind overlay runs with --rbs-netlb) on kind: reached from the outside client, their GCE objects read
# back with the real gcloud, switched to a target pool and back, mixed protocols, weighted balancing.

RBS_ANNOTATION=cloud.google.com/l4-rbs
RBS_CLASS=networking.gke.io/l4-regional-external
# The load-balancer collections the leak checks list: `label:gcloud compute arguments`. Health checks by
# scope: a plain `health-checks list` asks for /aggregated/healthChecks, which the fake does not serve
# (gcloud only warns and lists nothing).
GCE_LISTS=("forwarding-rules:forwarding-rules list" "target-pools:target-pools list"
  "backend-services:backend-services list" "health-checks:health-checks list --global"
  "health-checks:health-checks list --regions $REGION" "http-health-checks:http-health-checks list"
  "firewall-rules:firewall-rules list" "addresses:addresses list" "instance-groups:instance-groups unmanaged list")

# py_checks ARGS... <<'PY': the Python program on stdin run with ARGS, with `report(checks)` defined: a list
# of (name, ok) pairs, each failed one printed, exit status 1 when any failed.
py_checks() {
  python3 -c "import sys
def report(checks):
    bad = [name for name, ok in checks if not ok]
    for name in bad:
        print('NOT as expected:', name)
    sys.exit(1 if bad else 0)
$(cat)" "$@"
}

# lb_name SVC: the GCE name of the Service's LB, "a" + its UID without dashes, cut to 32.
lb_name() {
  local uid
  uid=$(K get svc "$1" -o jsonpath='{.metadata.uid}')
  uid=a${uid//-/}
  echo "${uid:0:32}"
}

svc_ip() { K get svc "$1" -o jsonpath='{.status.loadBalancer.ingress[0].ip}'; }

# gce_lists FILE: every load-balancer object as the real gcloud lists it, `collection name` a line, sorted
# (the lists run in parallel: each gcloud start costs a second or more of CPU).
gce_lists() {
  local c i=0 rc=0 pids=()
  for c in "${GCE_LISTS[@]}"; do
    # shellcheck disable=SC2086
    GC_CONFIG=$WORK/gcloud.$i gc compute ${c#*:} --format='value(name)' >"$WORK/list.$i" 2>"$WORK/list.$i.err" &
    pids+=("$!")
    i=$((i + 1))
  done
  for i in "${!pids[@]}"; do
    # A request gcloud could not make is a warning on stderr, not an exit status.
    if ! wait "${pids[$i]}" || grep -q 'did not succeed' "$WORK/list.$i.err"; then
      echo "gcloud compute ${GCE_LISTS[$i]#*:} failed:"
      cat "$WORK/list.$i.err"
      rc=1
    fi
  done
  [ "$rc" = 0 ] || return 1
  for i in "${!GCE_LISTS[@]}"; do
    sed "s|^|${GCE_LISTS[$i]%%:*} |" "$WORK/list.$i"
  done | sort >"$1"
}

# fake_names FILE: the fake's own state in gce_lists' form: fast (no gcloud), for waiting until the
# controller is done before gcloud lists.
fake_names() {
  gce GET /_fake/state >"$WORK/names.json" || return 1
  python3 - "$WORK/names.json" <<'PY' >"$1"
import json, sys
s = json.load(open(sys.argv[1]))
labels = {"forwardingRules": "forwarding-rules", "targetPools": "target-pools", "backendServices": "backend-services",
          "healthChecks": "health-checks", "regionHealthChecks": "health-checks",
          "httpHealthChecks": "http-health-checks", "firewalls": "firewall-rules", "addresses": "addresses",
          "instanceGroups": "instance-groups"}
for line in sorted(f"{label} {o['name']}" for k, label in labels.items() for o in s.get(k, [])):
    print(line)
PY
}

# fake_is FILE: the fake holds exactly the objects FILE lists.
fake_is() {
  fake_names "$WORK/names.now" || return 1
  diff -q "$1" "$WORK/names.now" >/dev/null
}

# fake_settled: two dumps of the fake 3 s apart hold the same objects (an earlier step's Service deleted
# without waiting may still be losing its objects).
fake_settled() {
  fake_names "$WORK/names.a" || return 1
  sleep 3
  fake_names "$WORK/names.b" || return 1
  diff -q "$WORK/names.a" "$WORK/names.b" >/dev/null
}

# gcloud_is FILE WHAT: the real gcloud lists exactly what FILE does (once the fake does).
gcloud_is() {
  retry 120 fake_is "$1" || { echo "the fake never settled on $2:"; lists_diff "$1" "$WORK/names.now"; return 1; }
  gce_lists "$WORK/lists.now"
  diff -q "$1" "$WORK/lists.now" >/dev/null || { echo "gcloud lists other than $2:"; lists_diff "$1" "$WORK/lists.now"; return 1; }
  echo "gcloud lists $(wc -l <"$WORK/lists.now") load-balancer objects: $2"
}

# lists_diff A B: what B lists beyond A (+) and what A lists that B does not (-).
lists_diff() { { diff "$1" "$2" || true; } | sed -n 's/^> /+ /p; s/^< /- /p'; }

# is_rbs SVC RULE_KEY: the controller finished the Service's RBS NetLB: only the NetLB v2 finalizer, an
# ingress IP, the backend-service annotation and RULE_KEY's (tcp-/l3-forwarding-rule) naming the fake's
# rule that holds that IP through a backend service.
is_rbs() {
  K get svc "$1" -o json >"$WORK/svc.json" || return 1
  gce GET /_fake/state >"$WORK/state.json" || return 1
  python3 - "$WORK/svc.json" "$WORK/state.json" "$2" <<'PY'
import json, sys
svc, st = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
a = svc["metadata"].get("annotations") or {}
ip = ((svc.get("status", {}).get("loadBalancer", {}).get("ingress") or [{}])[0]).get("ip")
rule = a.get("service.kubernetes.io/" + sys.argv[3])
frs = [f for f in st.get("forwardingRules", []) if f["name"] == rule]
ok = (svc["metadata"].get("finalizers") == ["gke.networking.io/l4-netlb-v2"] and ip
      and a.get("service.kubernetes.io/backend-service") and len(frs) == 1
      and frs[0].get("backendService") and not frs[0].get("target") and frs[0].get("IPAddress") == ip)
sys.exit(0 if ok else 1)
PY
}

# is_target_pool SVC LB: the Service's LB is a target pool again: no RBS status annotation or NetLB v2
# finalizer, an ingress IP held by the fake's rule LB through a target pool.
is_target_pool() {
  K get svc "$1" -o json >"$WORK/svc.json" || return 1
  gce GET /_fake/state >"$WORK/state.json" || return 1
  python3 - "$WORK/svc.json" "$WORK/state.json" "$2" <<'PY'
import json, sys
svc, st = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
a = svc["metadata"].get("annotations") or {}
ip = ((svc.get("status", {}).get("loadBalancer", {}).get("ingress") or [{}])[0]).get("ip")
frs = [f for f in st.get("forwardingRules", []) if f["name"] == sys.argv[3]]
ok = (ip and "gke.networking.io/l4-netlb-v2" not in (svc["metadata"].get("finalizers") or [])
      and not any(k.startswith("service.kubernetes.io/") and k.endswith(("-rule", "backend-service", "healthcheck"))
                  for k in a)
      and len(frs) == 1 and frs[0].get("target") and not frs[0].get("backendService")
      and frs[0].get("IPAddress") == ip)
sys.exit(0 if ok else 1)
PY
}

# describe_named DIR SVC FILE=COLLECTION=KEY[=regional]...: the Service (DIR/svc.json) and the GCE objects
# its annotations service.kubernetes.io/KEY name, described by the real gcloud into DIR/FILE.json, in
# parallel, as the lists: each gcloud start costs a second or more of CPU.
describe_named() {
  local d=$1 svc=$2 i=0 pids=() p spec file coll key scope name
  shift 2
  mkdir -p "$d"
  K get svc "$svc" -o json >"$d/svc.json"
  for spec in "$@"; do
    IFS='=' read -r file coll key scope <<<"$spec"
    name=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["annotations"][sys.argv[2]])' \
      "$d/svc.json" "service.kubernetes.io/$key") || { echo "no annotation $key on $svc"; return 1; }
    GC_CONFIG=$WORK/gcloud.$i gc compute "$coll" describe "$name" ${scope:+--region "$REGION"} --format=json \
      >"$d/$file.json" &
    pids+=("$!")
    i=$((i + 1))
  done
  for p in "${pids[@]}"; do wait "$p" || return 1; done
}

# rbs_read_back SVC RULE_KEY RULE_PROTOCOL BS_PROTOCOL: the RBS objects the Service's annotations name,
# read back with the real gcloud: the EXTERNAL rule (the ingress IP, RULE_PROTOCOL, the backend service,
# no target pool), the regional EXTERNAL backend service (BS_PROTOCOL) over instance groups whose members
# are the cluster's nodes, its regional HTTP check (the Service's health-check node port, else the
# proxies' 10256), the firewall (the Service's ports per protocol, the node tag) and the check's firewall.
rbs_read_back() {
  local svc=$1 d=$WORK/readback g
  describe_named "$d" "$svc" "fr=forwarding-rules=$2=regional" "bs=backend-services=backend-service=regional" \
    "hc=health-checks=healthcheck=regional" fw=firewall-rules=firewall-rule fwhc=firewall-rules=firewall-rule-for-hc
  : >"$d/members"
  for g in $(python3 -c 'import json,sys; print(" ".join(b["group"] for b in json.load(open(sys.argv[1]))["backends"]))' \
    "$d/bs.json"); do
    gc compute instance-groups unmanaged list-instances "${g##*/}" --zone "$(sed 's|.*/zones/\([^/]*\)/.*|\1|' <<<"$g")" \
      --format='value(instance.basename())' >>"$d/members"
  done
  in_ns "$KIND" get nodes --name "$CLUSTER" >"$d/nodes"
  py_checks "$d" "$3" "$4" "$NODE_TAG" <<'PY'
import json, sys
d, rule_proto, bs_proto, tag = sys.argv[1:]
load = lambda n: json.load(open(f"{d}/{n}.json"))
svc, fr, bs, hc, fw, fwhc = (load(n) for n in ("svc", "fr", "bs", "hc", "fw", "fwhc"))
members = sorted(set(open(f"{d}/members").read().split()))
nodes = set(open(f"{d}/nodes").read().split())
ip = svc["status"]["loadBalancer"]["ingress"][0]["ip"]
want_ports = {}
for p in svc["spec"]["ports"]:
    want_ports.setdefault(p["protocol"].lower(), []).append(str(p["port"]))
hc_port = svc["spec"].get("healthCheckNodePort") or 10256
last = lambda u: u.rsplit("/", 1)[-1]
checks = [
    ("rule EXTERNAL", fr.get("loadBalancingScheme") == "EXTERNAL"),
    ("rule IP is the ingress IP", fr.get("IPAddress") == ip),
    (f"rule protocol {rule_proto}", fr.get("IPProtocol") == rule_proto),
    ("rule -> the backend service, no target", last(fr.get("backendService", "")) == bs["name"] and not fr.get("target")),
    ("backend service regional, EXTERNAL", "/regions/" in bs["selfLink"] and bs.get("loadBalancingScheme") == "EXTERNAL"),
    (f"backend service protocol {bs_proto}", bs.get("protocol") == bs_proto),
    ("backends are instance groups", bs.get("backends") and all("/instanceGroups/" in b["group"] for b in bs["backends"])),
    ("group members are nodes, both workers among them", members and set(members) <= nodes
        and {n for n in nodes if "-worker" in n} <= set(members)),
    ("backend service checked by the check", [last(u) for u in bs.get("healthChecks", [])] == [hc["name"]]),
    (f"check HTTP on {hc_port}", hc.get("type") == "HTTP" and hc["httpHealthCheck"].get("port") == hc_port
        and "/regions/" in hc["selfLink"]),
    (f"firewall allows {want_ports} to tag {tag}",
        {a["IPProtocol"].lower(): sorted(a.get("ports", [])) for a in fw["allowed"]}
        == {k: sorted(v) for k, v in want_ports.items()} and tag in fw.get("targetTags", [])),
    (f"check firewall allows tcp {hc_port} from GCE's probe ranges",
        [(a["IPProtocol"].lower(), a.get("ports")) for a in fwhc["allowed"]] == [("tcp", [str(hc_port)])]
        and {"130.211.0.0/22", "35.191.0.0/16"} <= set(fwhc.get("sourceRanges", []))),
]
print(f"gcloud: rule {fr['name']} {fr.get('IPProtocol')} {ip} -> backend service {bs['name']} "
      f"({bs.get('protocol')}, {bs.get('localityLbPolicy', 'no locality policy')}) over {members}; "
      f"check {hc['name']}; firewalls {fw['name']}, {fwhc['name']}")
report(checks)
PY
}

# client_20 IP: 20 HTTP requests from the outside client to IP (IPv4 or IPv6), one answer a line.
client_20() {
  local _ host=$1
  [[ $host != *:* ]] || host="[$host]"
  for _ in $(seq 1 20); do from client curl -s --max-time 2 "http://$host/" || true; echo; done
}

rbs_service() {
  K apply -f - <<YAML
apiVersion: v1
kind: Service
metadata:
  name: hostnames-rbs
  annotations: {$RBS_ANNOTATION: enabled}
spec:
  type: LoadBalancer
  selector: {app: hostnames}
  ports: [{port: 80, targetPort: 9376, protocol: TCP}]
YAML
}

# rbs_netlb: the walkthrough's pods behind an RBS NetLB (the annotation); the GCE objects it added to the
# gcloud lists are kept for the switch step.
rbs_netlb() {
  local ip
  retry 60 fake_settled
  gce_lists "$WORK/lists.base"
  # The fake's own dump in the same form, so later waits on it and gcloud's lists compare.
  fake_names "$WORK/names.base"
  diff "$WORK/lists.base" "$WORK/names.base" || { echo "gcloud lists other than the fake holds"; return 1; }
  rbs_service
  retry 120 is_rbs hostnames-rbs tcp-forwarding-rule
  ip=$(svc_ip hostnames-rbs)
  K get svc hostnames-rbs
  rbs_read_back hostnames-rbs tcp-forwarding-rule TCP TCP
  retry 60 both_pods_from client_20 "$ip"
  fake_names "$WORK/lists.rbs"
  lists_diff "$WORK/lists.base" "$WORK/lists.rbs" >"$WORK/diff.rbs"
  echo "the RBS NetLB added:"
  cat "$WORK/diff.rbs"
  ! grep '^- ' "$WORK/diff.rbs" || { echo "objects went missing"; return 1; }
}

# rbs_switch: the annotation removed (a target pool), added back (RBS again), the Service deleted; the gcloud
# lists after each are compared with those before: the target pool's own objects only, then exactly the RBS
# objects of before, then exactly what there was before the Service.
rbs_switch() {
  local lb ip
  lb=$(lb_name hostnames-rbs)
  K annotate svc hostnames-rbs "$RBS_ANNOTATION-"
  retry 120 is_target_pool hostnames-rbs "$lb"
  ip=$(svc_ip hostnames-rbs)
  retry 60 both_pods_from client_20 "$ip"
  { cat "$WORK/lists.base"; printf '%s\n' "forwarding-rules $lb" "firewall-rules k8s-fw-$lb" "target-pools $lb"; } |
    sort >"$WORK/want.tp"
  echo "target pool $ip"
  gcloud_is "$WORK/want.tp" "those before the Service and the target pool's own (rule, pool, k8s-fw-)"

  K annotate svc hostnames-rbs "$RBS_ANNOTATION=enabled"
  retry 120 is_rbs hostnames-rbs tcp-forwarding-rule
  ip=$(svc_ip hostnames-rbs)
  rbs_read_back hostnames-rbs tcp-forwarding-rule TCP TCP
  retry 60 both_pods_from client_20 "$ip"
  echo "RBS again $ip"
  gcloud_is "$WORK/lists.rbs" "those of the first RBS NetLB"

  K delete svc hostnames-rbs
  retry 120 no_rule_for "$ip"
  echo "deleted"
  gcloud_is "$WORK/lists.base" "those before the Service"
}

# no_rule_for IP: the fake holds no forwarding rule for IP (an IPv6 one's is IP/96) and the GCE network no
# route to it.
no_rule_for() {
  local dest=$1/32
  [[ $1 != *:* ]] || dest=$1/96
  gce GET /_fake/state | python3 -c '
import json, sys
ips = {sys.argv[1], sys.argv[2]}
sys.exit(1 if [f for f in json.load(sys.stdin).get("forwardingRules", []) if f.get("IPAddress") in ips] else 0)' "$1" "$dest" &&
    [ -z "$(in_ns ip route show proto 99 "$dest")" ]
}

# tcp_from HOST IP PORT: one raw TCP connection from HOST, what the server wrote (agnhost serve-hostname
# --tcp writes its name and closes).
tcp_from() { from "$1" timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1" && cat <&3' "$2" "$3" || true; }
udp_from() { from "$1" "$BIN/svcnet-lab" udp "$2:$3" --timeout 1 2>/dev/null || true; }

# mixed_20 HOST IP PROTO PORT: 20 answers over PROTO (tcp, udp) from HOST, one a line.
mixed_20() { local _; for _ in $(seq 1 20); do "${3}_from" "$1" "$2" "$4"; echo; done; }

# mixed_service: a TCP 80 + UDP 53 LoadBalancer of the RBS class over the `mixed` pods.
mixed_service() {
  K apply -f - <<YAML
apiVersion: v1
kind: Service
metadata: {name: mixed-rbs}
spec:
  type: LoadBalancer
  loadBalancerClass: $RBS_CLASS
  selector: {app: mixed}
  ports:
    - {name: tcp, port: 80, targetPort: 9376, protocol: TCP}
    - {name: udp, port: 53, targetPort: 9376, protocol: UDP}
YAML
}

mixed_pods() {
  K create deployment mixed --image="$WORKLOAD" --replicas=2 -- /agnhost serve-hostname --http=false --tcp --udp \
    --port=9376
  K rollout status deployment/mixed --timeout=120s
  PODS=$(K get pods -l app=mixed -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort | paste -sd' ')
}

# mixed_rbs: TCP+UDP on one RBS Service (the class, not the annotation): one L3_DEFAULT rule over an
# UNSPECIFIED backend service, both protocols answered from the outside client through the one IP; deleted,
# the gcloud lists are those from before.
mixed_rbs() {
  local ip saved=$PODS
  fake_names "$WORK/names.base"
  mixed_pods
  mixed_service
  retry 120 is_rbs mixed-rbs l3-forwarding-rule
  ip=$(svc_ip mixed-rbs)
  K get svc mixed-rbs
  rbs_read_back mixed-rbs l3-forwarding-rule L3_DEFAULT UNSPECIFIED
  retry 60 both_pods_from mixed_20 client "$ip" tcp 80
  retry 60 both_pods_from mixed_20 client "$ip" udp 53
  echo "mixed RBS NetLB $ip: both pods over TCP 80 and over UDP 53 from the outside client"
  K delete svc mixed-rbs
  retry 120 no_rule_for "$ip"
  K delete deployment mixed
  gcloud_is "$WORK/names.base" "those before the Service"
  PODS=$saved
}

# weighted_pods: 1 pod pinned to the first worker, 3 to the second (nodeName, as the lab's step does).
weighted_pods() {
  local name node n
  for spec in "weighted-one $CLUSTER-worker 1" "weighted-three $CLUSTER-worker2 3"; do
    read -r name node n <<<"$spec"
    K apply -f - <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $name, labels: {app: weighted}}
spec:
  replicas: $n
  selector: {matchLabels: {app: weighted, part: $name}}
  template:
    metadata: {labels: {app: weighted, part: $name}}
    spec:
      nodeName: $node
      containers:
        - {name: serve, image: $WORKLOAD, command: [/agnhost, serve-hostname], ports: [{containerPort: 9376}]}
YAML
    K rollout status "deployment/$name" --timeout=120s
  done
}

route_weighted() {
  local r
  r=$(in_ns ip route show proto 99 "$1/32")
  grep -q 'weight 1 ' <<<"$r " && grep -q 'weight 3 ' <<<"$r "
}

# weighted: an RBS Service with `networking.gke.io/weighted-load-balancing: pods-per-node` and ETP Local
# over 1 pod on one worker and 3 on the other: a WEIGHTED_MAGLEV backend service (gcloud), the GCE
# network's route weighted 1 and 3 by the proxies' check answers, and of 1000 new connections from the
# outside client the first worker takes 0.25 +- 0.06 (about 4 standard deviations of the binomial; an
# unweighted split, 0.5, is far outside), at most 1% failed.
weighted() {
  local ip
  fake_names "$WORK/names.base"
  weighted_pods
  K apply -f - <<YAML
apiVersion: v1
kind: Service
metadata:
  name: weighted
  annotations: {$RBS_ANNOTATION: enabled, networking.gke.io/weighted-load-balancing: pods-per-node}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: {app: weighted}
  ports: [{port: 80, targetPort: 9376, protocol: TCP}]
YAML
  retry 120 is_rbs weighted tcp-forwarding-rule
  ip=$(svc_ip weighted)
  rbs_read_back weighted tcp-forwarding-rule TCP TCP
  grep -q '"localityLbPolicy": "WEIGHTED_MAGLEV"' "$WORK/readback/bs.json" || { echo "backend service not WEIGHTED_MAGLEV"; return 1; }
  retry 60 route_weighted "$ip"
  echo "GCE network: $(in_ns ip route show proto 99 "$ip/32" | tr -s ' \n' ' ')"
  K get pods -l app=weighted -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' \
    >"$WORK/weighted.pods"
  from client python3 - "$ip" "$WORK/weighted.pods" "$CLUSTER-worker" <<'PY'
import collections, json, sys, urllib.request
ip, pods, one = sys.argv[1:]
node_of = dict(l.split() for l in open(pods) if l.strip())
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
by_node, failed, n = collections.Counter(), 0, 1000
for _ in range(n):
    try:
        with opener.open(f"http://{ip}/", timeout=2) as r:
            by_node[node_of.get(r.read().decode().strip(), "?")] += 1
    except OSError:
        failed += 1
answered = sum(by_node.values())
share = by_node[one] / max(answered, 1)
print(f"{n} connections: {dict(by_node)}, {failed} failed; {one} (1 pod) took {share:.3f} (want 0.250 +- 0.06)")
ok = failed * 100 <= n and set(by_node) == set(node_of.values()) and abs(share - 0.25) <= 0.06
sys.exit(0 if ok else 1)
PY
  K delete svc weighted
  K delete deployment weighted-one weighted-three
  retry 120 no_rule_for "$ip"
  retry 120 fake_is "$WORK/names.base" || { echo "left:"; lists_diff "$WORK/names.base" "$WORK/names.now"; return 1; }
}
