"""htsim's FairPullQueue: one FIFO per flow, served one packet per turn in flow-id order.

uet-htsim's host NIC (``FairPriorityQueue``, queue.cpp) holds each priority class in a
``FairPullQueue`` (fairpullqueue.cpp:80-118): a map from flow id to that flow's FIFO, and an
iterator into the map that keeps its place.  A dequeue takes the head of the flow at the
iterator (skipping empty FIFOs) and leaves the iterator on the next flow; a flow's entry is
never removed, so a flow whose id falls between the one served and the iterator waits for
the next round, and a new flow added behind the last one waits for the wrap.  The ``htsim``
RoCE profile serves a host's ACKs (and NAKs) this way: a receiving host's ACKs of several
flows leave round robin by flow id, not in the order they were made.

The key is the flow's ``(msg_id, peer)``: msg_id orders as htsim's flow id does (ids are
unique in its runs); the peer keeps two senders' equal ids apart.  It is kept as one
integer, ``msg_id * 2**32 + peer``, which orders as the pair does for ids within 32 bits
(signed) and peers within 32 bits (unsigned), and costs no tuple to make, hash and
compare per ACK.
"""

from bisect import insort

from gse.common.fifo import Fifo

MSG_ID_LIMIT = 1 << 31
PEER_LIMIT = 1 << 32


def _bisect_left(a, x):
    """``bisect.bisect_left`` over a list of keys (compiled: C integers, no call into the
    bisect module, whose argument passing cost more than the search on these short lists)."""
    lo = 0
    hi = len(a)
    while lo < hi:
        mid = (lo + hi) >> 1
        v = a[mid]
        if v < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


class FairQueue:
    __slots__ = ("fifos", "keys", "ready", "cursor", "count", "last_key", "last_fifo")

    def __init__(self):
        self.fifos = {}         # key -> Fifo of that flow's packets
        self.keys = []          # every key ever queued, ascending (htsim's map)
        self.ready = []         # the keys with packets, ascending
        self.cursor = None      # the key served next, None: from the first
        self.count = 0
        # the key used last and its Fifo (None: none yet): a host's ACKs are mostly of one
        # flow, found without a dict lookup (entries are never removed: it stays valid)
        self.last_key = 0
        self.last_fifo = None

    def __len__(self):
        return self.count

    def _fifo(self, key):
        """The Fifo of ``key``, made (and its key placed) on first use."""
        fifo = self.last_fifo
        if fifo is not None and key == self.last_key:
            return fifo
        fifo = self.fifos.get(key)
        if fifo is None:
            fifo = self.fifos[key] = Fifo()
            insort(self.keys, key)
        self.last_key = key
        self.last_fifo = fifo
        return fifo

    def append(self, pkt):
        """Queue ``pkt`` behind its flow's earlier packets (key: msg_id, destination)."""
        msg_id = pkt.msg_id
        dst = pkt.dst
        if not (-MSG_ID_LIMIT <= msg_id < MSG_ID_LIMIT and 0 <= dst < PEER_LIMIT):
            raise ValueError("FairQueue: packet of message %d to %d: the htsim NIC's flow key "
                             "needs a message id within +-2**31 and a peer within 0..2**32-1"
                             % (msg_id, dst))
        key = msg_id * PEER_LIMIT + dst
        fifo = self._fifo(key)
        if not fifo:
            ready = self.ready
            if not ready or ready[len(ready) - 1] < key:
                ready.append(key)
            else:
                ready.insert(_bisect_left(ready, key), key)
        fifo.append(pkt)
        self.count += 1

    def popleft(self):
        """The next packet in htsim's order; IndexError if the queue is empty.  The first
        flow with packets at or after the cursor (wrapping) is served, and the cursor moves
        to the flow after it in the order of every flow, empty or not, as htsim's iterator
        does: a flow that joined between the two waits for the next round."""
        if not self.count:
            raise IndexError("pop from an empty FairQueue")
        ready = self.ready
        i = 0 if self.cursor is None else _bisect_left(ready, self.cursor)
        if i == len(ready):
            i = 0
        key = ready[i]
        fifo = self._fifo(key)
        pkt = fifo.popleft()
        if not fifo:
            del ready[i]
        keys = self.keys
        j = _bisect_left(keys, key + 1)     # (bisect_right: the keys are integers)
        self.cursor = keys[j] if j < len(keys) else None
        self.count -= 1
        return pkt
