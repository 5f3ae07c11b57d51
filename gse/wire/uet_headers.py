"""Ultra Ethernet Transport 1.0 headers, as bytes: the PDS and SES headers, parsed and built.

UET runs over UDP (destination port 4793).  A UDP payload starts with a Packet Delivery
Sub-layer (PDS) header; its ``type`` says which, and its ``next_hdr`` which Semantic
Sub-layer (SES) header follows.  Every field is big endian, bit 0 the most significant bit
of the header's first byte.  The layouts below are those of the UET 1.0 specification as
xdp2 writes them in C (``include/uet/pds.h``, ``ses.h``, BSD-2), one table per header:
``(name, bits)`` in wire order, reserved bits named too, so that ``build(parse(b)) == b``
for every datagram this module parses.

PDS (``type``, header size): 2 RUD_REQ and 3 ROD_REQ (12 B), 13 RUD_CC_REQ and
14 ROD_CC_REQ (16 B: + ``ccc_id``, ``credit_target``), 4 RUDI_REQ and 5 RUDI_RESP (8 B),
6 UUD_REQ (4 B), 7 ACK (12 B), 8 ACK_CC (32 B: + SACK and NSCC or credit CC state),
9 ACK_CCX (32 B), 10 NACK (16 B), 12 NACK_CCX (24 B), 11 CONTROL (16 B; ``ctl_type`` in
place of ``next_hdr``).  Type 1 is the TSS security header, which comes before the PDS
header: ``type`` (5), ``sp`` (SSI present), a reserved bit, ``an`` (association number),
``sdi`` (secure domain, 24 bits), with ``sp`` the 32-bit ``ssi`` (source), then the TSC
(epoch 16 bits, counter 48 bits): 16 bytes, or 12 without the SSI (UET 1.0.1, table
3-90, as the UEC reference code lays it out).

SES after a request (``next_hdr`` 1 small 20 B, 2 medium 32 B, 3 standard 44 B): the
12-byte common header, then by opcode for the standard form -- deferrable send (8, 0xb)
and ready-to-restart (0xc) 44 B, rendezvous (6, 0xa) 40 B with its extension, otherwise
``header_data`` when ``start_of_msg`` else ``payload_length`` and ``message_offset``.  An
atomic opcode (3, 4, 0xd, 0xe) adds the 4-byte atomic extension, a compare-and-swap code
(0xd..0x13) 32 bytes more.  SES after an ACK, NACK or RUDI response (``next_hdr`` 4
response 12 B, 5 response with data 20 B, 6 response with small data 12 B).  What follows
the headers is payload.  ``gse.wire.uet`` maps the project's packets onto these headers.
"""

from gse.wire.codec import R_KIND, R_TRUNCATED, WireError


class Layout:
    """A header: ``(name, bits)`` fields in wire order, a whole number of bytes."""

    __slots__ = ("name", "fields", "size")

    def __init__(self, name, fields):
        bits = sum(b for _, b in fields)
        if bits % 8:
            raise ValueError("layout %s is %d bits" % (name, bits))
        self.name = name
        self.fields = tuple(fields)
        self.size = bits // 8

    def unpack(self, data, offset=0):
        """{field: value} of the header at ``offset`` (the caller checked the length)."""
        acc = int.from_bytes(data[offset:offset + self.size], "big")
        out = {}
        shift = self.size * 8
        for name, bits in self.fields:
            shift -= bits
            out[name] = (acc >> shift) & ((1 << bits) - 1)
        return out

    def pack(self, values):
        """The header's bytes; fields left out are 0.  ValueError names a field that does
        not fit its width or is not in the layout."""
        acc = 0
        known = set()
        for name, bits in self.fields:
            known.add(name)
            v = values.get(name, 0)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v >> bits:
                raise ValueError("UET %s field %s=%r does not fit %d bits"
                                 % (self.name, name, v, bits))
            acc = (acc << bits) | v
        for name in values:
            if name not in known:
                raise ValueError("UET %s has no field %r" % (self.name, name))
        return acc.to_bytes(self.size, "big")


def _l(name, *fields):
    return Layout(name, fields)


# -- PDS ------------------------------------------------------------------------------------

