"""The attacks of ``experiments/secure_attacks.py`` on a Mininet Fat-Tree (root, Mininet).

One *field agent* process does the forger's work from inside the nodes' namespaces: it
opens a raw IP socket in the namespace of every node it sends from (so a forged datagram
leaves with that node's real address on the link and port: it passes the receiver's
neighbour check) and a packet socket on every edge switch's interface toward a host, where
it sees each datagram the switch sends (``replay``: every n-th is sent again a little
later, from the same address; ``record``: an earlier run's capture, which a later run's
field agent replays at its times, squeezed into the first ``EARLIER_SPAN_S`` -- the
``earlier`` attack; a loaded machine may make the earlier run the longer).  Times count
from the first datagram it sees reach a host (the traffic has started), and the hosts
linger after their work (``LINGER_S``) so that nothing injected arrives at a closed
socket.  It runs until the run stops it (SIGTERM) and writes what it sent and saw.

    sudo python experiments/secure_attacks_mininet.py --attacks forge pause replay earlier

Reported as by the UDP version: every honest message delivered once, intact, at its size;
every injected datagram counted (secure refusals, ``pfc_in`` refusals, clamped PAUSE);
accepted = datagrams the hosts opened beyond the genuine ones the edge switches sent them
(seen by the packet sockets; ``sniff_drops`` says whether they missed any).
"""

import argparse
import hashlib
import heapq
import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
# (the rest is imported where it is used: the field agent, which must be up by the run's
# time 0 on a loaded machine, imports little)

PACKET_OUTGOING = 4
MTU = 1500                     # the veths': datagrams of a full DATA packet go in fragments
LINGER_S = 6.0                 # hosts stay this long after their work: injections land
EARLIER_SPAN_S = 2.0           # an earlier run's capture is replayed within this long
SOL_PACKET = 263
PACKET_STATISTICS = 6
ETH_P_ALL = 0x0003             # outgoing frames reach only the all-protocols taps


# -- the field agent (runs as root, enters the namespaces) -------------------------------

