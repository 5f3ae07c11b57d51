# Augments gse/wire/packet.py (Cython pure-Python mode): Packet becomes a final extension type
# with C fields.  Header fields that tests drive past their wire width on purpose (``ts``
# and ``sack_bits``, 64-bit unsigned, and ``payload``) stay Python objects, so that
# gse.wire.codec.encode, not the attribute store, is what refuses them.  (Class decorators such
# as cython.freelist or cython.no_gc are ignored in a .pxd: they are on the class in
# packet.py.)  new_packet is the C constructor of the hot paths, fill_packet what it and
# the UDP runtime's decoder write the fields with.
import cython


@cython.final
cdef class Packet:
    cdef public Packet qnext          # first: on the cache line of the refcount
    cdef public long long kind
    cdef public long long flags
    cdef public long long src
    cdef public long long dst
    cdef public long long msg_id
    cdef public long long psn
    cdef public long long entropy
    cdef public long long payload_len
    cdef public long long msg_len
    cdef public long long credit
    cdef public long long aux
    cdef public long long sack_base
    cdef public object sack_bits
    cdef public object ts
    cdef public long long prio
    cdef public long long size
    cdef public bint corrupt
    cdef public object payload
    cdef public long long ingress

    cpdef trim(self)


@cython.locals(pkt=Packet)
cpdef Packet new_packet(long long kind, long long src, long long dst, long long msg_id,
                        long long psn, long long entropy, long long payload_len,
                        long long flags, long long msg_len, long long credit, long long aux,
                        long long sack_base, object sack_bits, object ts, long long prio)


cpdef Packet fill_packet(Packet pkt, long long kind, long long src, long long dst,
                         long long msg_id, long long psn, long long entropy,
                         long long payload_len, long long flags, long long msg_len,
                         long long credit, long long aux, long long sack_base,
                         object sack_bits, object ts, long long prio)
