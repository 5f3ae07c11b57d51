"""The attacks of issue 25 on a running fabric with ``--secure``, and what came of them.

A forger who can send from a neighbour's real address (a raw socket on the host, a
compromised switch) and capture what crosses the links tries, while the k=4 Fat-Tree runs:

* ``forge``: every end-to-end packet kind -- DATA (with the wrong message length, as in
  the issue), trimmed DATA, REQUEST, GRANT, ACK ("all of it arrived"), NACK, CNP -- to
  every host from its edge switch's address, once in the clear and once sealed under a
  guessed key with the run's real epoch, salt and domain id (all public);
* ``pause``: PAUSE (32-bit quanta at their maximum) and RESUME to every host from its
  edge switch, in the clear and sealed under a guessed link key, and a PAUSE to every
  port of every switch from the neighbour on that port;
* ``replay``: a copy of every ``--replay-every``-th datagram a switch sent to a host, sent
  again from the same address a little later;
* ``earlier``: the datagrams switches sent to hosts in an earlier run with the same key
  file (captured by a first run of the same traffic), replayed at their times.

Measured: every honest message delivered once, intact and at its size; every injected
datagram counted where it arrived (the host's ``secure`` refusals, a node's ``pfc_in``
refusals, or a PAUSE cut to the link's quanta: ``clamped``); and what was *accepted*:
datagrams a host's sublayer opened beyond the genuine ones its edge switch sent it (every
switch port is tapped), PFC frames a node took beyond the genuine ones.  Over UDP in one
process (``--runtime udp``); ``tests/test_secure_attacks.py`` runs the same attacks.

    python experiments/secure_attacks.py --attacks forge pause replay earlier
    python experiments/secure_attacks.py --protocol roce --attacks forge pause
    python experiments/secure_attacks.py --wire uet --attacks forge replay earlier
"""

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from gse.protocols import default_config  # noqa: E402
from gse.runtimes.udp import dataplane  # noqa: E402
from gse.runtimes.udp.config import udp_profile  # noqa: E402
from gse.runtimes.udp.io import run_async  # noqa: E402
from gse.runtimes.udp.network import UdpNetwork  # noqa: E402
from gse.runtimes.udp.secure import REFUSALS, LinkAuth, Tss  # noqa: E402
from gse.runtimes.udp.secure_keys import KeySchedule, domain_id, load_domain_key  # noqa: E402
from gse.wire import uet  # noqa: E402
from gse.wire.codec import encode, payload_pattern  # noqa: E402
from gse.wire.packet import (ACK, CNP, DATA, F_TRIMMED, GRANT, NACK, PAUSE,  # noqa: E402
                             PRIO_CONTROL, PRIO_DATA, REQUEST, RESUME, Packet)
from gse.workloads import traffic  # noqa: E402
from topologies.fattree import fat_tree  # noqa: E402

ATTACKS = ("forge", "pause", "replay", "earlier")
MAX_QUANTA = 0xFFFFFFFF               # the wire's 32 bits (a legitimate PAUSE: <= 65535)
GUESSED_KEY = b"a forger's guess at the domain key"


