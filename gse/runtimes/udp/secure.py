"""Authenticated packets between hosts: a transport security sublayer in the style of UET's TSS.

Optional (``gse run --secure KEYFILE``, or ``"secure": {"key_file": ...}`` in a node
configuration), and needs the ``cryptography`` package.  Every host shares one *domain
key*; host ``a`` talking to host ``b`` uses ``K(a, b)`` = HKDF-SHA256(domain key,
info = ``"gse-tss/1 a>b"``), AES-128-GCM.  Each packet a host sends gets the next value of
its 64-bit counter toward that destination, which is the nonce (no nonce is ever used
twice under one key) and lets the receiver refuse replays (a sliding window of
``REPLAY_WINDOW`` counters per source).

What is authenticated is the whole header, except what a switch may change on the way --
the ECN-CE and trimmed flags, the traffic class (a trim moves a packet to the control
class) and the checksum -- and, for an untrimmed DATA packet, the
payload, which is also encrypted.  Two tags, so that a trimmed packet is still
authenticated: one over the header (GMAC: AES-GCM of nothing, the header as associated
data, nonce ``0001 || counter``), one over the payload (nonce ``0002 || counter``).  The
datagram is the plain one with flag ``F_SEC`` set, the ciphertext in place of the
payload, and the trailer ``counter (8) | header tag (16) | payload tag (16, untrimmed
DATA only)`` before the checksum is computed; a switch reads the header in clear and,
when it marks or trims, keeps the trailer (``gse.wire.codec.reframe``).

A host drops, and counts by reason: a packet without ``F_SEC`` (``unauthenticated``),
from a source that is no host of the fabric (``unknown_source``), whose tags do not verify
(``auth_failed``: forged or tampered), or whose counter it has seen (``replayed``).  PFC
frames are link-local, from a switch, and not authenticated (they are accepted only from
the neighbour's address, as every datagram is).
"""

import struct
import zlib

from gse.config import ConfigError
from gse.wire.codec import CHECKSUM, CHECKSUM_OFFSET, SEC_TAG
from gse.wire.packet import DATA, F_ECN_CE, F_SEC, F_TRIMMED, HEADER_BYTES

REPLAY_WINDOW = 4096          # counters a receiver remembers behind the newest per source
MUTABLE = F_ECN_CE | F_TRIMMED
PRIO_OFFSET = 56              # the header's traffic class byte
_CTR = struct.Struct("!Q")
_FLAGS = struct.Struct("!H")
N_HEADER = b"\x00\x00\x00\x01"
N_PAYLOAD = b"\x00\x00\x00\x02"


def _aead():
    try:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
        from cryptography.exceptions import InvalidTag
    except ImportError:
        raise ConfigError("authenticated packets need the cryptography package "
                          "(pip install cryptography, or '.[secure]')") from None
    return hashes, AESGCM, HKDF, InvalidTag