TSS, RUD_REQ, ROD_REQ, RUDI_REQ, RUDI_RESP, UUD_REQ, ACK, ACK_CC, ACK_CCX, NACK, CONTROL, \
    NACK_CCX, RUD_CC_REQ, ROD_CC_REQ = range(1, 15)
UDP_PORT = 4793

_REQ = (("type", 5), ("next_hdr", 4), ("rsvd1", 2), ("retrans", 1), ("ackreq", 1), ("syn", 1),
        ("rsvd2", 2), ("clear_psn_offset", 16), ("psn", 32), ("spdcid", 16), ("dpdcid", 16))
_ACK = (("type", 5), ("next_hdr", 4), ("rsvd1", 1), ("ecn_marked", 1), ("retrans", 1),
        ("probe", 1), ("request", 2), ("rsvd2", 1), ("ack_psn_offset", 16), ("cack_psn", 32),
        ("spdcid", 16), ("dpdcid", 16))
_NACK = (("type", 5), ("next_hdr", 4), ("rsvd1", 1), ("ecn_marked", 1), ("retrans", 1),
         ("nack_type", 1), ("rsvd2", 3), ("nack_code", 8), ("vendor_code", 8), ("nack_psn", 32),
         ("spdcid", 16), ("dpdcid", 16), ("payload", 32))
_RUDI = (("type", 5), ("next_hdr", 4), ("rsvd1", 1), ("ecn_marked", 1), ("retrans", 1),
         ("rsvd2", 4), ("rsvd3", 16), ("pkt_id", 32))
_SACK = (("mpr", 8), ("sack_psn_offset", 16), ("sack_bitmap", 64))

PDS = {
    RUD_REQ: _l("RUD_REQ", *_REQ),
    ROD_REQ: _l("ROD_REQ", *_REQ),
    RUD_CC_REQ: _l("RUD_CC_REQ", *_REQ, ("ccc_id", 8), ("credit_target", 24)),
    ROD_CC_REQ: _l("ROD_CC_REQ", *_REQ, ("ccc_id", 8), ("credit_target", 24)),
    RUDI_REQ: _l("RUDI_REQ", *_RUDI),
    RUDI_RESP: _l("RUDI_RESP", *_RUDI),
    UUD_REQ: _l("UUD_REQ", ("type", 5), ("next_hdr", 4), ("flags", 7), ("rsvd", 16)),
    ACK: _l("ACK", *_ACK),
    ACK_CC: _l("ACK_CC", *_ACK, ("cc_type", 4), ("cc_flags", 4), *_SACK, ("cc_state", 64)),
    ACK_CCX: _l("ACK_CCX", *_ACK, ("ccx_type", 4), ("cc_flags", 4), *_SACK,
                ("ack_cc_state", 64)),
    NACK: _l("NACK", *_NACK),
    NACK_CCX: _l("NACK_CCX", *_NACK, ("nccx_type", 4), ("nccx_state1", 4),
                 ("nack_ccx_state2", 56)),
    CONTROL: _l("CONTROL", ("type", 5), ("ctl_type", 4), ("rsvd1", 1), ("rsvd_isrod", 1),
                ("retrans", 1), ("ackreq", 1), ("syn", 1), ("rsvd2", 2), ("probe_opaque", 16),
                ("psn", 32), ("spdcid", 16), ("dpdcid", 16), ("payload", 32)),
}
REQUEST_TYPES = (RUD_REQ, ROD_REQ, RUD_CC_REQ, ROD_CC_REQ, RUDI_REQ, UUD_REQ)
RESPONSE_TYPES = (ACK, ACK_CC, ACK_CCX, NACK, NACK_CCX, RUDI_RESP)
CC_NSCC, CC_CREDIT = 0, 1
NACK_TRIMMED = 0x01
CTL_CREDIT, CTL_CREDIT_REQ = 7, 8

# The TSS security header (type 1) in front of the PDS header, with and without the SSI
TSS_HEADER = _l("TSS", ("type", 5), ("sp", 1), ("rsvd", 1), ("an", 1), ("sdi", 24),
                ("ssi", 32), ("epoch", 16), ("tsc", 48))
TSS_HEADER_NO_SSI = _l("TSS (no SSI)", ("type", 5), ("sp", 1), ("rsvd", 1), ("an", 1),
                       ("sdi", 24), ("epoch", 16), ("tsc", 48))

# -- SES ------------------------------------------------------------------------------------