def fragments(packet, mtu=MTU):
    """An IPv4 packet (20-byte header) as the fragments a link of ``mtu`` carries: a raw
    socket that writes its own header gets no fragmentation from the kernel."""
    if len(packet) <= mtu:
        return [packet]
    head, body = bytearray(packet[:20]), packet[20:]
    head[4:6] = os.urandom(2)                    # the identification of this datagram
    step = (mtu - 20) // 8 * 8
    out = []
    for off in range(0, len(body), step):
        h = bytearray(head)
        more = off + step < len(body)
        h[6:8] = ((0x2000 if more else 0) | off // 8).to_bytes(2, "big")   # DF cleared
        h[2:4] = (20 + len(body[off:off + step])).to_bytes(2, "big")
        out.append(bytes(h) + body[off:off + step])
    return out


class Reassembly:
    """IPv4 fragments back into UDP datagrams: ``add(frame)`` -> (src, dst, udp bytes) or
    None (not UDP, or more fragments to come)."""

    def __init__(self):
        self.parts = {}

    def add(self, frame):
        ihl = (frame[14] & 0x0F) * 4
        if frame[23] != 17:
            return None
        total = int.from_bytes(frame[16:18], "big")
        data = frame[14 + ihl:14 + total]
        src, dst = socket.inet_ntoa(frame[26:30]), socket.inet_ntoa(frame[30:34])
        ff = int.from_bytes(frame[20:22], "big")
        more, off = ff & 0x2000, (ff & 0x1FFF) * 8
        if not more and not off:
            return src, dst, data
        key = (src, dst, frame[18:20])
        got = self.parts.setdefault(key, {})
        got[off] = data
        if not more:
            got["end"] = off + len(data)
        end = got.get("end")
        if end is None or sum(len(v) for k, v in got.items() if k != "end") != end:
            return None
        del self.parts[key]
        return src, dst, b"".join(got[k] for k in sorted(k for k in got if k != "end"))

def field_agent(spec_path):
    t_begin = time.time()
    from gse.runtimes.mininet.system import udp_bound
    from gse.runtimes.udp.netns import ip_udp, made_in
    with open(spec_path) as f:
        spec = json.load(f)
    start_at = spec["start_at"]
    print("field agent: up %.3f s before time 0" % (start_at - t_begin), flush=True)
    raw = {}
    for nid, pid in spec["namespaces"].items():
        raw[int(nid)] = made_in(pid, lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW,
                                                           socket.IPPROTO_RAW))
    sniffers = {}
    for nid, pid, intf in spec["sniff"]:
        def make(intf=intf):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            s.bind((intf, 0))
            return s
        sniffers[made_in(pid, make)] = nid
    planned = []                                 # (t after traffic starts, ...)
    for i, (t, nid, src, sport, dst, dport, hexdata) in enumerate(spec["inject"]):
        pkt = ip_udp((src, sport), (dst, dport), bytes.fromhex(hexdata))
        planned.append((t, i, nid, pkt, spec["labels"][i]))
    queue = []                                   # (unix time, seq, nid, datagram, what)
    t0 = None if sniffers else start_at
    unbound = {int(n): pid for n, pid in spec["namespaces"].items()}   # agents not up yet
    mine = set()
    pfc_kinds = (5, 6) if spec["wire"] == "gse" else ()      # PAUSE, RESUME: not e2e
    out = {"forged": 0, "earlier": 0, "replayed": 0, "genuine": 0, "genuine_pfc": 0,
           "recorded": [],
           "send_errors": 0, "ready_s": round(time.time() - start_at, 3)}
    print("field agent: ready %.3f s before time 0" % (start_at - time.time()), flush=True)
    seq = [len(queue)]
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    every, delay, record = spec["replay_every"], spec["replay_delay_s"], spec["record"]
    port = spec["port"]
    seen = 0
    reassembly = Reassembly()
    while not stop:
        now = time.time()
        if unbound:                            # every agent up before anything is sent
            unbound = {n: pid for n, pid in unbound.items() if not udp_bound(pid, port)}
        if t0 is not None and planned and not unbound:   # traffic started: the plan runs
            t0 = max(t0, now)
            for t, i, nid, pkt, what in planned:
                heapq.heappush(queue, (t0 + t, i, nid, pkt, what))
            planned = []
        while queue and queue[0][0] <= now:
            _, _, nid, pkt, what = heapq.heappop(queue)
            mine.add(hashlib.sha1(pkt[28:]).digest())
            try:
                for frag in fragments(pkt):
                    raw[nid].sendto(frag, (socket.inet_ntoa(pkt[16:20]), 0))
                out[what] += 1
            except OSError:
                out["send_errors"] += 1
        timeout = min(0.2, max(0.0, queue[0][0] - now)) if queue else 0.2
        ready = select.select(list(sniffers), [], [], timeout)[0] if sniffers else []
        if not sniffers:
            time.sleep(timeout)
        for s in ready:
            while True:
                try:
                    frame, addr = s.recvfrom(65535, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                if addr[2] != PACKET_OUTGOING or frame[12:14] != b"\x08\x00":
                    continue
                whole = reassembly.add(frame)
                if whole is None:
                    continue
                src, dst, udp = whole
                if int.from_bytes(udp[2:4], "big") != port:
                    continue
                payload = udp[8:int.from_bytes(udp[4:6], "big")]
                if hashlib.sha1(payload).digest() in mine:
                    continue                     # what this agent sent
                if len(payload) > 1 and payload[1] in pfc_kinds:
                    out["genuine_pfc"] += 1      # a link's frame (opened by LinkAuth)
                else:
                    out["genuine"] += 1
                seen += 1
                sport = int.from_bytes(udp[0:2], "big")
                t = time.time()
                if t0 is None:
                    t0 = t
                if record:
                    out["recorded"].append([t - t0, sniffers[s], src, sport, dst, port,
                                            payload.hex()])
                if every and seen % every == 0:
                    pkt = ip_udp((src, sport), (dst, port), payload)
                    heapq.heappush(queue, (t + delay, seq[0], sniffers[s], pkt, "replayed"))
                    seq[0] += 1
    out["sniff_drops"] = sum(int.from_bytes(s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)[4:],
                                            sys.byteorder) for s in sniffers)
    out["never_up"] = sorted(unbound)
    with open(spec["out"], "w") as f:
        json.dump(out, f)
    return 0


