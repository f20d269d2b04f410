# Sourced by e2e/kind/e2e.sh: issue 34's IPv6 and dual-stack RBS NetLBs on the dual-stack kind cluster. The
# operator turns the cluster's subnetwork dual-stack (EXTERNAL IPv6, as for a dual-stack GKE cluster) with
# gcloud, as the lab's step does (e2e/lab/tests/scenarios/ipv6_rbs.rs); the controller makes ingress-gce's
# `-ipv6` rule and firewalls beside the IPv4 ones; the GCE network routes the rule's /96 to the healthy
# nodes' IPv6 addresses and the IPv6 firewall lets the outside client through where the `-ipv6` firewall
# allows it.

kind_ip() { D inspect -f "{{(index .NetworkSettings.Networks \"kind\").$2}}" "$1"; }

# node_ipv6_ok NODE: the Node's InternalIPs are its instance's IPv4 and IPv6, in that order (kind's
# kubelet --node-ip=IPv4,IPv6, honoured by the controller as the instance has both).
node_ipv6_ok() {
  [ "$(K get node "$1" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')" = \
    "$(kind_ip "$1" IPAddress) $(kind_ip "$1" GlobalIPv6Address)" ]
}

# pod_routes6: each node's IPv6 podCIDR routed to the node's IPv6 address in the engine's namespace, as
# GCE's network routes a dual-stack node's IPv6 range without a route object (the lab's VPC agent does the
# same; the controller's GCE routes are IPv4).
pod_routes6() {
  local n cidr
  for n in $(in_ns "$KIND" get nodes --name "$CLUSTER"); do
    retry 60 node_ipv6_ok "$n" || { echo "node $n: InternalIPs not its IPv4 and IPv6"; return 1; }
    cidr=$(K get node "$n" -o jsonpath='{.spec.podCIDRs[1]}')
    [ -n "$cidr" ] || { echo "node $n has no IPv6 podCIDR"; return 1; }
    in_ns ip -6 route replace "$cidr" via "$(kind_ip "$n" GlobalIPv6Address)" dev "$BRIDGE"
  done
}

subnet_stack() {
  local extra=()
  [ "$1" = IPV4_ONLY ] || extra=(--ipv6-access-type EXTERNAL)
  gc compute networks subnets update default --region "$REGION" --stack-type "$1" "${extra[@]}" >/dev/null
}

# ip_service NAME POLICY FAMILIES: an RBS Service over the walkthrough's pods with those ipFamilies.
ip_service() {
  K apply -f - <<YAML
apiVersion: v1
kind: Service
metadata:
  name: $1
  annotations: {$RBS_ANNOTATION: enabled}
spec:
  type: LoadBalancer
  ipFamilyPolicy: $2
  ipFamilies: [$3]
  selector: {app: hostnames}
  ports: [{port: 80, targetPort: 9376, protocol: TCP}]
YAML
}

# is_rbs6 SVC N: the controller finished the Service's IPv6 half: N ingress IPs, the last one IPv6, held
# (as ADDR/96) by the fake's `-ipv6` rule the annotation names, through the backend service; for N=1 no
# IPv4 rule is named.
is_rbs6() {
  K get svc "$1" -o json >"$WORK/svc.json" || return 1
  gce GET /_fake/state >"$WORK/state.json" || return 1
  python3 - "$WORK/svc.json" "$WORK/state.json" "$2" <<'PY'
import json, sys
svc, st, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
a = svc["metadata"].get("annotations") or {}
ips = [i.get("ip") for i in svc.get("status", {}).get("loadBalancer", {}).get("ingress") or []]
rule = a.get("service.kubernetes.io/tcp-forwarding-rule-ipv6")
frs = [f for f in st.get("forwardingRules", []) if f["name"] == rule]
ok = (len(ips) == n and ":" in ips[-1] and len(frs) == 1 and frs[0].get("ipVersion") == "IPV6"
      and frs[0].get("IPAddress") == ips[-1] + "/96" and frs[0].get("backendService")
      and (n == 2) == ("service.kubernetes.io/tcp-forwarding-rule" in a))
sys.exit(0 if ok else 1)
PY
}

