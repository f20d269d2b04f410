# Real connections inside a test's network namespace (never the root one), for nft_maps_packets.rs.
# `counts N SRC...`: N connects from each SRC to 10.96.0.1:80 (IPv6 sources: to fd00::1:80, endpoints
# fd00:10::1 and ::2); prints, per SRC, how many each endpoint accepted and from which peer address
# (masquerade shows as another source).
# `loop SECONDS SRC`: connects for SECONDS; prints how many succeeded and failed.
# `spread N COUNT SRC`: as `counts`, to 10.96.0.3:80 with endpoints 10.128.1.1..COUNT (many.yaml).
# `via HOST PORT N SRC...`: as `counts`, to HOST:PORT (a node port, an external IP).
import json, socket, sys, threading, time

V6 = len(sys.argv) > 3 and ":" in sys.argv[3]
FAMILY = socket.AF_INET6 if V6 else socket.AF_INET
EPS = [("fd00:10::1", 8080), ("fd00:10::2", 8080)] if V6 else [("10.128.0.1", 8080), ("10.128.0.2", 8080)]
VIP = ("fd00::1", 80) if V6 else ("10.96.0.1", 80)
if sys.argv[1] == "spread":
    EPS = [("10.128.1.%d" % i, 8080) for i in range(1, int(sys.argv[3]) + 1)]
    VIP = ("10.96.0.3", 80)
    sys.argv[1:4] = ["counts", sys.argv[2]]
if sys.argv[1] == "via":
    VIP = (sys.argv[2], int(sys.argv[3]))
    sys.argv[1:5] = ["counts", sys.argv[4]]
seen = []
lock = threading.Lock()


def serve(addr):
    s = socket.socket(FAMILY)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(addr)
    s.listen(512)
    while True:
        c, peer = s.accept()
        with lock:
            seen.append((addr[0], peer[0]))
        c.close()


def connect(src):
    c = socket.socket(FAMILY)
    c.settimeout(2)
    c.bind((src, 0))
    try:
        c.connect(VIP)
        c.recv(1)
        return True
    except OSError:
        return False
    finally:
        c.close()


for a in EPS:
    threading.Thread(target=serve, args=(a,), daemon=True).start()
time.sleep(0.2)
out = {}
if sys.argv[1] == "counts":
    for src in sys.argv[3:]:
        with lock:
            del seen[:]
        ok = sum(connect(src) for _ in range(int(sys.argv[2])))
        time.sleep(0.1)
        counts = {"connected": ok}
        with lock:
            for ep, peer in seen:
                k = ep + " from " + peer
                counts[k] = counts.get(k, 0) + 1
        out[src] = counts
else:
    end, ok, failed = time.time() + float(sys.argv[2]), 0, 0
    while time.time() < end:
        if connect(sys.argv[3]):
            ok += 1
        else:
            failed += 1
    out = {"ok": ok, "failed": failed}
print(json.dumps(out, sort_keys=True))
