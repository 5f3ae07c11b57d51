"""Authenticated packets: a transport security sublayer in the style of UET's TSS (``--secure``).

Optional (``gse run --secure KEYFILE``, or a node configuration's ``secure`` section), and
needs the ``cryptography`` package.  Keys come from ``gse.runtimes.udp.secure_keys``: one
AES-128-GCM key per run, label and direction, derived from the domain key, the run's
fresh salt and its epoch (docs/hardening.md, "Key schedule").

* ``Tss``: a host's end-to-end channels.  Host ``a`` sealing toward ``b`` takes the next
  value of its counter toward ``b``; with the run's epoch it is the packet's TSC (epoch
  16 bits, counter 48 bits), and with an operation code (1: header, 2: payload) and the
  key's nonce mask, the AES-GCM nonce.  Two tags, so that a trimmed packet still
  authenticates: one over the header (AES-GCM of nothing, the header as associated
  data), one over the payload, which is also encrypted (with the header and its tag as
  associated data).  What is authenticated is every header field except what a switch may
  change on the way -- the ECN-CE and trimmed flags and the traffic class -- and the
  TSC.  A receiver refuses, and counts by reason: no security (``unauthenticated``), a
  source that is no host (``unknown_source``), another secure domain (``wrong_domain``,
  UET profile), another epoch: an earlier run's datagram (``stale_epoch``), a counter it
  has seen or one too old for its window (``replayed``), tags that do not verify
  (``auth_failed``: forged or tampered).
* ``LinkAuth``: a node's PFC frames (PAUSE, RESUME), which are hop by hop, under a key
  per link and direction (label ``link``); the receiving port's neighbour names the key.

Framing: in the gse wire profile the datagram is the plain one with ``F_SEC`` set and,
after the (encrypted) payload, ``payload tag (16, untrimmed DATA only) | TSC (8) | header
tag (16)``, inside the checksum; a switch that trims keeps the last 24 bytes
(``gse.wire.codec.reframe``).  In the UET profile the UET TSS header comes first
(``gse.wire.uet``).  The payload tag's associated data is the header and the header's
tag, so a receiver of an untrimmed DATA packet checks that one tag only: it covers every
byte but the mutable ones.
"""

import struct

from gse.runtimes.udp.secure_keys import (COUNTER_BITS, MAX_COUNTER, REKEY_SHIFT, KeySchedule,
                                          ReplayWindow, load_domain_key, schedule_from_config)
from gse.wire import uet
from gse.wire.codec import CHECKSUM, CHECKSUM_OFFSET, SEC_TAG, SEC_TRAILER
from gse.wire.fastcodec import crc32 as _crc32     # ISA-L's when installed: zlib's results
from gse.wire.packet import (DATA, F_ECN_CE, F_SEC, F_TRIMMED, HEADER_BYTES, PAUSE, RESUME,
                             WIRE_VERSION)


__all__ = ["KeySchedule", "LinkAuth", "REFUSALS", "Tss", "load_domain_key",
           "schedule_from_config"]

MUTABLE = F_ECN_CE | F_TRIMMED | F_SEC    # flags outside the tags (F_SEC: the framing)
OP_HEADER = 1 << 64
OP_PAYLOAD = 2 << 64
COUNTER_MASK = MAX_COUNTER
REFUSALS = ("unauthenticated", "unknown_source", "wrong_domain", "stale_epoch", "replayed",
            "auth_failed")
# the header as associated data: every field but the traffic class, then the TSC
_AAD = struct.Struct("!BBHIIIIHHIIIIQQQ")
_TSC = struct.Struct("!Q")
_FLAGS = struct.Struct("!H")


def associated_data(pkt, tsc):
    """What the tags cover besides the payload: the header's fields, with the flags a
    switch may set cleared and without the traffic class (a trim moves a packet to the
    control class) or the checksum, and the TSC.  The base of an empty SACK bitmap means
    nothing (no agent reads it) and one wire profile does not carry it (UET writes
    ``sack_psn_offset`` 0): it counts as 0, so both profiles authenticate the same."""
    sack_bits = pkt.sack_bits
    return _AAD.pack(WIRE_VERSION, pkt.kind, pkt.flags & ~MUTABLE, pkt.src, pkt.dst,
                     pkt.msg_id, pkt.psn, pkt.entropy, pkt.payload_len, pkt.msg_len,
                     pkt.credit, pkt.aux, pkt.sack_base if sack_bits else 0, sack_bits,
                     pkt.ts, tsc)


