"""The codec every runtime calls per datagram: ``gse.wire.codec``'s format, as fast as the
build allows.

``gse.wire.codec`` is the format's one definition (the reference: every check in its
error-reporting order, a ``WireError`` with a stable reason).  This module is what the
runtimes call on their hot paths -- the UDP switches, hosts and fabric leaves, the
simulator's pcap capture, the security sublayer's checksum -- and it has two twins:

* this file, the **pure-Python twin** (``FAST_PATH = False``): each function is the
  reference itself (``decode_header`` is ``decode`` with the payload left in the
  datagram), so the pure build has exactly one decoder;
* ``cython/gse/wire/fastcodec.pyx``, the **compiled twin** (``FAST_PATH = True``): the
  header is parsed and written, the payload pattern filled and checked and the CRC-32
  computed by the C of ``cython/gse/wire/gse_codec.c``; it accepts only what the
  reference accepts and builds the same packets and bytes, and at the first doubt calls
  the reference for the verdict.

``tests/test_udp_codec.py`` and ``tests/test_fastcodec.py`` check the compiled twin
against the reference on valid, mutated, truncated and extended datagrams, its CRC-32
against ``zlib.crc32``; ``tests/test_compiled.py`` that the build asked for is the build
loaded.
"""

from gse.wire.codec import (CHECKSUM_OFFSET, MAX_DATAGRAM, crc32, decode, encode,
                            payload_pattern)
from gse.wire.packet import HEADER_BYTES

FAST_PATH = False        # the compiled twin says True


def codec_backend():
    """Which implementation the runtimes' codec is: 'Python', or 'C (...)' naming how the
    CRC-32 is computed."""
    return "Python (gse.wire.codec)"


def datagram_checksum(data):
    """The checksum ``gse.wire.codec`` writes in a datagram of 64 bytes or more: the CRC-32
    of header bytes 0..59, then of the bytes from 64 on."""
    return crc32(data[HEADER_BYTES:], crc32(data[:CHECKSUM_OFFSET]))


def decode_datagram(data, max_datagram=MAX_DATAGRAM):
    """``gse.wire.codec.decode``: the packet, payload included, or its ``WireError``."""
    return decode(data, max_datagram)


def decode_header(data, max_datagram=MAX_DATAGRAM):
    """``decode_datagram`` without the payload as an object: the same checks (the checksum
    covers the payload), the same packet, but ``payload`` stays None -- the bytes are in
    ``data`` (``payload_intact`` checks them, a port re-encoding the packet takes them from
    there).  What switches and hosts use: neither needs the payload as an object."""
    return decode(data, max_datagram, False)


def decode_header_into(pkt, data, max_datagram=MAX_DATAGRAM):
    """``decode_header``, written over ``pkt`` (a packet the caller reuses, as a switch
    does for every datagram it forwards) where the build can.  Returns the packet: ``pkt``
    itself, or a new one (always here; in the compiled twin when the reference decided)."""
    return decode_header(data, max_datagram)


def encode_packet(pkt):
    """``gse.wire.codec.encode(pkt)``: the same bytes, or the same error."""
    return encode(pkt)


def payload_intact(pkt, data):
    """``gse.wire.codec.verify_payload`` for an untrimmed DATA packet ``pkt`` decoded (by
    ``decode_header``) from ``data``: True if the datagram's payload is the pattern."""
    return data[HEADER_BYTES:] == payload_pattern(pkt.src, pkt.msg_id, pkt.psn,
                                                  pkt.payload_len)


def pattern_intact(pkt, payload):
    """``payload_intact`` for a payload on its own (what the security sublayer decrypted):
    True if ``payload`` is the pattern of the untrimmed DATA packet ``pkt``."""
    if len(payload) != pkt.payload_len:
        return False
    return payload == payload_pattern(pkt.src, pkt.msg_id, pkt.psn, pkt.payload_len)
