#!/usr/bin/env python3
"""Generate the maps-layout spike ruleset (docs/nftables-maps.md) as `nft -f` input.

usage: nft_maps_gen.py SERVICES [MAXN]   (service i has 1 + i % MAXN endpoints, MAXN default 19: mean 10)
IPv4/TCP only; cluster IPs 10.96.0.0/12, endpoints 10.128.0.0/9; the first 2768 services also get a node
port (30000-32767, the default range, all of it).
"""
import sys


def ip(base, i):
    n = base + i
    return f"{n >> 24 & 255}.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


CIP, EIP = (10 << 24) | (96 << 16), (10 << 24) | (128 << 16)
KEY = "ip daddr . meta l4proto . th dport"
NPKEY = "meta l4proto . th dport"
NODEPORTS = 2768


def main():
    services = int(sys.argv[1])
    maxn = int(sys.argv[2]) if len(sys.argv) > 2 else 19
    counts = [1 + i % maxn for i in range(services)]
    ns = sorted(set(counts))
    out = ["table ip svcnet {"]
    for n in ns:
        out.append(f"  set svcs-{n} {{ typeof {KEY}; }}")
        out.append(f"  set nodeports-{n} {{ typeof {NPKEY}; }}")
    out.append(f"  map eps {{ typeof {KEY} . numgen random mod 2 : ip daddr . th dport; }}")
    out.append(f"  map nodeport-eps {{ typeof {NPKEY} . numgen random mod 2 : ip daddr . th dport; }}")
    out.append(f"  set no-endpoints {{ typeof {KEY}; }}")
    out.append(f"  set fw-protected {{ typeof {KEY}; }}")
    out.append(f"  set fw-allow {{ typeof {KEY} . ip saddr; flags interval; }}")
    out.append("  set cluster-cidrs { typeof ip saddr; flags interval; elements = { 10.128.0.0/9 } }")
    out.append("  set hairpin { typeof ip saddr . ip daddr; }")
    out.append("  chain services {")
    out.append(f"    {KEY} @fw-protected {KEY} . ip saddr != @fw-allow drop")
    out.append("    ip saddr != @cluster-cidrs meta mark set meta mark | 0x4000")
    for n in ns:
        out.append(f"    meta l4proto tcp {KEY} @svcs-{n} dnat ip to {KEY} . numgen random mod {n} map @eps")
    out.append("    fib daddr type local jump nodeports")
    out.append("  }")
    out.append("  chain nodeports {")
    out.append("    meta mark set meta mark | 0x4000")
    for n in ns:
        out.append(f"    meta l4proto tcp {NPKEY} @nodeports-{n} dnat ip to {NPKEY} . numgen random mod {n} map @nodeport-eps")
    out.append("  }")
    out.append("  chain filter-services { type filter hook output priority -110; "
               f"{KEY} @no-endpoints reject with tcp reset; }}")
    out.append("  chain prerouting { type nat hook prerouting priority dstnat; jump services; }")
    out.append("  chain output { type nat hook output priority -100; jump services; }")
    out.append("  chain postrouting { type nat hook postrouting priority srcnat; "
               "ct status dnat ip saddr . ip daddr @hairpin meta mark set meta mark | 0x4000; "
               "meta mark & 0x4000 == 0x4000 masquerade; }")
    out.append("}")
    # elements, in chunks so no single line is huge
    e = 0
    for n in ns:
        svc = [i for i in range(services) if counts[i] == n]
        for c in range(0, len(svc), 1000):
            part = svc[c:c + 1000]
            out.append(f"add element ip svcnet svcs-{n} {{ " + ", ".join(f"{ip(CIP, i)} . tcp . 80" for i in part) + " }")
            nps = [i for i in part if i < NODEPORTS]
            if nps:
                out.append(f"add element ip svcnet nodeports-{n} {{ " + ", ".join(f"tcp . {30000 + i}" for i in nps) + " }")
    eps, neps, hp = [], [], []
    for i in range(services):
        for k in range(counts[i]):
            a = ip(EIP, e)
            e += 1
            eps.append(f"{ip(CIP, i)} . tcp . 80 . {k} : {a} . 8080")
            if i < NODEPORTS:
                neps.append(f"tcp . {30000 + i} . {k} : {a} . 8080")
            hp.append(f"{a} . {a}")
    for name, els in (("eps", eps), ("nodeport-eps", neps), ("hairpin", hp)):
        for c in range(0, len(els), 1000):
            out.append(f"add element ip svcnet {name} {{ " + ", ".join(els[c:c + 1000]) + " }")
    print("\n".join(out))
    print(f"# services={services} endpoints={e} distinct_n={len(ns)}", file=sys.stderr)


main()