# rbs6_read_back SVC: the IPv6 objects the Service's `-ipv6` annotations name, read back with the real
# gcloud: the EXTERNAL IPV6 rule (ADDR/96 = the IPv6 ingress IP, TCP, the backend service, the subnetwork,
# no target), the nodes' IPv6 firewall (tcp 80 to the node tag, IPv6 sources only, the IPv6 address) and
# the check's IPv6 firewall (tcp 10256 from GCE's IPv6 probers).
rbs6_read_back() {
  local d=$WORK/readback6
  describe_named "$d" "$1" fr=forwarding-rules=tcp-forwarding-rule-ipv6=regional \
    fw=firewall-rules=firewall-rule-ipv6 fwhc=firewall-rules=firewall-rule-for-hc-ipv6
  py_checks "$d" "$NODE_TAG" <<'PY'
import json, sys
d, tag = sys.argv[1:]
load = lambda n: json.load(open(f"{d}/{n}.json"))
svc, fr, fw, fwhc = (load(n) for n in ("svc", "fr", "fw", "fwhc"))
a = svc["metadata"]["annotations"]
ip6 = svc["status"]["loadBalancer"]["ingress"][-1]["ip"]
last = lambda u: u.rsplit("/", 1)[-1]
ports = lambda f: [(x["IPProtocol"].lower(), x.get("ports")) for x in f["allowed"]]
checks = [
    ("rule IPV6, EXTERNAL, TCP", fr.get("ipVersion") == "IPV6" and fr.get("loadBalancingScheme") == "EXTERNAL"
        and fr.get("IPProtocol") == "TCP"),
    ("rule IP is the IPv6 ingress IP's /96", fr.get("IPAddress") == f"{ip6}/96"),
    ("rule -> the backend service, no target", last(fr.get("backendService", "")) == a["service.kubernetes.io/backend-service"]
        and not fr.get("target")),
    ("rule in the subnetwork default", last(fr.get("subnetwork", "")) == "default"),
    (f"IPv6 firewall allows tcp 80 to tag {tag} from IPv6 sources, to the IPv6 address",
        ports(fw) == [("tcp", ["80"])] and tag in fw.get("targetTags", [])
        and fw.get("sourceRanges") and all(":" in r for r in fw["sourceRanges"])
        and any(r.split("/")[0] == ip6 for r in fw.get("destinationRanges", []))),
    ("check IPv6 firewall allows tcp 10256 from 2600:1901:8001::/48",
        ports(fwhc) == [("tcp", ["10256"])] and "2600:1901:8001::/48" in fwhc.get("sourceRanges", [])),
]
print(f"gcloud: rule {fr['name']} {fr.get('ipVersion')} {fr.get('IPAddress')} -> {last(fr.get('backendService', ''))}; "
      f"firewalls {fw['name']} {fw.get('sourceRanges')} -> {fw.get('destinationRanges')}, {fwhc['name']}")
report(checks)
PY
}

# rbs_dual_stack: the subnetwork made dual-stack with gcloud, then a RequireDualStack RBS Service: both
# ingress IPs (IPv4 first, as ipFamilies), both halves read back with gcloud, both pods answering the
# outside client through each. The Service stays for the next step.
rbs_dual_stack() {
  local ip ip6
  retry 60 fake_settled
  fake_names "$WORK/names.base6"
  subnet_stack IPV4_IPV6
  gc compute networks subnets describe default --region "$REGION" --format='value(stackType,ipv6AccessType,externalIpv6Prefix)'
  ip_service hostnames-dual RequireDualStack "IPv4, IPv6"
  retry 120 is_rbs hostnames-dual tcp-forwarding-rule
  retry 120 is_rbs6 hostnames-dual 2
  K get svc hostnames-dual -o jsonpath='{.spec.ipFamilies} {.spec.clusterIPs} {.status.loadBalancer.ingress}{"\n"}'
  ip=$(svc_ip hostnames-dual)
  ip6=$(K get svc hostnames-dual -o jsonpath='{.status.loadBalancer.ingress[1].ip}')
  rbs_read_back hostnames-dual tcp-forwarding-rule TCP TCP
  rbs6_read_back hostnames-dual
  retry 60 both_pods_from client_20 "$ip"
  retry 60 both_pods_from client_20 "$ip6"
  echo "GCE network: $(in_ns ip -6 route show proto 99 "$ip6/96" | tr -s ' \n' ' ')"
  echo "dual-stack RBS NetLB $ip and [$ip6]: both pods from the outside client through each"
}

# rbs_ipv6_only: a SingleStack IPv6 RBS Service: one IPv6 ingress IP, no IPv4 rule, read back, both pods
# through it; then both IPv6 Services deleted, the subnetwork IPv4-only again, and the gcloud lists exactly
# those from before the first IPv6 Service.
rbs_ipv6_only() {
  local lb ip6 dual dual6
  ip_service hostnames-v6 SingleStack IPv6
  retry 120 is_rbs6 hostnames-v6 1
  lb=$(lb_name hostnames-v6)
  fake_names "$WORK/names.v6"
  ! grep -qx "forwarding-rules $lb" "$WORK/names.v6" || { echo "an IPv6-only Service got an IPv4 rule"; return 1; }
  ip6=$(svc_ip hostnames-v6)
  K get svc hostnames-v6 -o jsonpath='{.spec.ipFamilies} {.spec.clusterIPs} {.status.loadBalancer.ingress}{"\n"}'
  rbs6_read_back hostnames-v6
  retry 60 both_pods_from client_20 "$ip6"
  echo "IPv6-only RBS NetLB [$ip6]: both pods from the outside client"
  dual=$(svc_ip hostnames-dual)
  dual6=$(K get svc hostnames-dual -o jsonpath='{.status.loadBalancer.ingress[1].ip}')
  K delete svc hostnames-dual hostnames-v6
  retry 120 no_rule_for "$dual"
  retry 120 no_rule_for "$dual6"
  retry 120 no_rule_for "$ip6"
  subnet_stack IPV4_ONLY
  gcloud_is "$WORK/names.base6" "those before the IPv6 Services"
}