# -- the runs ---------------------------------------------------------------------------

def during(work, msgs, wire, attacks, capture, record, replay_every=4):
    """``run_mininet``'s hook: writes the field agent's plan and starts it."""
    from secure_attacks import forgeries

    from gse.runtimes.mininet.run import AGENT_PORT

    def start(fabric, confs, start_at):
        topo = fabric.topo
        addr = {nid: fabric.port_addresses(nid) for nid in range(len(topo.nodes))}
        inject, labels = [], []
        t = 0.2                                   # after the first packets
        for to, frm, _label, data in forgeries(topo, confs, msgs, wire, attacks):
            port = next(i for i in range(len(topo.nodes[frm].ports))
                        if topo.peer(frm, i)[0] == to)
            _, src_ip, dst_ip = addr[frm][port]
            inject.append([t, frm, src_ip, AGENT_PORT, dst_ip, AGENT_PORT, data.hex()])
            labels.append("forged")
            t += 0.002
        span = max((item[0] for item in capture or ()), default=0.0)
        squeeze = min(1.0, EARLIER_SPAN_S / span) if span > 0 else 1.0
        for item in capture or ():                # an earlier run's, at its times (the
            inject.append([item[0] * squeeze] + list(item[1:]))   # first seconds of it)
            labels.append("earlier")
        sniff = [[nid, fabric.nodes[nid].pid, addr[nid][p][0]] for nid in topo.switches
                 for p in range(len(topo.nodes[nid].ports)) if topo.peer(nid, p)[0] <
                 len(topo.hosts)]
        spec = {"start_at": start_at, "port": AGENT_PORT, "inject": inject, "labels": labels,
                "wire": wire,
                "namespaces": {str(n): fabric.nodes[n].pid for n in range(len(topo.nodes))},
                "sniff": sniff, "replay_every": replay_every if "replay" in attacks else 0,
                "replay_delay_s": 0.003, "record": record,
                "out": os.path.join(work, "field.json")}
        path = os.path.join(work, "field-spec.json")
        with open(path, "w") as f:
            json.dump(spec, f)
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        log = open(os.path.join(work, "field.log"), "w")
        return [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--field", path],
                                 cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)]
    return start


def attacked_run(topo, msgs, key_file, protocol, wire, attacks, work, capture=None,
                 record=False, seed=1, gbps=None, timeout_s=120.0):
    from gse.protocols import default_config
    from gse.runtimes.mininet.run import run_mininet
    from gse.runtimes.udp.config import udp_profile
    os.makedirs(work, exist_ok=True)
    cfg = udp_profile(default_config(protocol))
    res = run_mininet(topo, msgs, protocol, cfg, seed=seed, timeout_s=timeout_s,
                      out_dir=work, wire=wire, secure_key_file=key_file, linger_s=LINGER_S,
                      during=during(work, msgs, wire, attacks, capture, record))
    with open(os.path.join(work, "field.json")) as f:
        field = json.load(f)
    return report(res, msgs, work, field), field