HDR_NONE, HDR_SMALL, HDR_MEDIUM, HDR_STD, HDR_RESPONSE, HDR_RESPONSE_DATA, \
    HDR_RESPONSE_SMALL = range(7)
OP_SEND = 0x5
_COMMON = (("rsvd1", 2), ("opcode", 6), ("version", 2), ("delivery_complete", 1),
           ("initiator_error", 1), ("relative_addressing", 1), ("hdr_data_present", 1),
           ("end_of_msg", 1), ("start_of_msg", 1), ("message_id", 16), ("ri_generation", 8),
           ("job_id", 24), ("rsvd2", 4), ("pid_on_fep", 12), ("rsvd3", 4),
           ("resource_index", 12))
_RESP = (("list", 2), ("opcode", 6), ("ver", 2), ("return_code", 6))

SES = {
    "std_som": _l("SES standard request (SOM)", *_COMMON, ("buffer_offset", 64),
                  ("initiator", 32), ("match_bits", 64), ("header_data", 64),
                  ("request_length", 32)),
    "std": _l("SES standard request", *_COMMON, ("buffer_offset", 64), ("initiator", 32),
              ("match_bits", 64), ("rsvd4", 16), ("rsvd5", 2), ("payload_length", 14),
              ("message_offset", 32), ("request_length", 32)),
    "deferrable": _l("SES deferrable send", *_COMMON, ("initiator_restart_token", 32),
                     ("target_restart_token", 32), ("initiator", 32), ("match_bits", 64),
                     ("header_data", 64), ("request_length", 32)),
    "ready_to_restart": _l("SES ready to restart", *_COMMON, ("buffer_offset", 64),
                           ("initiator", 32), ("initiator_restart_token", 32),
                           ("target_restart_token", 32), ("header_data", 64),
                           ("request_length", 32)),
    "rendezvous": _l("SES rendezvous send", *_COMMON, ("buffer_offset", 64), ("initiator", 32),
                     ("match_bits", 64), ("eager_length", 32), ("rdv_ri_generation", 8),
                     ("rdv_pid_on_fep", 12), ("rdv_resource_index", 12)),
    "medium": _l("SES medium request", *_COMMON, ("buffer_offset", 64), ("initiator", 32),
                 ("match_bits", 64)),
    "small": _l("SES small request", *_COMMON, ("buffer_offset", 64)),
    "response": _l("SES response", *_RESP, ("message_id", 16), ("ri_generation", 8),
                   ("job_id", 24), ("modified_length", 32)),
    "response_data": _l("SES response with data", *_RESP, ("message_id", 16),
                        ("ri_generation", 8), ("job_id", 24),
                        ("read_request_message_id", 16), ("rsvd2", 4), ("payload_length", 12),
                        ("modified_length", 32), ("message_offset", 32)),
    "response_small": _l("SES response with small data", *_RESP, ("rsvd1", 2),
                         ("payload_length", 14), ("rsvd2", 8), ("job_id", 24),
                         ("original_request_psn", 32)),
}
ATOMIC_EXT = _l("SES atomic extension", ("atomic_code", 8), ("atomic_datatype", 8),
                ("cacheable", 1), ("cpu_coherent", 1), ("rsvd1", 3), ("vendor_defined", 3),
                ("rsvd2", 8))
CAS_EXT = _l("SES compare-and-swap extension", ("compare_value", 128), ("swap_value", 128))
ATOMIC_OPCODES = (0x3, 0x4, 0xd, 0xe)
CAS_CODES = range(0x0d, 0x14)           # the CSWAP family and MSWAP: compare + swap values
_STD_BY_OPCODE = {0x6: "rendezvous", 0xa: "rendezvous", 0x8: "deferrable", 0xb: "deferrable",
                  0xc: "ready_to_restart"}
_RESPONSE_BY_HDR = {HDR_RESPONSE: "response", HDR_RESPONSE_DATA: "response_data",
                    HDR_RESPONSE_SMALL: "response_small"}


class Header:
    """One parsed header: its ``layout`` and field ``values``."""

    __slots__ = ("layout", "values")

    def __init__(self, layout, values):
        self.layout = layout
        self.values = values

    @property
    def name(self):
        return self.layout.name

    def __getitem__(self, key):
        return self.values[key]

    def bytes(self):
        return self.layout.pack(self.values)

    def __repr__(self):
        return "%s(%s)" % (self.layout.name, ", ".join("%s=%#x" % (k, v) for k, v in
                                                       self.values.items()
                                                       if not k.startswith("rsvd")))


