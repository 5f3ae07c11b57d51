"""A kernel-forwarding host's per-packet CPU: the Python path against the compiled one.

Hosts of Mininet's ``--forwarding kernel`` (``gse.runtimes.udp.kernel_host``) send each
datagram straight to the destination host from the send socket of its entropy, and take
datagrams from any host's send ports.  Here two such hosts on loopback (their ``kernel``
sections point at each other's sockets, so no router is needed) exchange one GSE message
of ``--size`` bytes at 100 Gb/s emulated links (so the process, not the emulated rate,
is the limit), on a clock the benchmark steps (``--step-us`` per step, every socket read
between steps).  Each round runs the message once on the Python path (``KernelSender``,
``HostDriver.datagram``) and once on the compiled path (``HostPlane.kernel``), in turn,
in this one process, and prints the process's CPU per data packet (user + system,
``getrusage``) and its user-space part; the last line gives the medians and the median of
the per-round ratios.  Compiled build only (the pure build has no host plane).

    python experiments/bench_kernel_host.py --repeat 7
"""

import argparse
import os
import random
import resource
import statistics
import sys

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from gse.config import GseConfig  # noqa: E402
from gse.protocols import host_factory  # noqa: E402
from gse.runtimes.udp import dataplane, kernel_host  # noqa: E402
from gse.runtimes.udp.io import Endpoint, open_udp_socket  # noqa: E402
from gse.runtimes.udp.stepped import SteppedScheduler  # noqa: E402
from gse.runtimes.udp.link import HostNic  # noqa: E402
from gse.runtimes.udp.node import HostDriver  # noqa: E402
from switchmodel.queue import OutputQueue, QueueConfig  # noqa: E402

PS_PER_US = 1_000_000
COUNT = 32                  # send ports per host, as kernel_forwarding.SPRAY_PORTS


def free_base():
    import socket
    for _ in range(50):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", 0))
        base = s.getsockname()[1]
        s.close()
        if base + COUNT <= 65535:
            return base
    raise SystemExit("bench_kernel_host: no free range of UDP ports")


def one_run(plane, size, step_ps, gbps=100.0):
    """(CPU us, user us, data packets) of one message h0 -> h1."""
    sched = SteppedScheduler()
    cfg = GseConfig()
    make = host_factory("gse", cfg)
    qconf = QueueConfig.from_gse(cfg)
    eps = [Endpoint(open_udp_socket("127.0.0.1", 0, what="h%d" % n), "h%d" % n)
           for n in (0, 1)]
    edge = open_udp_socket("127.0.0.1", 0, what="edge")
    hosts = [list(ep.addr) for ep in eps]
    base = free_base()
    delivered, drivers, senders = [], [], []
    try:
        for nid, ep in enumerate(eps):
            agent = make(nid, random.Random("host%d" % nid), gbps)
            drv = HostDriver(nid, "h%d" % nid, sched, ep, agent,
                             on_delivered=lambda *a: delivered.append(a))
            nic = HostNic(sched, ep, edge.getsockname(), OutputQueue(qconf, random.Random(nid)),
                          gbps, 1 * PS_PER_US, 20 * PS_PER_US, nid, 0, "host", False)
            nic.peer, nic.owner, nic.agent, nic.want = 2, drv, agent, False
            drv.nic = nic
            drv.ports.append(nic)
            ep.handler = drv.datagram
            conf = {"name": "h%d" % nid, "netns": None, "mtu_wire_bytes": 4160,
                    "kernel": {"hosts": hosts, "src_ports": [base, COUNT]}}
            sender = kernel_host.install(drv, conf)
            senders.append(sender)
            drivers.append(drv)
            if plane and dataplane.attach_host(
                    drv, kernel=kernel_host.plane_args(sender, conf)) is None:
                raise SystemExit("bench_kernel_host: no compiled host path (%s)"
                                 % dataplane.why_not_host(drv))
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        drivers[0].start(0, type("M", (), {"msg_id": 1, "dst": 1, "size": size})())
        idle = 0
        while not delivered or idle < 3:
            busy = drivers[1].datagrams + drivers[0].datagrams
            for ep in eps:
                ep._readable()
            sched.advance(sched.t + step_ps)
            idle = idle + 1 if drivers[1].datagrams + drivers[0].datagrams == busy else 0
            if sched.t > 10_000 * step_ps + size * 10_000:
                raise SystemExit("bench_kernel_host: the message did not arrive")
        r1 = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        for drv in drivers:
            dataplane.detach_host(drv)
        for sender in senders:
            sender.close()
        for ep in eps:
            ep.sock.close()
        edge.close()
    npkts = (size + cfg.mtu - 1) // cfg.mtu
    user = r1.ru_utime - r0.ru_utime
    cpu = user + r1.ru_stime - r0.ru_stime
    return cpu * 1e6 / npkts, user * 1e6 / npkts, npkts


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=20_000_000, help="message bytes (20 MB)")
    p.add_argument("--repeat", type=int, default=5, help="rounds (default 5)")
    p.add_argument("--step-us", type=float, default=20.0, help="clock step (default 20 us)")
    args = p.parse_args(argv)
    if not dataplane.AVAILABLE:
        print("bench_kernel_host: the compiled host path is compiled only (pure build)",
              file=sys.stderr)
        return 2
    step = int(args.step_us * PS_PER_US)
    rows = {False: [], True: []}
    ratios = []
    print("round  python: cpu us/pkt (user)   compiled: cpu us/pkt (user)   python/compiled")
    for r in range(args.repeat):
        order = (False, True) if r % 2 == 0 else (True, False)
        got = {}
        for plane in order:
            got[plane] = one_run(plane, args.size, step)
            rows[plane].append(got[plane])
        ratios.append(got[False][0] / got[True][0])
        print("%5d  %10.2f (%6.2f)          %10.2f (%6.2f)            %.2f"
              % (r + 1, got[False][0], got[False][1], got[True][0], got[True][1], ratios[-1]))
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
           for k, v in rows.items()}
    print("median %10.2f (%6.2f)          %10.2f (%6.2f)            %.2f (range %.2f-%.2f); "
          "%d data packets a run; load %s"
          % (med[False][0], med[False][1], med[True][0], med[True][1],
             statistics.median(ratios), min(ratios), max(ratios), rows[True][0][2],
             " ".join(open("/proc/loadavg").read().split()[:3])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
