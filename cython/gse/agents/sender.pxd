# Augments gse/agents/sender.py.  NEVER stays a Python-level constant (gse.agents.gse_host imports it).
import cython
from gse.common.fifo cimport Fifo
from gse.common.sendlog cimport SendLog
from gse.agents.entropy cimport EntropySelector
from gse.agents.phases cimport Phased, enter
from gse.common.bits cimport le64, lowest_bit
from gse.wire.packet cimport Packet, new_packet

cdef long long DATA
cdef long long F_LAST
cdef long long F_RETX
cdef long long F_UNSCHED
cdef long long F_ECT
cdef long long PRIO_DATA
cdef long long PRIO_CONTROL
cdef long long REQUEST
cdef long long MASK32
cdef long long AMBIGUOUS
cdef long long TAIL_PKTS
cdef long long WARY
cdef long long SIGN32
cdef long long WRAP32
cdef long long SENDING
cdef long long DONE


cdef class OutMsg(Phased):
    cdef public long long msg_id
    cdef public long long src
    cdef public long long dst
    cdef public long long size
    cdef public long long mtu
    cdef public long long npkts
    cdef public long long start_ps
    cdef public long long next_new
    cdef public long long unsched_pkts
    cdef public long long unsched_payload
    cdef public long long credit
    cdef public long long credit_received
    cdef public long long need_total
    cdef public long long nacked
    cdef public bytearray acked
    cdef public long long cum_acked
    cdef public long long n_acked
    cdef public long long[::1] sent_at
    cdef public int[::1] sent_entropy
    cdef public SendLog inflight
    cdef public long long max_acked_sent
    cdef public Fifo retx
    cdef public bytearray in_retx
    cdef public long long probe     # credit-free sends owed to RTO and tail probes
    cdef public long long rto_deadline
    cdef public long long rto_backoff
    cdef public long long req_deadline
    cdef public long long req_backoff
    cdef public long long req_seq
    cdef public long long req_entropy
    cdef public long long back_entropy
    cdef public long long tlp_deadline
    cdef public long long last_progress
    cdef public EntropySelector entropy
    cdef public long long retransmits
    cdef public bint in_ring
    cdef public long long finish_ps

    cpdef setup(self, long long msg_id, long long src, long long dst, object size,
                long long mtu, long long unsched_bytes, long long entropy_base, object config,
                long long now, object dead, long long cursor)

    cpdef long long payload_of(self, long long psn) except? -1

    cpdef release(self)

    @cython.locals(retx=Fifo)
    cpdef bint can_send(self) except -1

    @cython.locals(flags="long long", psn="long long", length="long long",
                   entropy="long long", pkt=Packet, sent=object, probe=bint)
    cpdef Packet next_packet(self, long long now)

    @cython.locals(entropy="long long")
    cpdef Packet request(self, long long now, bint retx, long long suspect_until=*)

    @cython.locals(entropy="long long")
    cpdef long long trusted_entropy(self, long long now, long long avoid) except? -1

    @cython.locals(ref="long long", d="long long")
    cpdef long long on_grant(self, long long total_wire) except? -1

    cpdef bint starved(self) except -1

    cpdef bint is_acked(self, long long psn) except -1

    @cython.locals(entropy="long long", t="long long")
    cpdef _set_acked(self, long long psn, long long marked)

    @cython.locals(before="long long", npkts="long long", acked=bytearray, psn="long long",
                   p="long long", bits="unsigned long long", new="unsigned long long")
    cpdef long long on_ack(self, long long cum, long long sack_base, object sack_bits,
                           long long marked=*) except? -1

    @cython.locals(limit="long long", lost="long long", sent="long long", psn="long long",
                   inflight=SendLog)
    cpdef long long detect_losses(self, long long window_ps,
                                  long long suspect_until=*) except? -1

    cpdef _lost_on(self, long long entropy, long long suspect_until)

    cpdef bint queued(self, long long psn) except -1

    cpdef bint mark_lost(self, long long psn) except -1

    cpdef long long probe_tail(self) except? -2

    cpdef long long on_timeout(self, long long suspect_until=*) except? -2