class Datagram:
    """A UET UDP payload: ``tss`` (the security header, or None), ``pds``, ``ses`` (or
    None), extension headers, ``payload``."""

    __slots__ = ("tss", "pds", "ses", "exts", "payload")

    def __init__(self, pds, ses=None, exts=(), payload=b"", tss=None):
        self.tss = tss
        self.pds = pds
        self.ses = ses
        self.exts = list(exts)
        self.payload = payload

    def headers(self):
        return (([self.tss] if self.tss is not None else []) + [self.pds]
                + ([self.ses] if self.ses is not None else []) + self.exts)

    def header_bytes(self):
        return sum(h.layout.size for h in self.headers())


def _take(layout, data, pos, what):
    if pos + layout.size > len(data):
        raise WireError(R_TRUNCATED, "truncated UET datagram: %s needs %d bytes at offset %d, "
                        "%d left" % (what or layout.name, layout.size, pos, len(data) - pos))
    return Header(layout, layout.unpack(data, pos)), pos + layout.size


def ses_request_layout(next_hdr, opcode, som):
    """The SES request layout for a PDS ``next_hdr`` (1..3) and the common header's opcode
    and start_of_msg."""
    if next_hdr == HDR_SMALL:
        return SES["small"]
    if next_hdr == HDR_MEDIUM:
        return SES["medium"]
    kind = _STD_BY_OPCODE.get(opcode)
    if kind is not None:
        return SES[kind]
    return SES["std_som"] if som else SES["std"]


def parse(data):
    """The ``Datagram`` in ``data`` (a UET UDP payload).  ``WireError`` with reason
    ``truncated`` or ``kind`` (an unknown or unsupported PDS type)."""
    data = bytes(data)
    if len(data) < 2:
        raise WireError(R_TRUNCATED, "truncated UET datagram: %d bytes" % len(data))
    tss = None
    pos = 0
    if data[0] >> 3 == TSS:                 # the security header, then the PDS header
        tss, pos = _take(TSS_HEADER if data[0] & 0x04 else TSS_HEADER_NO_SSI, data, 0, None)
        if len(data) < pos + 2:
            raise WireError(R_TRUNCATED, "truncated UET datagram: no PDS header after TSS")
    ptype = data[pos] >> 3
    layout = PDS.get(ptype)
    if layout is None:
        raise WireError(R_KIND, "UET PDS type %d is %s" % (
            ptype, "a second TSS header" if ptype == TSS else "not defined by UET 1.0"))
    pds, pos = _take(layout, data, pos, None)
    ses = None
    exts = []
    nh = pds.values.get("next_hdr", HDR_NONE)
    if ptype in REQUEST_TYPES and nh in (HDR_SMALL, HDR_MEDIUM, HDR_STD):
        if pos + 2 > len(data):
            raise WireError(R_TRUNCATED, "truncated UET datagram: no SES header after PDS")
        opcode = data[pos] & 0x3F
        som = data[pos + 1] & 1
        ses, pos = _take(ses_request_layout(nh, opcode, som), data, pos, None)
        if opcode in ATOMIC_OPCODES:
            ext, pos = _take(ATOMIC_EXT, data, pos, None)
            exts.append(ext)
            if ext["atomic_code"] in CAS_CODES:
                ext, pos = _take(CAS_EXT, data, pos, None)
                exts.append(ext)
    elif ptype in RESPONSE_TYPES and nh in _RESPONSE_BY_HDR:
        ses, pos = _take(SES[_RESPONSE_BY_HDR[nh]], data, pos, None)
    return Datagram(pds, ses, exts, data[pos:], tss)


def build(dg):
    """The bytes of a ``Datagram`` (the inverse of ``parse``)."""
    return b"".join(h.bytes() for h in dg.headers()) + bytes(dg.payload)


def describe(dg):
    """A readable dump, one header per line (for tests and debugging)."""
    lines = [repr(h) for h in dg.headers()]
    lines.append("payload: %d bytes" % len(dg.payload))
    return "\n".join(lines)