def _nonce(iv, op, tsc):
    return (iv ^ (op | tsc)).to_bytes(12, "big")


class GseFrame:
    """The security trailer of the gse wire profile."""

    @staticmethod
    def wrap(pkt, raw, tsc, sealed, htag, _sdi):
        """The secured datagram: ``raw``'s header with F_SEC, ``sealed`` (ciphertext and
        payload tag, or None), the TSC and the header tag, a new checksum."""
        header = (raw[:2] + _FLAGS.pack(_FLAGS.unpack_from(raw, 2)[0] | F_SEC)
                  + raw[4:CHECKSUM_OFFSET])
        c = _TSC.pack(tsc)
        crc = _crc32(header)
        if sealed is not None:
            crc = _crc32(sealed, crc)
        crc = _crc32(htag, _crc32(c, crc))
        if pkt.corrupt:
            crc ^= 0xFFFFFFFF
        if sealed is None:
            return b"".join((header, CHECKSUM.pack(crc), c, htag))
        return b"".join((header, CHECKSUM.pack(crc), sealed, c, htag))

    @staticmethod
    def parts(pkt, raw, carries):
        """(domain id or -1, TSC, ciphertext and payload tag or None, header tag)."""
        n = len(raw)
        view = memoryview(raw)
        tsc = _TSC.unpack_from(raw, n - SEC_TRAILER)[0]
        return (-1, tsc, view[HEADER_BYTES:n - SEC_TRAILER] if carries else None,
                view[n - SEC_TAG:])


class UetFrame:
    """The UET TSS header in front (``gse.wire.uet``)."""

    @staticmethod
    def wrap(pkt, raw, tsc, sealed, htag, sdi):
        return uet.secure_wrap(raw, pkt, uet.tss_header(sdi, pkt.src, tsc), sealed, htag)

    @staticmethod
    def parts(pkt, raw, carries):
        return uet.secure_parts(raw, pkt, carries)


class _Channels:
    """Counters, keys and replay windows of one node's channels under one key schedule:
    toward each peer a counter (the nonce), from each a window (the replay check)."""

    def __init__(self, schedule, node, label, frame=GseFrame):
        self.schedule = schedule
        self.node = node
        self.label = label
        self.frame = frame
        self.wire_epoch = schedule.wire_epoch
        self.epoch_bits = schedule.wire_epoch << COUNTER_BITS
        self.sdi = schedule.sdi
        self.invalid = schedule.invalid_tag
        self.rekey_shift = REKEY_SHIFT
        self.next_ctr = {}          # peer -> last counter used toward it
        self.send_keys = {}         # peer -> (key index, AESGCM, nonce mask)
        self.recv_keys = {}         # peer -> {key index: (AESGCM, nonce mask)}
        self.windows = {}           # peer -> ReplayWindow of its counters
        self.sealed = 0
        self.opened = 0
        self.exhausted = 0          # packets not sent: the counter toward a peer ran out
        self.refused = dict.fromkeys(REFUSALS, 0)

    def _seal(self, pkt, raw, peer, carries, payload):
        ctr = self.next_ctr.get(peer, 0) + 1
        if ctr > COUNTER_MASK:            # never wraps: stop (a new run, a new epoch)
            self.exhausted += 1
            return None
        self.next_ctr[peer] = ctr
        index = ctr >> self.rekey_shift
        entry = self.send_keys.get(peer)
        if entry is None or entry[0] != index:
            key, iv = self.schedule.derive(self.label, self.node, peer, index)
            entry = self.send_keys[peer] = (index, key, iv)
        key = entry[1]
        iv = entry[2]
        tsc = self.epoch_bits | ctr
        aad = associated_data(pkt, tsc)
        htag = key.encrypt(_nonce(iv, OP_HEADER, tsc), b"", aad)
        sealed = None
        if carries:           # the header and its tag as associated data: one check at the
            sealed = key.encrypt(_nonce(iv, OP_PAYLOAD, tsc), payload, aad + htag)  # end
        self.sealed += 1
        return self.frame.wrap(pkt, raw, tsc, sealed, htag, self.sdi)

    def _open(self, pkt, raw, peer, carries):
        """The plaintext payload (b"" when none), or None after counting the refusal."""
        if not pkt.flags & F_SEC:
            self.refused["unauthenticated"] += 1
            return None
        sdi, tsc, sealed, htag = self.frame.parts(pkt, raw, carries)
        if sdi >= 0 and sdi != self.sdi:
            self.refused["wrong_domain"] += 1
            return None
        if tsc >> COUNTER_BITS != self.wire_epoch:
            self.refused["stale_epoch"] += 1      # another run's (or epoch's) datagram
            return None
        ctr = tsc & COUNTER_MASK
        window = self.windows.get(peer)
        if window is None:
            window = self.windows[peer] = ReplayWindow()
        elif not window.fresh(ctr):
            self.refused["replayed"] += 1
            return None
        index = ctr >> self.rekey_shift
        keys = self.recv_keys.get(peer)
        if keys is None:
            keys = self.recv_keys[peer] = {}
        entry = keys.get(index)
        if entry is None:
            entry = self.schedule.derive(self.label, peer, self.node, index)
            if len(keys) >= 2:              # two key indexes per peer at most
                del keys[min(keys)]
            keys[index] = entry
        key, iv = entry
        aad = associated_data(pkt, tsc)
        try:
            if sealed is not None:
                plain = key.decrypt(_nonce(iv, OP_PAYLOAD, tsc), sealed, aad + htag)
            else:
                key.decrypt(_nonce(iv, OP_HEADER, tsc), htag, aad)
                plain = b""
        except self.invalid:
            self.refused["auth_failed"] += 1
            return None
        window.accept(ctr)
        pkt.flags &= ~F_SEC
        self.opened += 1
        return plain

    def counters(self):
        c = {"sealed": self.sealed, "opened": self.opened, "exhausted": self.exhausted}
        c.update(self.refused)
        return c