def report(res, msgs, work, field):
    from gse.runtimes.udp.secure import REFUSALS
    s = res.summary
    u = s["udp"]
    got = []
    pfc_taken = 0                   # PFC frames the hosts took (their edges' genuine ones)
    agents = os.path.join(work, "agents")
    for name in os.listdir(agents):
        if name.endswith(".records.json"):
            with open(os.path.join(agents, name)) as f:
                got += [(d["src"], d["msg_id"], d["size"]) for d in json.load(f)["received"]]
        elif name.endswith(".counters.json"):
            with open(os.path.join(agents, name)) as f:
                c = json.load(f)
            if c.get("role") == "host":
                pfc_taken += c.get("pfc_in", {}).get("accepted", 0)
    intact = sorted(got) == sorted((m.src, m.msg_id, m.size) for m in msgs)
    sc = u.get("secure_counters", {})
    pfc = u.get("pfc_in", {})
    refused = {k: sc.get(k, 0) for k in REFUSALS}
    pfc_refused = {k: pfc.get(k, 0) for k in ("pfc_off",) + REFUSALS if pfc.get(k)}
    injected = field["forged"] + field["replayed"] + field["earlier"]
    counted = sum(refused.values()) + sum(pfc_refused.values()) + pfc.get("clamped", 0)
    return {"end": s["mininet"]["end"], "messages": len(msgs), "delivered": s["delivered"],
            "lost": s["lost"], "wrong_or_extra": 0 if intact else len(msgs),
            "duplicate_deliveries": u["duplicate_deliveries"],
            "payload_errors": u["payload_errors"], "errors": u["errors"],
            "injected": {"forged": field["forged"], "replayed": field["replayed"],
                         "earlier_run": field["earlier"], "total": injected,
                         "send_errors": field["send_errors"]},
            "counted": counted, "refused_e2e": refused, "refused_pfc": pfc_refused,
            "clamped": pfc.get("clamped", 0), "opened": sc.get("opened", 0),
            "genuine_to_hosts": field["genuine"], "sniff_drops": field["sniff_drops"],
            "field_ready_after_time_0_s": field["ready_s"], "never_up": field["never_up"],
            "pfc_taken": pfc_taken, "genuine_pfc": field["genuine_pfc"],
            "kernel_drops": u["kernel_drops"],
            # every injected datagram refused where it arrived; and, when the packet sockets
            # saw the whole run, nothing opened beyond what the edges sent
            "accepted": max(0, injected - counted) + (0 if field["ready_s"] > 0 else (
                max(0, sc.get("opened", 0) - field["genuine"])
                + max(0, pfc_taken - field["genuine_pfc"])))}


def suite(key_file, protocol, wire, attacks, size, gbps, seed, work):
    from gse.workloads import traffic
    from topologies.fattree import fat_tree
    topo = fat_tree(4, link_gbps=gbps)
    msgs = traffic.permutation(len(topo.hosts), size, random.Random(seed))
    capture = None
    if "earlier" in attacks:
        _, field = attacked_run(topo, msgs, key_file, protocol, wire, (),
                                os.path.join(work, "earlier"), record=True, seed=seed)
        capture = field["recorded"]
    r, _ = attacked_run(topo, msgs, key_file, protocol, wire, attacks,
                        os.path.join(work, "attacked"), capture=capture, seed=seed)
    return r


def main(argv=None):
    if argv is None and "--field" in sys.argv:     # the field agent: nothing else imported
        return field_agent(sys.argv[sys.argv.index("--field") + 1])
    from secure_attacks import ATTACKS, new_key, show
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--field", metavar="SPEC", help=argparse.SUPPRESS)
    p.add_argument("--attacks", nargs="+", choices=ATTACKS, default=list(ATTACKS))
    p.add_argument("--protocol", choices=("gse", "roce"), default="gse")
    p.add_argument("--wire", choices=("gse", "uet"), default="gse")
    p.add_argument("--key", help="domain key file (default: a new one)")
    p.add_argument("--size", type=int, default=40_000)
    p.add_argument("--gbps", type=float, default=0.0025)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--work", help="keep the runs' files here")
    p.add_argument("--json", help="write the report here")
    args = p.parse_args(argv)
    if args.field:
        return field_agent(args.field)
    work = args.work or tempfile.mkdtemp(prefix="gse-attacks-mn-")
    os.makedirs(work, exist_ok=True)
    key = args.key or new_key(work)
    r = suite(key, args.protocol, args.wire, args.attacks, args.size, args.gbps, args.seed,
              work)
    return show(r, "Mininet, %s over %s, attacks %s" % (args.protocol, args.wire,
                                                        " ".join(args.attacks)),
                "genuine ones seen leaving the edges by the packet sockets (drops %d); the hosts "
                "took %d PFC frames (%d genuine seen); raw-socket send errors %d"
                % (r["sniff_drops"], r["pfc_taken"], r["genuine_pfc"],
                   r["injected"]["send_errors"]),
                args.json)


if __name__ == "__main__":
    sys.exit(main())
