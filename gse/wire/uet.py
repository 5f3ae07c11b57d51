"""The UET wire profile: the project's packets as UET 1.0 PDS and SES headers over UDP 4793.

An alternative to ``gse.wire.codec`` (the project's own 64-byte header, the default) with
the same interface -- ``encode(pkt) -> bytes``, ``decode(data, max_datagram) -> Packet``,
``WireError`` with a stable ``reason`` -- selected by the runtimes (``--wire uet``), so
that captures decode with UET dissectors.  Headers are built and parsed by
``gse.wire.uet_headers``; this module maps the GSE protocol's packet kinds onto them:

=============  ===============================================================================
packet         UET headers
=============  ===============================================================================
DATA           PDS RUD_REQ (type 2) -- RUD_CC_REQ (13) with ``credit_target`` = the unscheduled
               window when ``F_UNSCHED`` -- ``psn``, ``retrans`` = ``F_RETX``; SES standard
               request, opcode SEND: ``start_of_msg`` = psn 0, ``end_of_msg`` = ``F_LAST``,
               ``message_id`` = msg_id mod 2^16, ``initiator`` = src, ``request_length`` =
               msg_len, ``buffer_offset`` = the packet's byte offset in the message (and,
               after the first packet, ``payload_length`` and ``message_offset``)
trimmed DATA   the same headers without the payload (``F_TRIMMED`` in the trailer)
ACK            PDS ACK_CC (8), NSCC: ``cack_psn`` = psn - 1 (every psn up to it received),
               ``sack_psn_offset`` = sack_base - cack_psn, ``sack_bitmap`` = sack_bits,
               ``ecn_marked`` = ``F_ECN_CE``
NACK           PDS NACK (10), ``nack_code`` 0x01 (trimmed), ``nack_psn`` = psn
REQUEST        PDS CONTROL (11), ``ctl_type`` 8 (credit request), ``psn``, ``payload`` = credit
               (the credit the message needs), ``retrans`` = ``F_RETX``
GRANT          PDS CONTROL (11), ``ctl_type`` 7 (credit), ``payload`` = credit granted
=============  ===============================================================================

Every PDS header names the PDC by ``spdcid`` = ``dpdcid`` = msg_id mod 2^16: the
project's PSNs count per message, as a fresh PDC's do.  PAUSE, RESUME and CNP (the
RoCE/PFC baseline's) have no UET form and are refused: the profile carries the GSE
protocol.

**The trailer.**  What real UET carries in the IP and UDP headers -- addresses, the
entropy (UDP source port), ECN and the traffic class -- cannot ride there in an overlay
whose sockets are per node, and some fields have no UET place (the project's 32-bit
message id, the echoed send time, the cumulative credit in ``aux`` of a REQUEST or
GRANT).  They travel in a 40-byte trailer at the end of the UDP payload, after the data,
which UET dissectors show as payload: src (4), dst (4), msg_id (4), msg_len (4), aux (4),
ts (8), entropy (2), payload_len (2), flags (1: ``F_ECN_CE``, ``F_TRIMMED``, ``F_ECT``),
prio (1), the magic ``GS`` (2) and a CRC-32 over the whole datagram before it (4).  The
decoder checks that the UET fields and the trailer agree.

**Authenticated packets** (``--secure``, ``gse.runtimes.udp.secure``): the UET TSS header
(16 bytes: type 1, ``sp`` 1, ``an`` 0, ``sdi`` = the domain's id, ``ssi`` = src, the TSC)
comes first; the payload is encrypted in place and followed by its tag (untrimmed DATA
only) and the header's tag, then the trailer, whose CRC covers all of it.  A switch reads
PDS, SES and trailer in the clear; one that trims keeps the TSS header and the header
tag (``reframe``).

An ACK without SACK bits carries ``sack_psn_offset`` 0 and decodes with ``sack_base`` 0
(the sender ignores the base of an empty bitmap); a SACK window more than 32,767 packets
from the cumulative point does not fit UET's 16-bit offset and is refused by ``encode``.
Otherwise ``decode(encode(pkt))`` gives ``pkt``'s header fields and payload back, and
``encode(decode(data)) == data``.
"""

