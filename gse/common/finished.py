"""Ids of finished messages, kept a while for their late packets, in little memory.

A receiver answers a late DATA or REQUEST of a message it has already delivered with a
final ACK (its sender may have missed the first) instead of creating new state, so it
remembers each finished (src, msg_id) with its packet count for ``hold_ps`` and at most
``limit`` of them, the oldest forgotten first.

Why not a dict of tuples with a FIFO of (time, key) tuples: a 10,240-NIC ring all-reduce
finishes 26 million one-packet messages within one hold, and that layout cost about 250
bytes per message (two tuples, four boxed integers, a dict entry): 6.5 GB of the run.
Here a message is one integer key ``src << 32 | msg_id`` in a dict and two 8-byte slots
of flat arrays (finish time, key), about 90 bytes.  ``src`` and ``msg_id`` are whatever
the wire's 32-bit fields carry -- a forged packet's source is any of them, not only a
host of the fabric (sources there fit 20 bits) -- so the key is any 64-bit unsigned
integer and its array is of unsigned 64-bit slots (``Q``).  ``add`` stores the key
first: if it could not be stored, nothing was changed.
"""

from array import array

COMPACT_AT = 4096     # forgotten slots at the arrays' head before they are cut off
MASK32 = 0xFFFFFFFF


class FinishedIds:
    """``(src, msg_id) in ids``, ``ids[(src, msg_id)]`` -> packet count, ``len``, iteration
    (oldest first, as tuples); ``add`` remembers one and forgets what is too old or too
    many."""

    __slots__ = ("npkts_of", "times", "keys", "head", "hold_ps", "limit")

    def __init__(self, hold_ps, limit):
        self.npkts_of = {}          # key -> packet count
        self.times = array("q")     # finish time of each remembered key, oldest first
        self.keys = array("Q")      # ... and the key; slots before ``head`` are forgotten
        self.head = 0
        self.hold_ps = hold_ps
        self.limit = limit

    def __len__(self):
        return len(self.npkts_of)

    def __contains__(self, src_msg):
        return ((src_msg[0] << 32) | src_msg[1]) in self.npkts_of

    def has(self, src, msg_id):
        """``(src, msg_id) in ids`` without the tuple: what a receiver asks of a message's
        first packet (compiled, with C integers: the key of two 32-bit fields is computed
        as an unsigned 64-bit integer; any other pair is asked as ``in`` does)."""
        if 0 <= src <= MASK32 and 0 <= msg_id <= MASK32:
            s = src
            return (s << 32 | msg_id) in self.npkts_of
        return (src, msg_id) in self

    def __getitem__(self, src_msg):
        return self.npkts_of[(src_msg[0] << 32) | src_msg[1]]

    def __iter__(self):
        npkts_of = self.npkts_of
        for i in range(self.head, len(self.keys)):
            key = self.keys[i]
            if key in npkts_of:
                yield (key >> 32, key & 0xFFFFFFFF)

    def add(self, src, msg_id, npkts, now):
        if npkts < 0:
            raise ValueError("FinishedIds.add: packet count %d of (%d, %d) is negative"
                             % (npkts, src, msg_id))
        key = (src << 32) | msg_id
        keys = self.keys
        keys.append(key)            # first: a key beyond 64 bits (no wire carries one) fails here
        times = self.times
        times.append(now)
        npkts_of = self.npkts_of
        npkts_of[key] = npkts
        oldest = now - self.hold_ps
        head = self.head
        n = len(keys)
        while head < n and (times[head] <= oldest or n - head > self.limit):
            npkts_of.pop(keys[head], None)
            head += 1
        if head >= COMPACT_AT and head * 2 >= n:
            del times[:head]
            del keys[:head]
            head = 0
        self.head = head
