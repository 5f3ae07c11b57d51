"""DCQCN's reaction point: the per-flow rate limiter of a RoCEv2 sender.

After Zhu et al., "Congestion Control for Large-Scale RDMA Deployments" (SIGCOMM 2015):

* on a CNP: target ``Rt <- Rc``, current ``Rc <- Rc (1 - alpha/2)``, ``alpha <- (1-g) alpha
  + g``; the increase stages restart;
* every ``alpha_timer`` without a CNP: ``alpha <- (1-g) alpha``;
* an increase event every ``increase_timer`` and every ``byte_counter`` bytes sent; with
  ``T`` timer events and ``B`` byte events since the last cut: fast recovery while both
  are below ``F`` (``Rc <- (Rt + Rc)/2``), additive increase once one reaches ``F``
  (``Rt += AI``), hyper increase once both have (``Rt += i x HAI``), never above line rate.

Rates are in Mb/s (floats: they never order events; the pacing gap is rounded up to whole
picoseconds).  Sans-I/O: the owner calls ``on_cnp``, ``on_sent`` and ``on_timer`` with now.
"""

NEVER = -1


class Dcqcn:
    __slots__ = ("line", "rc", "rt", "alpha", "g", "alpha_period", "inc_period", "byte_count",
                 "f", "ai", "hai", "min_rate", "t_count", "b_count", "bytes_since",
                 "cnp_since_alpha", "alpha_deadline", "inc_deadline", "cuts")

    def __init__(self, line_mbps, cfg):
        self.line = float(line_mbps)
        self.rc = self.line
        self.rt = self.line
        self.alpha = 1.0
        self.g = cfg.dcqcn_g
        self.alpha_period = cfg.dcqcn_alpha_timer_ps
        self.inc_period = cfg.dcqcn_increase_timer_ps
        self.byte_count = cfg.dcqcn_byte_counter
        self.f = cfg.dcqcn_f
        self.ai = float(cfg.dcqcn_ai_mbps)
        self.hai = float(cfg.dcqcn_hai_mbps)
        self.min_rate = float(cfg.dcqcn_min_rate_mbps)
        self.t_count = 0
        self.b_count = 0
        self.bytes_since = 0
        self.cnp_since_alpha = False
        self.alpha_deadline = NEVER   # timers run only while below line rate
        self.inc_deadline = NEVER
        self.cuts = 0

    def limited(self):
        return self.rc < self.line

    def gap_ps(self, nbytes):
        """Time the limiter needs between two packets of ``nbytes``."""
        return int(nbytes * 8_000_000 / self.rc) + 1

    def on_cnp(self, now):
        self.rt = self.rc
        self.rc = max(self.min_rate, self.rc * (1.0 - self.alpha / 2.0))
        self.alpha = (1.0 - self.g) * self.alpha + self.g
        self.t_count = 0
        self.b_count = 0
        self.bytes_since = 0
        self.cnp_since_alpha = True
        self.alpha_deadline = now + self.alpha_period
        self.inc_deadline = now + self.inc_period
        self.cuts += 1

    def on_sent(self, nbytes):
        if self.rc >= self.line:
            return
        self.bytes_since += nbytes
        if self.bytes_since >= self.byte_count:
            self.bytes_since -= self.byte_count
            self.b_count += 1
            self._increase()

    def next_deadline(self):
        a, b = self.alpha_deadline, self.inc_deadline
        if a == NEVER:
            return b
        if b == NEVER:
            return a
        return a if a < b else b

    def on_timer(self, now):
        if self.alpha_deadline != NEVER and now >= self.alpha_deadline:
            if not self.cnp_since_alpha:
                self.alpha = (1.0 - self.g) * self.alpha
            self.cnp_since_alpha = False
            self.alpha_deadline = now + self.alpha_period
        if self.inc_deadline != NEVER and now >= self.inc_deadline:
            self.t_count += 1
            self._increase()
            self.inc_deadline = now + self.inc_period
        if self.rc >= self.line:
            self.alpha_deadline = NEVER
            self.inc_deadline = NEVER

    def _increase(self):
        f = self.f
        t, b = self.t_count, self.b_count
        if t > f and b > f:
            self.rt += (min(t, b) - f) * self.hai
        elif t >= f or b >= f:
            self.rt += self.ai
        if self.rt > self.line:
            self.rt = self.line
        self.rc = (self.rt + self.rc) / 2.0
        if self.line - self.rc < 1e-6:
            self.rc = self.line