import struct
import zlib

from gse.wire import uet_headers as uh
from gse.wire.codec import (MAX_DATAGRAM, R_CHECKSUM, R_FIELD, R_FLAGS, R_KIND, R_LENGTH,
                            R_OVERSIZED, R_TRUNCATED, R_VERSION, SEC_TAG, SEC_TRAILER, WireError,
                            payload_pattern, verify_payload)
from gse.wire.packet import (ACK, DATA, F_ECN_CE, F_ECT, F_LAST, F_RETX, F_SEC, F_TRIMMED,
                             F_UNSCHED, GRANT, KIND_NAMES, NACK, REQUEST, Packet)

__all__ = ["MAX_OVERHEAD", "SECURE_OVERHEAD", "TRAILER_BYTES", "TSS_BYTES", "UDP_PORT",
           "WireError", "decode", "encode", "overhead", "reframe", "secure_parts",
           "secure_wrap", "tss_header", "verify_payload"]

UDP_PORT = uh.UDP_PORT
TRAILER = struct.Struct("!IIIIIQHHBBHI")
TRAILER_BYTES = TRAILER.size                       # 40
MAGIC = 0x4753                                     # "GS"
TRAILER_FLAGS = F_ECN_CE | F_TRIMMED | F_ECT
MAX_PAYLOAD_LENGTH = (1 << 14) - 1                 # SES payload_length is 14 bits
MAX_OVERHEAD = uh.PDS[uh.RUD_CC_REQ].size + uh.SES["std"].size + TRAILER_BYTES
MASK16 = 0xFFFF
MASK32 = 0xFFFFFFFF
# The TSS header with its SSI: type 1, sp 1, rsvd 0, an 0, sdi (24) | ssi (32) | TSC (64)
TSS_BYTES = uh.TSS_HEADER.size                     # 16
SECURE_OVERHEAD = TSS_BYTES + 2 * SEC_TAG          # at most, beyond the plain datagram
_TSS = struct.Struct("!IIQ")
_TSS_TOP = (uh.TSS << 3 | 0x04) << 24              # type 1, sp 1, rsvd 0, an 0
_CRC = struct.Struct("!I")
_FLAGS_AT = 32                                     # the flags byte in the trailer

_FLAGS_OF = {DATA: F_ECN_CE | F_TRIMMED | F_RETX | F_LAST | F_UNSCHED | F_ECT,
             ACK: F_ECN_CE, NACK: F_ECN_CE, REQUEST: F_RETX, GRANT: 0}


def overhead(kind, unsched=False):
    """Bytes of UET headers and trailer around a packet of ``kind``."""
    if kind == DATA:
        pds = uh.PDS[uh.RUD_CC_REQ if unsched else uh.RUD_REQ].size
        return pds + uh.SES["std"].size + TRAILER_BYTES
    return {ACK: uh.PDS[uh.ACK_CC].size, NACK: uh.PDS[uh.NACK].size,
            REQUEST: uh.PDS[uh.CONTROL].size, GRANT: uh.PDS[uh.CONTROL].size}[kind] \
        + TRAILER_BYTES


def _kind_name(kind):
    return KIND_NAMES[kind] if isinstance(kind, int) and 0 <= kind < len(KIND_NAMES) else \
        "kind %r" % (kind,)