class Tss(_Channels):
    """A host's end of the sublayer: ``seal`` what it sends, ``open`` what it receives."""

    def __init__(self, schedule, node, n_hosts, wire="gse"):
        _Channels.__init__(self, schedule, node, b"e2e", UetFrame if wire == "uet" else GseFrame)
        self.n_hosts = n_hosts
        self.uet = wire == "uet"

    def seal(self, pkt, raw):
        """The secured datagram for the plain datagram ``raw`` of ``pkt`` this host sends,
        or None if its counter toward ``pkt.dst`` ran out (counted ``exhausted``)."""
        carries = pkt.kind == DATA and not pkt.flags & F_TRIMMED
        payload = None
        if carries:
            payload = (uet.payload_view(raw, pkt) if self.uet
                       else memoryview(raw)[HEADER_BYTES:])
        return self._seal(pkt, raw, pkt.dst, carries, payload)

    def open(self, pkt, raw):
        """Check the secured datagram ``raw``, decoded as ``pkt``: True (F_SEC cleared, an
        untrimmed DATA packet's ``payload`` the plaintext) or False, counted by reason."""
        src = pkt.src
        if not 0 <= src < self.n_hosts or src == self.node:
            if pkt.flags & F_SEC:
                self.refused["unknown_source"] += 1
            else:
                self.refused["unauthenticated"] += 1
            return False
        carries = pkt.kind == DATA and not pkt.flags & F_TRIMMED
        plain = self._open(pkt, raw, src, carries)
        if plain is None:
            return False
        if carries:
            pkt.payload = plain
        return True


class LinkAuth(_Channels):
    """A node's PFC frames under a key per link and direction: sealed when sent to the
    neighbour on a port, opened from the neighbour the frame came in from."""

    def __init__(self, schedule, node, peers):
        _Channels.__init__(self, schedule, node, b"link")
        self.peers = peers              # port -> neighbour's node id

    def seal(self, pkt, raw):
        """A port's datagram: PAUSE and RESUME this node makes are sealed, anything it
        forwards goes as it came."""
        if pkt.kind != PAUSE and pkt.kind != RESUME:
            return raw
        return self._seal(pkt, raw, pkt.dst, False, None)

    def open(self, pkt, raw):
        return self._open(pkt, raw, self.peers[pkt.ingress], False) is not None
