"""Drives svcnet-fake-gce with the official google-cloud-compute client; prints a JSON summary.

Usage: compute_client.py PORT PROJECT REGION ZONE
"""
import json
import sys

from google.api_core import exceptions
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1

port, project, region, zone = sys.argv[1:5]
opts = ClientOptions(api_endpoint=f"http://127.0.0.1:{port}")
creds = AnonymousCredentials()


def make(cls):
    return cls(client_options=opts, credentials=creds)


ops = {
    "global_operations": make(compute_v1.GlobalOperationsClient),
    "region_operations": make(compute_v1.RegionOperationsClient),
    "zone_operations": make(compute_v1.ZoneOperationsClient),
}


def client(cls):
    c = make(cls)
    # The extended-operation (poller) clients ignore client_options; point them at the fake.
    c._transport._extended_operations_services.update(ops)
    return c


out = {}
fw = client(compute_v1.FirewallsClient)
op = fw.insert(
    project=project,
    firewall_resource=compute_v1.Firewall(
        name="py-fw-0",
        allowed=[compute_v1.Allowed(I_p_protocol="tcp", ports=["80", "443"])],
        target_tags=["node"],
        source_ranges=["10.0.0.0/8"],
    ),
)
out["first_status"] = compute_v1.Operation.Status(op.status).name
op.result(timeout=60)
out["done"] = op.done()
got = fw.get(project=project, firewall="py-fw-0")
out["firewall"] = {
    "name": got.name,
    "ports": list(got.allowed[0].ports),
    "target_tags": list(got.target_tags),
    "priority": got.priority,
    "self_link": got.self_link,
}
for i in range(1, 5):
    fw.insert(
        project=project,
        firewall_resource=compute_v1.Firewall(name=f"py-fw-{i}", allowed=[compute_v1.Allowed(I_p_protocol="udp")]),
    ).result(timeout=60)
pager = fw.list(request=compute_v1.ListFirewallsRequest(project=project, max_results=2))
out["pages"] = sum(1 for _ in pager.pages)
out["names"] = sorted(f.name for f in fw.list(request=compute_v1.ListFirewallsRequest(project=project, max_results=2)))
out["filtered"] = sorted(
    f.name for f in fw.list(request=compute_v1.ListFirewallsRequest(project=project, filter="name eq py-fw-[12]"))
)

# (The Python library no longer ships the legacy HttpHealthChecks service.)
tp = client(compute_v1.TargetPoolsClient)
tp.insert(
    project=project,
    region=region,
    target_pool_resource=compute_v1.TargetPool(
        name="py-tp",
        instances=[f"zones/{zone}/instances/py-node"],
        session_affinity="CLIENT_IP",
    ),
).result(timeout=60)
addr = client(compute_v1.AddressesClient)
addr.insert(project=project, region=region, address_resource=compute_v1.Address(name="py-ip")).result(timeout=60)
ip = addr.get(project=project, region=region, address="py-ip").address
frc = client(compute_v1.ForwardingRulesClient)
frc.insert(
    project=project,
    region=region,
    forwarding_rule_resource=compute_v1.ForwardingRule(
        name="py-fr", I_p_address=ip, I_p_protocol="TCP", port_range="80", target=f"regions/{region}/targetPools/py-tp"
    ),
).result(timeout=60)
out["address_status"] = addr.get(project=project, region=region, address="py-ip").status
out["fr_ip_matches"] = frc.get(project=project, region=region, forwarding_rule="py-fr").I_p_address == ip
agg = frc.aggregated_list(request=compute_v1.AggregatedListForwardingRulesRequest(project=project))
out["aggregated"] = sorted(
    f"{scope}/{r.name}" for scope, scoped in agg for r in scoped.forwarding_rules
)
inst = client(compute_v1.InstancesClient)
out["instances"] = sorted(i.name for i in inst.list(project=project, zone=zone))

try:
    fw.get(project=project, firewall="nope")
    out["not_found"] = "no error"
except exceptions.NotFound as e:
    out["not_found"] = "NotFound"
try:
    tp.delete(project=project, region=region, target_pool="py-tp").result(timeout=60)
    out["in_use"] = "no error"
except exceptions.BadRequest as e:
    out["in_use"] = str(e)

# The next insert fails asynchronously (operation DONE with error): result() raises.
import urllib.request

req = urllib.request.Request(
    f"http://127.0.0.1:{port}/_fake/faults",
    data=json.dumps({"method": "POST", "pathRegex": "/firewalls$", "count": 1, "reason": "quotaExceeded", "mode": "operation"}).encode(),
    method="POST",
)
urllib.request.urlopen(req).read()
try:
    fw.insert(
        project=project,
        firewall_resource=compute_v1.Firewall(name="py-fw-quota", allowed=[compute_v1.Allowed(I_p_protocol="tcp")]),
    ).result(timeout=60)
    out["failed_op"] = "no error"
except exceptions.GoogleAPICallError as e:
    out["failed_op"] = type(e).__name__

print(json.dumps(out))
