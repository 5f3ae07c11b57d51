"""The one packet object every agent handles.

The simulator passes these objects between agents without encoding them; the UDP runtimes
encode them with :mod:`gse.wire.codec` (layout in ``docs/wire-format.md``).  A packet's wire size
is the fixed 64-byte header plus its payload, so what the simulator serialises on a link is
exactly what the UDP runtime puts in a datagram.

Plain class with ``__slots__`` and integer fields only, so that Cython can compile it into
a C struct-like extension type later without changing behaviour.
"""

try:
    import cython  # only for the class decorators below: no-ops in pure Python
    cython.compiled       # the real Cython: without it, `import cython` from the repository
except (ImportError, AttributeError):      # root finds its cython/ folder, a namespace
    from gse import _no_cython as cython   # package without these decorators

WIRE_VERSION = 1
HEADER_BYTES = 64

# Packet kinds (one byte on the wire).
DATA = 0
REQUEST = 1
GRANT = 2
ACK = 3
NACK = 4
PAUSE = 5
RESUME = 6
CNP = 7
KIND_NAMES = ("DATA", "REQUEST", "GRANT", "ACK", "NACK", "PAUSE", "RESUME", "CNP")
MAX_KIND = CNP

# Flags (16 bits on the wire).
F_ECN_CE = 0x01      # congestion experienced (set by a switch) or echoed (ACK)
F_TRIMMED = 0x02     # payload cut by a switch: header only, payload_len keeps the original
F_RETX = 0x04        # retransmission (DATA) / credit re-request (REQUEST)
F_LAST = 0x08        # last packet of the message
F_UNSCHED = 0x10     # sent without credit (unscheduled first window)
F_ECT = 0x20         # ECN-capable transport
KNOWN_FLAGS = 0x3F
# Set only by the transport security sublayer (gse.runtimes.udp.secure): the datagram
# carries a security trailer after its payload (docs/wire-format.md, "Authenticated
# packets").  Not in KNOWN_FLAGS: agents never see or set it.
F_SEC = 0x40

# Traffic classes: 0 = data, 1 = control (headers, grants, ACKs, trimmed packets).
PRIO_DATA = 0
PRIO_CONTROL = 1

# fill_packet's constants: compiled, C integers (packet.pxd), where the names above stay
# Python attributes of the module for its importers
_DATA = DATA
_F_TRIMMED = F_TRIMMED
_HEADER_BYTES = HEADER_BYTES


@cython.freelist(1024)
@cython.no_gc
@cython.cclass
class Packet:
    """A transport packet; field meanings per kind are in docs/wire-format.md.

    ``size``, ``corrupt``, ``ingress`` and ``qnext`` are runtime-side, not header fields:
    ``size`` (wire bytes) is derived from the header and payload; ``corrupt`` marks a packet
    whose checksum would fail (an emulated bit flip), which the receiving agent counts and
    drops like a bad datagram; ``ingress`` is the port a switch received it on (PFC
    accounting); ``qnext`` links it to the packet behind it while it waits in a switch's
    output queue (``switchmodel.queue``), None otherwise.

    In the compiled build a packet is allocated from a free list of recycled ones and is not
    tracked by the garbage collector: its fields are integers, bytes, None or (``qnext``)
    the next packet of an acyclic queue, so it can never be part of a reference cycle, and
    a simulation makes hundreds of thousands.
    """

    __slots__ = ("kind", "flags", "src", "dst", "msg_id", "psn", "entropy", "payload_len",
                 "msg_len", "credit", "aux", "sack_base", "sack_bits", "ts", "prio",
                 "size", "corrupt", "payload", "ingress", "qnext")

    def __init__(self, kind, src, dst, msg_id=0, psn=0, entropy=0, payload_len=0,
                 flags=0, msg_len=0, credit=0, aux=0, sack_base=0, sack_bits=0, ts=0,
                 prio=PRIO_CONTROL):
        self.kind = kind
        self.flags = flags
        self.src = src
        self.dst = dst
        self.msg_id = msg_id
        self.psn = psn
        self.entropy = entropy
        self.payload_len = payload_len
        self.msg_len = msg_len
        self.credit = credit
        self.aux = aux
        self.sack_base = sack_base
        self.sack_bits = sack_bits
        self.ts = ts
        self.prio = prio
        self.size = (HEADER_BYTES + payload_len if kind == DATA and not flags & F_TRIMMED
                     else HEADER_BYTES)
        self.corrupt = False
        self.payload = None   # bytes over UDP; None in the simulator
        self.ingress = -1     # switch-local: the port it came in by (PFC accounting)
        self.qnext = None     # the packet behind it in a switch queue (switchmodel.queue)

    def trim(self):
        """Cut the payload: the header goes on at control priority, payload_len is kept."""
        trim_packet(self)

    def __repr__(self):
        return ("Packet(%s %d->%d msg=%d psn=%d ent=%d len=%d flags=0x%x)"
                % (KIND_NAMES[self.kind] if 0 <= self.kind <= MAX_KIND else self.kind,
                   self.src, self.dst, self.msg_id, self.psn, self.entropy,
                   self.payload_len, self.flags))

    def fields(self):
        """The header as a tuple, for equality in tests and golden runs."""
        return (self.kind, self.flags, self.src, self.dst, self.msg_id, self.psn,
                self.entropy, self.payload_len, self.msg_len, self.credit, self.aux,
                self.sack_base, self.sack_bits, self.ts, self.prio)


