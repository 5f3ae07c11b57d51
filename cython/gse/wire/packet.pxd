# Augments gse/wire/packet.py (Cython pure-Python mode): Packet becomes a final extension type
# with C fields.  Header fields that tests drive past their wire width on purpose (``ts``
# and ``sack_bits``, 64-bit unsigned, and ``payload``) stay Python objects, so that
# gse.wire.codec.encode, not the attribute store, is what refuses them.  (Class decorators such
# as cython.freelist or cython.no_gc are ignored in a .pxd: they are on the class in
# packet.py.)  new_packet is the C constructor of the hot paths, fill_packet what it and
# the UDP runtime's decoder write the fields with.  Packet has no C method (trim is
# trim_packet, a function), so no method-table pointer before its fields.
import cython

cdef long long _DATA
cdef long long _F_TRIMMED
cdef long long _HEADER_BYTES


@cython.final
cdef class Packet:
    # Its block starts a cache line (gse_pktalloc.h), so the header and the next 48
    # bytes are one line: what a switch reads and writes of a packet at a hop (route,
    # queue, trim, ECN, PFC, serialise).  kind, flags, prio and ingress are C ints there
    # (their values fit: a byte, 16 bits, 0/1, a port); the rest, read by the hosts, after.
    cdef public Packet qnext
    cdef public long long size
    cdef public long long dst
    cdef public long long entropy
    cdef public int kind
    cdef public int flags
    cdef public int prio
    cdef public int ingress
    # the second line: the header fields the hosts read (and a RoCE switch's flow hash)
    cdef public long long src
    cdef public long long msg_id
    cdef public long long psn
    cdef public long long payload_len
    cdef public long long msg_len
    cdef public long long credit
    cdef public long long aux
    cdef public long long sack_base
    cdef public object sack_bits
    cdef public object ts
    cdef public bint corrupt
    cdef public object payload


cpdef trim_packet(Packet pkt)


@cython.locals(pkt=Packet)
cpdef Packet new_packet(long long kind, long long src, long long dst, long long msg_id,
                        long long psn, long long entropy, long long payload_len,
                        long long flags, long long msg_len, long long credit, long long aux,
                        long long sack_base, object sack_bits, object ts, long long prio)


cdef extern from "gse_pktalloc.h":
    int gse_pktalloc_install(object type) except -1


cpdef Packet fill_packet(Packet pkt, long long kind, long long src, long long dst,
                         long long msg_id, long long psn, long long entropy,
                         long long payload_len, long long flags, long long msg_len,
                         long long credit, long long aux, long long sack_base,
                         object sack_bits, object ts, long long prio)