def _headers(pkt):
    """The UET headers (Datagram without payload) of ``pkt``; ValueError if none fit."""
    kind = pkt.kind
    flags = pkt.flags
    pdc = pkt.msg_id & MASK16
    retrans = 1 if flags & F_RETX else 0
    if kind == DATA:
        cc = flags & F_UNSCHED
        ptype = uh.RUD_CC_REQ if cc else uh.RUD_REQ
        pds = {"type": ptype, "next_hdr": uh.HDR_STD, "retrans": retrans, "psn": pkt.psn,
               "spdcid": pdc, "dpdcid": pdc}
        if cc:
            if pkt.credit >> 24:
                raise ValueError("field credit=%d (the unscheduled window) does not fit UET's "
                                 "24-bit credit_target" % pkt.credit)
            pds["credit_target"] = pkt.credit
        elif pkt.credit:
            raise ValueError("field credit=%d on a DATA packet without F_UNSCHED has no UET "
                             "place" % pkt.credit)
        som = pkt.psn == 0
        last = flags & F_LAST
        offset = pkt.msg_len - pkt.payload_len if last else pkt.psn * pkt.payload_len
        ses = {"opcode": uh.OP_SEND, "end_of_msg": 1 if last else 0,
               "start_of_msg": 1 if som else 0, "message_id": pdc, "buffer_offset": offset,
               "initiator": pkt.src, "request_length": pkt.msg_len}
        if not som:
            if pkt.payload_len > MAX_PAYLOAD_LENGTH:
                raise ValueError("field payload_len=%d does not fit UET's 14-bit "
                                 "payload_length" % pkt.payload_len)
            ses["payload_length"] = pkt.payload_len
            ses["message_offset"] = offset & MASK32
        layout = uh.SES["std_som" if som else "std"]
        return uh.Datagram(uh.Header(uh.PDS[ptype], pds), uh.Header(layout, ses))
    if kind == ACK:
        cack = (pkt.psn - 1) & MASK32
        if pkt.sack_bits:
            off = (pkt.sack_base - cack + (1 << 31)) % (1 << 32) - (1 << 31)
            if not -(1 << 15) <= off < (1 << 15):
                raise ValueError("SACK base %d is %d packets from the cumulative point %d: "
                                 "beyond UET's 16-bit sack_psn_offset"
                                 % (pkt.sack_base, off, pkt.psn))
            off &= MASK16
        else:
            off = 0
        pds = {"type": uh.ACK_CC, "next_hdr": uh.HDR_NONE,
               "ecn_marked": 1 if flags & F_ECN_CE else 0, "cack_psn": cack,
               "spdcid": pdc, "dpdcid": pdc, "cc_type": uh.CC_NSCC, "sack_psn_offset": off,
               "sack_bitmap": pkt.sack_bits}
        return uh.Datagram(uh.Header(uh.PDS[uh.ACK_CC], pds))
    if kind == NACK:
        pds = {"type": uh.NACK, "next_hdr": uh.HDR_NONE,
               "ecn_marked": 1 if flags & F_ECN_CE else 0, "nack_code": uh.NACK_TRIMMED,
               "nack_psn": pkt.psn, "spdcid": pdc, "dpdcid": pdc}
        return uh.Datagram(uh.Header(uh.PDS[uh.NACK], pds))
    if kind in (REQUEST, GRANT):
        pds = {"type": uh.CONTROL,
               "ctl_type": uh.CTL_CREDIT_REQ if kind == REQUEST else uh.CTL_CREDIT,
               "retrans": retrans, "psn": pkt.psn, "spdcid": pdc, "dpdcid": pdc,
               "payload": pkt.credit}
        return uh.Datagram(uh.Header(uh.PDS[uh.CONTROL], pds))
    raise ValueError("%s has no UET form (the UET profile carries the GSE protocol's DATA, "
                     "ACK, NACK, REQUEST and GRANT)" % _kind_name(kind))


