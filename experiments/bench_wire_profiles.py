"""Per-packet cost of the two wire profiles: the project's 64-byte header (gse.wire.codec,
compiled in the compiled build) and the UET profile (gse.wire.uet, pure Python).

    flock /tmp/gse-bench.lock python experiments/bench_wire_profiles.py [--repeat 5000]

Prints microseconds per encode and per decode of a 4096-byte DATA packet, an ACK and a
GRANT, the best of three rounds, and which build is active.
"""

import argparse
import time

from gse import _build
from gse.wire import wire_profile
from gse.wire.packet import ACK, DATA, F_ECT, GRANT, PRIO_CONTROL, PRIO_DATA, Packet

PACKETS = {
    "DATA 4096 B": Packet(DATA, 3, 7, msg_id=7, psn=3, entropy=0x1234, payload_len=4096,
                          flags=F_ECT, msg_len=100000, ts=123, prio=PRIO_DATA),
    "ACK": Packet(ACK, 7, 3, msg_id=7, psn=17, entropy=0x1234, msg_len=100000, sack_base=16,
                  sack_bits=0b1101, ts=123, prio=PRIO_CONTROL),
    "GRANT": Packet(GRANT, 7, 3, msg_id=7, credit=16384, ts=123, prio=PRIO_CONTROL),
}


def per_call_us(fn, arg, repeat):
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn(arg)
        dt = (time.perf_counter() - t0) / repeat * 1e6
        best = dt if best is None or dt < best else best
    return best


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5000)
    args = p.parse_args(argv)
    print("build: gse.wire.codec %s" % ("compiled" if _build.is_compiled(wire_profile("gse"))
                                         else "pure Python"))
    print("%-12s %-6s %10s %10s %8s" % ("packet", "wire", "encode us", "decode us", "bytes"))
    for name, pkt in PACKETS.items():
        for profile in ("gse", "uet"):
            codec = wire_profile(profile)
            raw = codec.encode(pkt)
            enc = per_call_us(codec.encode, pkt, args.repeat)
            dec = per_call_us(codec.decode, raw, args.repeat)
            print("%-12s %-6s %10.2f %10.2f %8d" % (name, profile, enc, dec, len(raw)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
