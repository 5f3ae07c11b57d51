"""Priority flow control (802.1Qbb) for the lossless data class: ingress accounting.

A switch counts, per ingress port, the bytes of data-class packets that arrived through
that port and still wait in any of its egress queues.  When a port's count passes XOFF the
switch sends PAUSE to the upstream neighbour on that port; when it falls below XON it sends
RESUME.  XOFF is either static or a dynamic share of the free shared buffer (``alpha`` x
free bytes, as Broadcom-style switches do); the headroom above XOFF absorbs what is already
on the wire when the PAUSE lands (about rate x 2 x one-way delay, plus a packet being sent
at each end), so a correctly sized lossless class never drops for want of buffer.  The
state is sans-I/O: it returns decisions, the runtime sends the frames.

Two models (``PfcConfig.model``):

* ``"802.1qbb"``: data-class bytes are counted while they wait in an egress queue
  (``on_enqueue`` / ``on_dequeue``), RESUME once at or below XON; a PAUSE carries quanta;
* ``"htsim"``: as htsim's lossless input queue (queue_lossless_input.cpp): every packet is
  counted from its arrival until its last bit has left the egress port (``on_enqueue`` /
  ``on_release``), PAUSE strictly above XOFF, RESUME strictly below XON, and a PAUSE holds
  until its RESUME (no quanta, no timer).
"""

from array import array

MODELS = ("802.1qbb", "htsim")


class PfcConfig:
    __slots__ = ("xoff_bytes", "xon_gap_bytes", "headroom_bytes", "dynamic_alpha",
                 "buffer_bytes", "pause_quanta", "model")

    def __init__(self, xoff_bytes=62_250, xon_gap_bytes=12_450, headroom_bytes=50_000,
                 dynamic_alpha=0.0, buffer_bytes=0, pause_quanta=65535, model="802.1qbb"):
        if xoff_bytes <= 0 and dynamic_alpha <= 0:
            raise ValueError("PFC needs a positive xoff_bytes or dynamic_alpha")
        if xon_gap_bytes < 0 or headroom_bytes < 0:
            raise ValueError("xon_gap_bytes and headroom_bytes must be >= 0")
        if dynamic_alpha > 0 and buffer_bytes <= 0:
            raise ValueError("a dynamic PFC threshold needs buffer_bytes > 0")
        self.xoff_bytes = xoff_bytes          # static threshold (used when dynamic_alpha == 0)
        self.xon_gap_bytes = xon_gap_bytes    # RESUME once this far below XOFF
        self.headroom_bytes = headroom_bytes  # what may still arrive after PAUSE
        self.dynamic_alpha = dynamic_alpha    # XOFF = alpha x free shared buffer
        self.buffer_bytes = buffer_bytes      # shared buffer of the switch
        self.pause_quanta = pause_quanta      # a PAUSE holds for quanta x 512 bit times
        if not 1 <= pause_quanta <= 65535:
            raise ValueError("pause_quanta must be 1..65535, got %r" % pause_quanta)
        if model not in MODELS:
            raise ValueError("PFC model must be one of %s, got %r" % (", ".join(MODELS), model))
        self.model = model


def _xoff(st):
    """``PfcState.xoff``: the XOFF threshold now (compiled: inline in the per-packet
    accounting, without a method call)."""
    cfg = st.cfg
    if st.dynamic:
        free = cfg.buffer_bytes - st.used
        return int(cfg.dynamic_alpha * free) if free > 0 else 0
    return cfg.xoff_bytes


class PfcState:
    """One switch's PFC accounting over its ingress ports."""

    __slots__ = ("cfg", "ingress_bytes", "pausing", "used", "pauses_sent", "resumes_sent",
                 "headroom_overflows", "peak_ingress", "dynamic", "htsim")

    def __init__(self, cfg, n_ports):
        self.cfg = cfg
        # per port, C integers (an array, not a list of ints): counted twice per packet
        # per switch, and a list would make a Python int for every store
        self.ingress_bytes = array("q", bytes(8 * n_ports))
        self.pausing = bytearray(n_ports)  # 1: a PAUSE is in force upstream of this port
        self.dynamic = cfg.dynamic_alpha > 0   # (XOFF is read per packet: decided once)
        self.htsim = cfg.model == "htsim"     # count every packet until it has left
        self.used = 0                      # data bytes queued in the whole switch
        self.pauses_sent = 0
        self.resumes_sent = 0
        self.headroom_overflows = 0        # arrivals beyond XOFF + headroom (sizing error)
        self.peak_ingress = 0

    def xoff(self):
        return _xoff(self)

    def on_enqueue(self, port, size):
        """A data packet from ``port`` was queued; True if a PAUSE must go upstream."""
        b = self.ingress_bytes[port]
        b += size
        self.ingress_bytes[port] = b
        self.used += size
        if b > self.peak_ingress:
            self.peak_ingress = b
        xoff = _xoff(self)
        if b > xoff + self.cfg.headroom_bytes:
            self.headroom_overflows += 1
        if not self.pausing[port] and b > xoff:
            self.pausing[port] = 1
            self.pauses_sent += 1
            return True
        return False

    def on_dequeue(self, port, size):
        """A data packet from ``port`` left; True if a RESUME must go upstream."""
        b = self.ingress_bytes[port]
        b -= size
        self.ingress_bytes[port] = b
        self.used -= size
        if self.pausing[port]:
            xon = _xoff(self) - self.cfg.xon_gap_bytes
            if b <= max(xon, 0):
                self.pausing[port] = 0
                self.resumes_sent += 1
                return True
        return False

    def on_release(self, port, size):
        """htsim model: a packet from ``port`` finished leaving its egress port; True if a
        RESUME must go upstream (strictly below XON, queue_lossless_input.cpp)."""
        b = self.ingress_bytes[port]
        b -= size
        self.ingress_bytes[port] = b
        self.used -= size
        if self.pausing[port] and b < _xoff(self) - self.cfg.xon_gap_bytes:
            self.pausing[port] = 0
            self.resumes_sent += 1
            return True
        return False