def load_domain_key(path):
    """The domain key in ``path``: 64 hexadecimal digits, or at least 16 raw bytes."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ConfigError("%s: cannot read the domain key: %s" % (path, exc.strerror or exc)) \
            from None
    text = raw.strip()
    try:
        if len(text) == 64:
            return bytes.fromhex(text.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        pass
    if len(raw) < 16:
        raise ConfigError("%s: a domain key is 64 hex digits or at least 16 bytes, got %d "
                          "bytes" % (path, len(raw)))
    return raw


def _masked(header):
    """The header as authenticated: the flags a switch may set cleared, the traffic class
    (a trimmed packet moves to the control class) zeroed, no checksum."""
    flags = _FLAGS.unpack_from(header, 2)[0] & ~MUTABLE
    return (header[:2] + _FLAGS.pack(flags) + header[4:PRIO_OFFSET] + b"\x00"
            + header[PRIO_OFFSET + 1:CHECKSUM_OFFSET])


class Tss:
    """One host's end of the sublayer: ``seal`` what it sends, ``open`` what it receives."""

    def __init__(self, domain_key, node, n_hosts):
        hashes, aesgcm, hkdf, invalid = _aead()
        self._hashes = hashes
        self._aesgcm = aesgcm
        self._hkdf = hkdf
        self._invalid = invalid
        self.domain_key = domain_key
        self.node = node
        self.n_hosts = n_hosts
        self.keys = {}            # (src, dst) -> AESGCM: at most 2 x hosts of the fabric
        self.next_ctr = {}        # dst -> last counter used toward it
        self.newest = {}          # src -> newest counter accepted from it
        self.seen = {}            # src -> bit i set: counter newest - i was accepted
        self.sealed = 0
        self.opened = 0
        self.unauthenticated = 0
        self.unknown_source = 0
        self.auth_failed = 0
        self.replayed = 0

    def _key(self, src, dst):
        key = self.keys.get((src, dst))
        if key is None:
            secret = self._hkdf(algorithm=self._hashes.SHA256(), length=16, salt=None,
                                info=b"gse-tss/1 %d>%d" % (src, dst)).derive(self.domain_key)
            key = self.keys[(src, dst)] = self._aesgcm(secret)
        return key

    def seal(self, raw, corrupt=False):
        """The secured datagram for the plain datagram ``raw`` this host sends."""
        kind = raw[1]
        flags = _FLAGS.unpack_from(raw, 2)[0] | F_SEC
        dst = struct.unpack_from("!I", raw, 8)[0]
        ctr = self.next_ctr.get(dst, 0) + 1
        self.next_ctr[dst] = ctr
        c = _CTR.pack(ctr)
        header = raw[:2] + _FLAGS.pack(flags) + raw[4:HEADER_BYTES]
        aad = _masked(header) + c
        key = self._key(self.node, dst)
        htag = key.encrypt(N_HEADER + c, b"", aad)
        if kind == DATA and not flags & F_TRIMMED:
            sealed = key.encrypt(N_PAYLOAD + c, raw[HEADER_BYTES:], aad)
            body = sealed[:-SEC_TAG] + c + htag + sealed[-SEC_TAG:]
        else:
            body = c + htag
        crc = zlib.crc32(body, zlib.crc32(header[:CHECKSUM_OFFSET]))
        if corrupt:
            crc ^= 0xFFFFFFFF
        self.sealed += 1
        return header[:CHECKSUM_OFFSET] + CHECKSUM.pack(crc) + body

    def open(self, pkt, raw):
        """The plain datagram (header without ``F_SEC``, decrypted payload, its checksum)
        of the secured ``raw``, decoded as ``pkt``, or None after counting why it was
        refused.  Clears ``F_SEC`` on ``pkt``."""
        if not pkt.flags & F_SEC:
            self.unauthenticated += 1
            return None
        src = pkt.src
        if not 0 <= src < self.n_hosts or src == self.node:
            self.unknown_source += 1
            return None
        carries = pkt.kind == DATA and not pkt.flags & F_TRIMMED
        end = HEADER_BYTES + (pkt.payload_len if carries else 0)
        c = raw[end:end + 8]
        htag = raw[end + 8:end + 8 + SEC_TAG]
        ctr = _CTR.unpack(c)[0]
        newest = self.newest.get(src, 0)
        if ctr <= newest and (ctr <= newest - REPLAY_WINDOW
                              or self.seen.get(src, 0) >> (newest - ctr) & 1):
            self.replayed += 1
            return None
        aad = _masked(raw[:HEADER_BYTES]) + c
        key = self._key(src, self.node)
        try:
            key.decrypt(N_HEADER + c, htag, aad)
            plain = b""
            if carries:
                plain = key.decrypt(N_PAYLOAD + c, raw[HEADER_BYTES:end] +
                                    raw[end + 8 + SEC_TAG:end + 8 + 2 * SEC_TAG], aad)
        except self._invalid:
            self.auth_failed += 1
            return None
        if ctr > newest:
            self.seen[src] = ((self.seen.get(src, 0) << (ctr - newest)) | 1) & \
                ((1 << REPLAY_WINDOW) - 1)
            self.newest[src] = ctr
        else:
            self.seen[src] |= 1 << (newest - ctr)
        pkt.flags &= ~F_SEC
        self.opened += 1
        header = (raw[:2] + _FLAGS.pack(_FLAGS.unpack_from(raw, 2)[0] & ~F_SEC)
                  + raw[4:CHECKSUM_OFFSET])
        return header + CHECKSUM.pack(zlib.crc32(plain, zlib.crc32(header))) + plain

    def counters(self):
        return {"sealed": self.sealed, "opened": self.opened,
                "unauthenticated": self.unauthenticated,
                "unknown_source": self.unknown_source, "auth_failed": self.auth_failed,
                "replayed": self.replayed}