def _check_fields(pkt):
    kind = pkt.kind
    if kind not in _FLAGS_OF:
        raise ValueError("%s has no UET form (the UET profile carries the GSE protocol's DATA, "
                         "ACK, NACK, REQUEST and GRANT)" % _kind_name(kind))
    for name, limit in (("src", MASK32), ("dst", MASK32), ("msg_id", MASK32),
                        ("psn", MASK32), ("entropy", MASK16), ("payload_len", MASK16),
                        ("msg_len", MASK32), ("credit", MASK32), ("aux", MASK32),
                        ("sack_base", MASK32), ("sack_bits", (1 << 64) - 1),
                        ("ts", (1 << 64) - 1), ("prio", 0xFF), ("flags", MASK16)):
        v = getattr(pkt, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > limit:
            raise ValueError("field %s=%r does not fit its wire width (0..%d)" % (name, v, limit))
    extra = pkt.flags & ~_FLAGS_OF[kind]
    if extra:
        raise ValueError("flags 0x%x on a %s packet have no UET form" % (extra, KIND_NAMES[kind]))
    if kind == ACK and pkt.sack_base & 7:
        raise ValueError("sack_base %d not a multiple of 8" % pkt.sack_base)
    if kind != ACK and (pkt.sack_base or pkt.sack_bits):
        raise ValueError("SACK fields on a %s packet have no UET place" % KIND_NAMES[kind])


def _assemble(pkt, payload, prefix=b"", tags=b""):
    """``prefix`` (a TSS header), the UET headers of ``pkt``, ``payload``, ``tags`` and
    the trailer, whose CRC covers everything before it (inverted if ``pkt.corrupt``)."""
    body = b"".join((prefix, uh.build(_headers(pkt)), payload, tags,
                     TRAILER.pack(pkt.src, pkt.dst, pkt.msg_id, pkt.msg_len, pkt.aux, pkt.ts,
                                  pkt.entropy, pkt.payload_len, pkt.flags & TRAILER_FLAGS,
                                  pkt.prio, MAGIC, 0)[:-4]))
    crc = zlib.crc32(body)
    if pkt.corrupt:
        crc ^= MASK32
    return body + _CRC.pack(crc)


def encode(pkt):
    """The UDP payload of ``pkt`` in the UET profile (see the module docstring).

    ValueError names what does not fit.  An untrimmed DATA packet without payload bytes
    gets ``payload_pattern`` (as ``gse.wire.codec`` does); a packet marked ``corrupt`` is
    encoded with an inverted CRC.  A secured packet (F_SEC) is the security sublayer's
    to frame (``secure_wrap``).
    """
    if isinstance(pkt.flags, int) and pkt.flags & F_SEC:
        raise ValueError("flag F_SEC: a secured packet is framed by the security sublayer "
                         "(gse.runtimes.udp.secure), not encoded")
    _check_fields(pkt)
    kind = pkt.kind
    flags = pkt.flags
    payload = pkt.payload
    if kind == DATA and not flags & F_TRIMMED:
        if payload is None:
            payload = payload_pattern(pkt.src, pkt.msg_id, pkt.psn, pkt.payload_len)
        elif len(payload) != pkt.payload_len:
            raise ValueError("payload length %d disagrees with payload_len %r"
                             % (len(payload), pkt.payload_len))
    elif payload is not None and len(payload):
        raise ValueError("payload of %d bytes on a %s packet" % (len(payload),
                                                                 KIND_NAMES[kind]))
    else:
        payload = b""
    return _assemble(pkt, bytes(payload))


def decode(data, max_datagram=MAX_DATAGRAM):
    """The ``Packet`` in a UET-profile UDP payload.  ``WireError`` reasons as
    ``gse.wire.codec``: oversized, truncated, version (no trailer: not this profile),
    checksum, kind (a UET packet the profile does not use), length, flags, field (the UET
    fields and the trailer disagree)."""
    data = bytes(data)
    n = len(data)
    if n > max_datagram:
        raise WireError(R_OVERSIZED, "datagram of %d bytes exceeds the maximum %d"
                        % (n, max_datagram))
    if n < TRAILER_BYTES + 4:
        raise WireError(R_TRUNCATED, "truncated UET datagram: %d bytes" % n)
    (src, dst, msg_id, msg_len, aux, ts, entropy, payload_len, tflags, prio, magic,
     crc) = TRAILER.unpack_from(data, n - TRAILER_BYTES)
    if magic != MAGIC:
        raise WireError(R_VERSION, "no project trailer (magic 0x%04x): not a GSE datagram in "
                        "the UET profile" % magic)
    got = zlib.crc32(memoryview(data)[:n - 4])
    if got != crc:
        raise WireError(R_CHECKSUM, "checksum mismatch: trailer says 0x%08x, computed 0x%08x"
                        % (crc, got))
    if tflags & ~TRAILER_FLAGS:
        raise WireError(R_FLAGS, "unknown trailer flags 0x%x" % (tflags & ~TRAILER_FLAGS))
    secured = data[0] >> 3 == uh.TSS
    if secured:
        if n < TSS_BYTES + TRAILER_BYTES:
            raise WireError(R_TRUNCATED, "truncated UET datagram: %d bytes with a TSS header"
                            % n)
        top, ssi = _TSS.unpack_from(data, 0)[:2]
        if top & 0xFF000000 != _TSS_TOP or ssi != src:
            raise WireError(R_FIELD, "a TSS header of this profile has sp 1, an 0, reserved "
                            "0 and the source as its SSI (got 0x%02x, SSI %d, source %d)"
                            % (top >> 24, ssi, src))
    dg = uh.parse(data[:n - TRAILER_BYTES])
    p = dg.pds.values
    ptype = p["type"]
    flags = tflags
    credit = sack_base = sack_bits = 0
    is_data = (ptype in (uh.RUD_REQ, uh.RUD_CC_REQ) and dg.ses is not None
               and dg.ses.layout in (uh.SES["std"], uh.SES["std_som"]))
    payload = dg.payload
    tags = b""
    if secured:                     # payload tag (untrimmed DATA), header tag: at the end
        ntags = 2 * SEC_TAG if is_data and not tflags & F_TRIMMED else SEC_TAG
        if len(payload) < ntags:
            raise WireError(R_LENGTH, "secured datagram has no room for its %d bytes of tags"
                            % ntags)
        tags = payload[len(payload) - ntags:]
        payload = payload[:len(payload) - ntags]
    if is_data:
        kind = DATA
        s = dg.ses.values
        psn = p["psn"]
        if p["retrans"]:
            flags |= F_RETX
        if s["end_of_msg"]:
            flags |= F_LAST
        if ptype == uh.RUD_CC_REQ:
            flags |= F_UNSCHED
            credit = p["credit_target"]
        if s["request_length"] != msg_len or s["initiator"] != src or bool(
                s["start_of_msg"]) != (psn == 0):
            raise WireError(R_FIELD, "the SES header and the trailer disagree (request_length "
                            "%d/%d, initiator %d/%d, start_of_msg %d with psn %d)"
                            % (s["request_length"], msg_len, s["initiator"], src,
                               s["start_of_msg"], psn))
        carried = len(payload)
        if tflags & F_TRIMMED:
            if carried:
                raise WireError(R_LENGTH, "payload on a trimmed DATA packet (%d bytes)" % carried)
        elif carried != payload_len:
            raise WireError(R_LENGTH, "payload length %d but datagram carries %d payload bytes"
                            % (payload_len, carried))
    elif ptype == uh.ACK_CC and dg.ses is None:
        kind = ACK
        psn = (p["cack_psn"] + 1) & MASK32
        sack_bits = p["sack_bitmap"]
        if sack_bits:
            off = p["sack_psn_offset"]
            off -= (1 << 16) if off >> 15 else 0
            sack_base = (p["cack_psn"] + off) & MASK32
            if sack_base & 7:
                raise WireError(R_FIELD, "SACK base %d not a multiple of 8" % sack_base)
        if p["ecn_marked"]:
            flags |= F_ECN_CE
    elif ptype == uh.NACK and dg.ses is None and p["nack_code"] == uh.NACK_TRIMMED:
        kind = NACK
        psn = p["nack_psn"]
        if p["ecn_marked"]:
            flags |= F_ECN_CE
    elif ptype == uh.CONTROL and p["ctl_type"] in (uh.CTL_CREDIT, uh.CTL_CREDIT_REQ):
        kind = REQUEST if p["ctl_type"] == uh.CTL_CREDIT_REQ else GRANT
        psn = p["psn"]
        credit = p["payload"]
        if p["retrans"]:
            flags |= F_RETX
    else:
        raise WireError(R_KIND, "UET %s%s is not a packet of the GSE profile"
                        % (dg.pds.name, "" if dg.ses is None else " + " + dg.ses.name))
    if kind != DATA and payload:
        raise WireError(R_LENGTH, "payload on a %s packet (%d bytes)"
                        % (KIND_NAMES[kind], len(payload)))
    if flags & ~_FLAGS_OF[kind]:
        raise WireError(R_FLAGS, "flags 0x%x on a %s packet"
                        % (flags & ~_FLAGS_OF[kind], KIND_NAMES[kind]))
    pdc = msg_id & MASK16
    if p["spdcid"] != pdc or p["dpdcid"] != pdc:
        raise WireError(R_FIELD, "PDC ids %d/%d are not the message id's low 16 bits (%d)"
                        % (p["spdcid"], p["dpdcid"], pdc))
    pkt = Packet(kind, src, dst, msg_id=msg_id, psn=psn, entropy=entropy,
                 payload_len=payload_len, flags=flags, msg_len=msg_len, credit=credit, aux=aux,
                 sack_base=sack_base, sack_bits=sack_bits, ts=ts, prio=prio)
    carries = kind == DATA and not flags & F_TRIMMED
    if carries:
        pkt.payload = payload
    try:
        if secured:
            _check_fields(pkt)
            canonical = _assemble(pkt, payload, data[:TSS_BYTES], tags)
        else:
            canonical = encode(pkt)
    except ValueError as exc:
        raise WireError(R_FIELD, "fields the profile cannot write back: %s" % exc) from None
    if canonical != data:
        raise WireError(R_FIELD, "UET fields that the profile fixes (reserved bits, offsets, "
                        "opcode, CC state) differ from what it writes")
    if secured:
        pkt.flags |= F_SEC
        pkt.size += SEC_TRAILER + SEC_TAG if carries else SEC_TRAILER   # as the gse profile
    return pkt


# -- authenticated packets (gse.runtimes.udp.secure) --------------------------------------

def tss_header(sdi, ssi, tsc):
    """The 16-byte TSS header: type 1, sp 1, an 0, the domain ``sdi``, source ``ssi``,
    the 64-bit TSC (epoch and counter)."""
    return _TSS.pack(_TSS_TOP | sdi, ssi, tsc)


def payload_view(raw, pkt):
    """The payload bytes of the plain datagram ``raw`` of an untrimmed DATA ``pkt``."""
    tail = len(raw) - TRAILER_BYTES
    return memoryview(raw)[tail - pkt.payload_len:tail]


def secure_wrap(raw, pkt, tss, sealed, htag):
    """The secured datagram of the plain ``raw``: ``tss`` in front, the payload replaced
    by ``sealed`` (ciphertext and its tag; None: no payload), the header tag after it,
    then the trailer with a new CRC."""
    n = len(raw)
    tail = n - TRAILER_BYTES
    head = raw[:tail - pkt.payload_len] if sealed is not None else raw[:tail]
    parts = (tss, head, sealed, htag, raw[tail:n - 4]) if sealed is not None else \
        (tss, head, htag, raw[tail:n - 4])
    body = b"".join(parts)
    crc = zlib.crc32(body)
    if pkt.corrupt:
        crc ^= MASK32
    return body + _CRC.pack(crc)


def secure_parts(raw, pkt, carries):
    """(domain id, TSC, ciphertext and payload tag or None, header tag) of a secured
    datagram decoded as ``pkt``."""
    top, _ssi, tsc = _TSS.unpack_from(raw, 0)
    tail = len(raw) - TRAILER_BYTES
    view = memoryview(raw)
    sealed = view[tail - 2 * SEC_TAG - pkt.payload_len:tail - SEC_TAG] if carries else None
    return top & 0xFFFFFF, tsc, sealed, view[tail - SEC_TAG:tail]


def reframe(raw, pkt):
    """The secured datagram ``raw`` after a switch changed ``pkt`` (an ECN mark, a trim,
    an emulated corruption): the TSS header, the ciphertext and the tags are kept (a
    trim drops the payload and its tag), the rest is written again."""
    n = len(raw)
    tail = n - TRAILER_BYTES
    htag = raw[tail - SEC_TAG:tail]
    if pkt.kind == DATA and not raw[tail + _FLAGS_AT] & F_TRIMMED \
            and not pkt.flags & F_TRIMMED:
        start = tail - 2 * SEC_TAG - pkt.payload_len
        return _assemble(pkt, raw[start:tail - 2 * SEC_TAG], raw[:TSS_BYTES],
                         raw[tail - 2 * SEC_TAG:tail])
    return _assemble(pkt, b"", raw[:TSS_BYTES], htag)
