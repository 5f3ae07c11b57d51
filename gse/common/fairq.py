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

from bisect import bisect_left, bisect_right, insort

from gse.common.fifo import Fifo

MSG_ID_LIMIT = 1 << 31
PEER_LIMIT = 1 << 32


class FairQueue:
    __slots__ = ("fifos", "keys", "ready", "cursor", "count")

    def __init__(self):
        self.fifos = {}         # key -> Fifo of that flow's packets
        self.keys = []          # every key ever queued, ascending (htsim's map)
        self.ready = []         # the keys with packets, ascending
        self.cursor = None      # the key served next, None: from the first
        self.count = 0

    def __len__(self):
        return self.count

    def append(self, pkt):
        """Queue ``pkt`` behind its flow's earlier packets (key: msg_id, destination)."""
        msg_id = pkt.msg_id
        dst = pkt.dst
        if not (-MSG_ID_LIMIT <= msg_id < MSG_ID_LIMIT and 0 <= dst < PEER_LIMIT):
            raise ValueError("FairQueue: packet of message %d to %d: the htsim NIC's flow key "
                             "needs a message id within +-2**31 and a peer within 0..2**32-1"
                             % (msg_id, dst))
        key = msg_id * PEER_LIMIT + dst
        fifo = self.fifos.get(key)
        if fifo is None:
            fifo = self.fifos[key] = Fifo()
            insort(self.keys, key)
        if not fifo:
            insort(self.ready, key)
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
        i = 0 if self.cursor is None else bisect_left(ready, self.cursor)
        if i == len(ready):
            i = 0
        key = ready[i]
        fifo = self.fifos[key]
        pkt = fifo.popleft()
        if not fifo:
            del ready[i]
        keys = self.keys
        j = bisect_right(keys, key)
        self.cursor = keys[j] if j < len(keys) else None
        self.count -= 1
        return pkt