# The compiled build gives every packet a block that starts a cache line, where the fields
# a switch reads make one line (cython/gse/wire/gse_pktalloc.h and packet.pxd): a hop then
# misses one line of a cold packet, not three.  The pure build never makes the call.
def _align_packets():
    if cython.compiled:
        gse_pktalloc_install(Packet)


_align_packets()


def trim_packet(pkt):
    """``pkt.trim()``, the form the hot paths call: a function, so that the compiled Packet
    has no method table (whose pointer would push the fields a switch reads out of the
    packet's first cache line, packet.pxd)."""
    pkt.flags |= F_TRIMMED
    pkt.size = HEADER_BYTES
    pkt.prio = PRIO_CONTROL
    pkt.payload = None


def make_packet(*, kind, src, dst, msg_id=0, psn=0, entropy=0, payload_len=0, flags=0,
                msg_len=0, credit=0, aux=0, sack_base=0, sack_bits=0, ts=0,
                prio=PRIO_CONTROL):
    """``Packet(...)`` with every field named: the form for code off the hot paths (tests,
    experiments, captures, the fabric-mode switch's control packets).

    The constructor and :func:`new_packet` take up to fifteen fields by position, where
    ``credit`` and ``aux`` or ``ts`` and ``prio`` are easy to swap unnoticed; here each one
    is named, and any omitted one is zero (``prio``: control), as in the constructor."""
    return Packet(kind, src, dst, msg_id, psn, entropy, payload_len, flags, msg_len, credit,
                  aux, sack_base, sack_bits, ts, prio)


def new_packet(kind, src, dst, msg_id, psn, entropy, payload_len, flags, msg_len, credit,
               aux, sack_base, sack_bits, ts, prio):
    """``Packet(...)`` with all fifteen header fields given, in the constructor's order.

    The agents build their packets with it on the hot paths: the same object as the
    constructor makes, but the compiled build turns it into a C function that takes C
    integers, without the constructor's argument handling (cython/gse/wire/packet.pxd)."""
    return fill_packet(Packet.__new__(Packet), kind, src, dst, msg_id, psn, entropy,
                       payload_len, flags, msg_len, credit, aux, sack_base, sack_bits, ts,
                       prio)


def fill_packet(pkt, kind, src, dst, msg_id, psn, entropy, payload_len, flags, msg_len,
                credit, aux, sack_base, sack_bits, ts, prio):
    """Write the fifteen header fields (``new_packet``'s order) over ``pkt`` and reset its
    runtime fields; returns ``pkt``.  ``new_packet`` fills a new packet with it, the UDP
    runtime's switches the one packet each decodes every datagram into."""
    pkt.kind = kind
    pkt.flags = flags
    pkt.src = src
    pkt.dst = dst
    pkt.msg_id = msg_id
    pkt.psn = psn
    pkt.entropy = entropy
    pkt.payload_len = payload_len
    pkt.msg_len = msg_len
    pkt.credit = credit
    pkt.aux = aux
    pkt.sack_base = sack_base
    pkt.sack_bits = sack_bits
    pkt.ts = ts
    pkt.prio = prio
    pkt.size = (_HEADER_BYTES + payload_len if kind == _DATA and not flags & _F_TRIMMED
                else _HEADER_BYTES)
    pkt.corrupt = False
    pkt.payload = None
    pkt.ingress = -1
    pkt.qnext = None
    return pkt
