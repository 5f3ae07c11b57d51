"""Per-message receive bitmap: exactly-once delivery and the SACK window of an ACK.

Bits are kept little-endian in a bytearray (bit j of byte i is psn 8*i + j), so the 64-bit
SACK field for a base that is a multiple of 8 is one little-endian read of 8 bytes
(``gse.common.bits.le64``): no per-bit loop on the path of every ACK.
"""

from gse.common.bits import le64


class ReceiveBitmap:
    __slots__ = ("npkts", "bits", "cum", "count")

    def __init__(self, npkts):
        self.setup(npkts)

    def setup(self, npkts):
        """What ``__init__`` does (``new_bitmap``: compiled, without the constructor's
        argument handling)."""
        if npkts <= 0:
            raise ValueError("a message has at least one packet, got %d" % npkts)
        self.npkts = npkts
        self.bits = bytearray((npkts + 7) // 8 + 8)   # 8 spare bytes: SACK reads past the end
        self.cum = 0      # every psn below this has arrived
        self.count = 0    # distinct psns arrived

    def mark(self, psn):
        """Record psn; True if it is new, False for a duplicate."""
        byte = psn >> 3
        bit = 1 << (psn & 7)
        bits = self.bits
        if bits[byte] & bit:
            return False
        bits[byte] |= bit
        self.count += 1
        if psn == self.cum:
            cum = psn + 1
            npkts = self.npkts
            while cum < npkts and bits[cum >> 3] & (1 << (cum & 7)):
                cum += 1
            self.cum = cum
        return True

    def has(self, psn):
        return bool(self.bits[psn >> 3] & (1 << (psn & 7)))

    def complete(self):
        return self.count == self.npkts

    def sack(self, base):
        """The 64 bits from ``base`` (a multiple of 8): bit i set if base + i arrived."""
        if base & 7:
            raise ValueError("SACK base %d is not a multiple of 8" % base)
        return le64(self.bits, base >> 3)

    def sack_base_for(self, psn):
        """A SACK base that covers both the cumulative point and, if possible, psn."""
        base = self.cum & ~7
        if psn >= base + 64:
            base = (psn - 56) & ~7
        return base


def new_bitmap(npkts):
    """``ReceiveBitmap(npkts)``, as the receiver makes one per message: compiled, a C
    function (``ReceiveBitmap.__new__`` and ``setup``, as ``gse.wire.packet.new_packet``)."""
    bitmap = ReceiveBitmap.__new__(ReceiveBitmap)
    bitmap.setup(npkts)
    return bitmap