def forged_packets(h, edge, msgs, wire, attacks):
    """(label, packet) of every kind the forger sends host ``h`` as if from ``edge``."""
    inbound = next(m for m in msgs if m.dst == h)
    outbound = next(m for m in msgs if m.src == h)
    data = Packet(DATA, inbound.src, h, msg_id=inbound.msg_id, psn=0, payload_len=1024,
                  msg_len=500_000, prio=PRIO_DATA)
    data.payload = payload_pattern(inbound.src, inbound.msg_id, 0, 1024)
    out = [("data", data),
           ("trimmed", Packet(DATA, inbound.src, h, msg_id=inbound.msg_id, psn=1,
                              payload_len=1024, msg_len=500_000, flags=F_TRIMMED)),
           ("request", Packet(REQUEST, inbound.src, h, msg_id=0x7FFF0000 + h, psn=1,
                              msg_len=2 ** 31, credit=2 ** 31)),
           ("grant", Packet(GRANT, outbound.dst, h, msg_id=outbound.msg_id, credit=65536,
                            aux=2 ** 31)),
           ("ack", Packet(ACK, outbound.dst, h, msg_id=outbound.msg_id,
                          psn=-(-outbound.size // 4096), msg_len=outbound.size)),
           ("nack", Packet(NACK, outbound.dst, h, msg_id=outbound.msg_id, psn=0))]
    if wire == "gse":                 # no UET form: the UET profile carries GSE only
        out.append(("cnp", Packet(CNP, outbound.dst, h, msg_id=outbound.msg_id)))
    if "forge" not in attacks:
        out = []
    if "pause" in attacks and wire == "gse":
        out += [("pause", Packet(PAUSE, edge, h, credit=MAX_QUANTA, aux=PRIO_DATA)),
                ("resume", Packet(RESUME, edge, h))]
    for _, pkt in out:
        if pkt.kind != DATA:
            pkt.prio = PRIO_CONTROL
    return out


def forger(confs, n_hosts, wire):
    """A forger's sealing: the run's epoch and salt and the domain's id (public: on the
    wire and in the configurations), a guessed key.  (None, None) without --secure."""
    secure = next((c["secure"] for c in confs if c.get("secure")), None)
    if secure is None:
        return None, None
    sched = KeySchedule(GUESSED_KEY, bytes.fromhex(secure["salt"]), secure["epoch"])
    tss = Tss(sched, 0, n_hosts, wire)
    tss.sdi = domain_id(load_domain_key(secure["key_file"]))   # (seen on the wire)
    return tss, LinkAuth(sched, 0, [])


def forgeries(topo, confs, msgs, wire, attacks):
    """[(to node, from node, label, datagram)] of the ``forge`` and ``pause`` attacks."""
    enc = uet.encode if wire == "uet" else encode
    out = []
    if "forge" in attacks or "pause" in attacks:
        for h in topo.hosts:
            edge = topo.peer(h, 0)[0]
            tss, link = forger(confs, len(topo.hosts), wire)
            for label, pkt in forged_packets(h, edge, msgs, wire, attacks):
                raw = enc(pkt)
                out.append((h, edge, label, raw))
                if tss is not None:              # sealed under a guessed key
                    tss.node = pkt.src
                    tss.next_ctr[pkt.dst] = 1 << 20
                    link.node = edge
                    link.next_ctr[pkt.dst] = 1 << 20
                    sealed = (link if pkt.kind in (PAUSE, RESUME) else tss).seal(pkt, raw)
                    out.append((h, edge, label + "/sealed", sealed))
    if "pause" in attacks and wire == "gse":
        for s in topo.switches:
            for port in range(len(topo.nodes[s].ports)):
                peer = topo.peer(s, port)[0]
                pkt = Packet(PAUSE, peer, s, credit=MAX_QUANTA, aux=PRIO_DATA,
                             prio=PRIO_CONTROL)
                out.append((s, peer, "pause@switch", encode(pkt)))
    return out


class Taps:
    """Every switch port's sends, counted by destination and class (PFC or not); with
    ``replay_every`` each n-th datagram to a host is sent again from the same address
    ``replay_delay_s`` later; with ``record`` every datagram to a host is kept with its
    time since ``t0`` (an earlier run's capture)."""

    def __init__(self, net, wire, replay_every=0, replay_delay_s=0.002, record=False):
        self.net = net
        self.e2e = {}                # host -> genuine datagrams sent to it
        self.pfc = {}                # node -> genuine PFC frames sent to it
        self.replayed = 0
        self.captured = []           # (t since t0, edge, host, datagram)
        self.t0 = None
        self.loop = asyncio.get_running_loop()
        n_hosts = len(net.topo.hosts)
        for s in net.topo.switches:
            node = net.nodes[s]
            dataplane.detach(node)   # the taps are on the Python ports' sends
            for port in node.ports:
                port.send = self._tap(port.send, s, port.peer, port.peer < n_hosts, wire,
                                      replay_every, replay_delay_s, record)
                port.ep = None       # the port now calls ``send``: the tap

    def _tap(self, send, s, peer, to_host, wire, every, delay, record):
        endpoints = self.net.endpoints
        state = {"n": 0}

        def tapped(data, addr):
            send(data, addr)
            pfc = wire == "gse" and data[1] in (PAUSE, RESUME)
            if pfc:
                self.pfc[peer] = self.pfc.get(peer, 0) + 1
                return
            if not to_host:
                return
            self.e2e[peer] = self.e2e.get(peer, 0) + 1
            if record and self.t0 is not None:
                self.captured.append((time.perf_counter() - self.t0, s, peer, bytes(data)))
            state["n"] += 1
            if every and state["n"] % every == 0:
                self.replayed += 1
                self.loop.call_later(delay, endpoints[s].send, bytes(data), addr)
        return tapped


async def attacked_run(topo, msgs, key_file, protocol="gse", wire="gse", attacks=(),
                       replay_every=4, capture=None, record=False, seed=1, timeout_s=90.0,
                       secure=True):
    """One run under ``attacks``; ``capture``: an earlier run's ``Taps.captured`` to
    replay (the ``earlier`` attack).  Returns the report (``report``) and the taps."""
    cfg = udp_profile(default_config(protocol))
    async with UdpNetwork(topo, msgs, protocol, cfg, seed=seed, wire=wire,
                          secure_key_file=key_file if secure else None) as net:
        taps = Taps(net, wire, replay_every if "replay" in attacks else 0, record=record)
        injected = forgeries(topo, net.confs, msgs, wire, attacks)
        loop = asyncio.get_running_loop()
        taps.t0 = time.perf_counter()
        task = asyncio.ensure_future(net.run(timeout_s=timeout_s))
        earlier = 0
        last = 0.0
        if capture and "earlier" in attacks:
            for t, edge, h, data in capture:
                loop.call_later(t, net.endpoints[edge].send, data, net.addresses[h])
                earlier += 1
                last = max(last, t)
        await asyncio.sleep(0.05)                 # the traffic has started
        for i, (to, frm, _label, data) in enumerate(injected):
            net.endpoints[frm].send(data, net.addresses[to])
            if i % 16 == 15:
                await asyncio.sleep(0.001)
        await task
        late = taps.t0 + last - time.perf_counter()
        if late > 0:                              # the earlier run lasted longer
            await asyncio.sleep(late)
        for _ in range(40):                       # what is still on its way arrives
            await asyncio.sleep(0.025)
    return report(net, msgs, taps, injected, earlier), taps


def report(net, msgs, taps, injected, earlier):
    """What the run delivered and what became of every injected datagram."""
    s = net.result().summary
    u = s["udp"]
    expected = {}
    for m in msgs:
        expected.setdefault(m.dst, {})[(m.src, m.msg_id)] = m.size
    wrong = 0
    for h in net.hosts:
        got = {k: v[0] for k, v in h.delivered.items()}
        wrong += sum(1 for k, size in expected.get(h.node, {}).items() if got.get(k) != size)
        wrong += sum(1 for k in got if k not in expected.get(h.node, {}))
    accepted_e2e = accepted_pfc = opened = 0
    refused = dict.fromkeys(REFUSALS, 0)
    for h in net.hosts:
        if h.tss is not None:
            opened += h.tss.opened
            accepted_e2e += max(0, h.tss.opened - taps.e2e.get(h.node, 0))
            for k, n in h.tss.refused.items():
                refused[k] += n
    pfc_refused = {"pfc_off": 0}
    clamped = pfc_taken = 0
    for node in net.nodes:
        c = node.counters(0)["pfc_in"]
        accepted_pfc += max(0, c["accepted"] - taps.pfc.get(node.node, 0))
        clamped += c["clamped"]
        pfc_taken += c["accepted"]
        for k in ("pfc_off",) + REFUSALS:
            if c.get(k):
                pfc_refused[k] = pfc_refused.get(k, 0) + c[k]
    counted = sum(refused.values()) + sum(pfc_refused.values()) + clamped
    sent = len(injected) + taps.replayed + earlier
    return {"end": u["end"], "messages": len(msgs), "delivered": s["delivered"],
            "lost": s["lost"], "wrong_or_extra": wrong,
            "duplicate_deliveries": u["duplicate_deliveries"],
            "payload_errors": u["payload_errors"], "errors": u["errors"],
            "kernel_drops": u["kernel_drops"], "malformed": u["malformed_total"],
            "injected": {"forged": len(injected), "replayed": taps.replayed,
                         "earlier_run": earlier, "total": sent},
            "counted": counted, "refused_e2e": refused, "refused_pfc": pfc_refused,
            "clamped": clamped, "opened": opened, "genuine_to_hosts": sum(taps.e2e.values()),
            "pfc_taken": pfc_taken, "genuine_pfc": sum(taps.pfc.values()),
            "accepted": accepted_e2e + accepted_pfc}


def honest(r):
    """Every honest message delivered once, intact, at its size."""
    return (r["end"] == "done" and r["lost"] == 0 and r["delivered"] == r["messages"]
            and r["wrong_or_extra"] == 0 and r["duplicate_deliveries"] == 0
            and r["payload_errors"] == 0 and not r["errors"])


def suite(key_file, protocol, wire, attacks, size, gbps, seed, secure=True):
    """The earlier run (captured) when ``earlier`` is asked, then the attacked run."""
    topo = fat_tree(4, link_gbps=gbps)
    msgs = traffic.permutation(len(topo.hosts), size, random.Random(seed))
    capture = None
    if "earlier" in attacks:
        first, taps = run_async(lambda: attacked_run(topo, msgs, key_file, protocol, wire,
                                                     (), record=True, seed=seed,
                                                     secure=secure), "auto")
        capture = taps.captured
    r, _ = run_async(lambda: attacked_run(topo, msgs, key_file, protocol, wire, attacks,
                                          capture=capture, seed=seed, secure=secure), "auto")
    return r


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--attacks", nargs="+", choices=ATTACKS, default=list(ATTACKS))
    p.add_argument("--protocol", choices=("gse", "roce"), default="gse")
    p.add_argument("--wire", choices=("gse", "uet"), default="gse")
    p.add_argument("--key", help="domain key file (default: a new one in a temporary folder)")
    p.add_argument("--plain", action="store_true", help="without --secure (for comparison)")
    p.add_argument("--size", type=int, default=200_000)
    p.add_argument("--gbps", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", help="write the report here")
    args = p.parse_args(argv)
    key = args.key or new_key(tempfile.mkdtemp(prefix="gse-attacks-"))
    r = suite(key, args.protocol, args.wire, args.attacks, args.size, args.gbps, args.seed,
              secure=not args.plain)
    return show(r, "%s over %s, attacks %s%s" % (
        args.protocol, args.wire, " ".join(args.attacks), " (no --secure)" if args.plain
        else ""), "took %d PFC frames (%d genuine sent)" % (r["pfc_taken"], r["genuine_pfc"]),
        args.json)


def new_key(folder):
    """A new domain key file in ``folder``."""
    path = os.path.join(folder, "domain.key")
    with open(path, "w") as f:
        f.write(os.urandom(32).hex() + "\n")
    return path


def show(r, title, more, json_path=None):
    """Print a report (and write it to ``json_path``); the exit code: 0 when every honest
    message arrived intact and nothing injected was accepted."""
    print(title)
    print("honest messages: %d of %d delivered once, intact, at their size: %s"
          % (r["delivered"], r["messages"], "yes" if honest(r) else "NO"))
    print("injected %(total)d (forged %(forged)d, replayed %(replayed)d, earlier run "
          "%(earlier_run)d)" % r["injected"])
    print("counted %d: end to end %s; PFC %s; PAUSE cut to the link's quanta %d"
          % (r["counted"], {k: v for k, v in r["refused_e2e"].items() if v},
             r["refused_pfc"], r["clamped"]))
    print("opened %d datagrams at hosts (%d genuine sent to them); %s"
          % (r["opened"], r["genuine_to_hosts"], more))
    print("accepted: %d" % r["accepted"])
    if json_path:
        with open(json_path, "w") as f:
            json.dump(r, f, indent=2)
            f.write("\n")
    return 0 if honest(r) and r["accepted"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
