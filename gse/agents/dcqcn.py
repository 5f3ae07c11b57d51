"""DCQCN's reaction point: the per-flow rate limiter of a RoCEv2 sender.

Two variants (``RoceConfig.dcqcn_variant``; every parameter's default and source is in
docs/comparison.md):

``paper``: after Zhu et al., "Congestion Control for Large-Scale RDMA Deployments" (SIGCOMM
2015), with the CNPs paced at the receiver (``cnp_interval``):

* on a CNP: target ``Rt <- Rc``, current ``Rc <- Rc (1 - alpha/2)``, ``alpha <- (1-g) alpha
  + g``; the increase stages restart;
* every ``alpha_timer`` without a CNP: ``alpha <- (1-g) alpha``;
* an increase event every ``increase_timer`` and every ``byte_counter`` bytes sent; with
  ``T`` timer events and ``B`` byte events since the last cut: fast recovery while both
  are below ``F`` (``Rc <- (Rt + Rc)/2``), additive increase once one reaches ``F``
  (``Rt += AI``), hyper increase once both have (``Rt += i x HAI``), never above line rate.

``mlx``: NVIDIA/Mellanox ConnectX-4 and later, as the HPCC authors' ns-3 simulator implements
it (alibaba-edu/High-Precision-Congestion-Control, simulation/src/point-to-point/model/
rdma-hw.cc:615-738), with a CNP for every marked packet (``cnp_interval`` 0):

* the first CNP sets ``alpha = 1`` and starts two clocks: alpha is updated every
  ``alpha_timer`` (``(1-g) alpha + g`` if a CNP came since the last update, else
  ``(1-g) alpha``), and every ``decrease_period`` (first at the first CNP + period + 1 ns)
  the rate is cut once if a CNP came since the last check: ``Rt <- Rc`` (only if an
  increase happened since the last cut, unless ``clamp_target``), ``Rc <- max(min_rate,
  Rc (1 - alpha/2))``, and the increase timer restarts; no cut at the CNP itself;
* increase events every ``increase_timer`` after a cut, counted by stage ``i`` (0 first):
  ``i < F`` fast recovery, ``i == F`` additive increase, ``i > F`` hyper increase by a
  fixed ``HAI`` per event; no byte counter.

Both clocks run for the rest of the flow in the reference; here they are caught up lazily
(alpha decays over the periods that passed, the decrease check resumes on its grid at the
next CNP), which gives the same rates without an event per microsecond per idle flow.

Rates are in Mb/s (floats: they never order events; the pacing gap is rounded up to whole
picoseconds).  Sans-I/O: the owner calls ``on_cnp``, ``on_sent`` and ``on_timer`` with now.
``log``, when a list, receives ``(now, Rc, Rt, alpha)`` at the start and after every change
of the rate (one check per change, nothing per packet): the rate of the reaction point over
time, for plots and for validation against the reference's per-flow rate samples.
"""

NEVER = -1
PS_PER_NS = 1_000


class Dcqcn:
    __slots__ = ("line", "rc", "rt", "alpha", "g", "alpha_period", "inc_period", "byte_count",
                 "f", "ai", "hai", "min_rate", "t_count", "b_count", "bytes_since",
                 "cnp_since_alpha", "alpha_deadline", "inc_deadline", "cuts",
                 "mlx", "dec_period", "clamp", "first_cnp", "dec_anchor", "dec_next",
                 "dec_flag", "stage", "log")

    def __init__(self, line_mbps, cfg):
        self.line = float(line_mbps)
        self.rc = self.line
        self.rt = self.line
        self.alpha = cfg.dcqcn_initial_alpha   # (mlx: set to 1 at the first CNP)
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
        self.cnp_since_alpha = False  # mlx: a CNP came since the last alpha update
        self.alpha_deadline = NEVER   # paper: timers run only while below line rate
        self.inc_deadline = NEVER
        self.cuts = 0
        self.mlx = cfg.dcqcn_variant == "mlx"
        self.dec_period = cfg.dcqcn_decrease_period_ps
        self.clamp = cfg.dcqcn_clamp_target
        self.first_cnp = True
        self.dec_anchor = NEVER       # mlx: the decrease checks' grid
        self.dec_next = NEVER
        self.dec_flag = False         # mlx: a CNP came since the last decrease check
        self.stage = 0                # mlx: increase events since the last cut
        self.log = None

    def limited(self):
        return self.rc < self.line

    def gap_ps(self, nbytes):
        """Time the limiter needs between two packets of ``nbytes``."""
        return int(nbytes * 8_000_000 / self.rc) + 1

    def on_cnp(self, now):
        if self.mlx:
            self._cnp_mlx(now)
            return
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
        if self.log is not None:
            self.log.append((now, self.rc, self.rt, self.alpha))

    def on_sent(self, nbytes, now):
        if self.rc >= self.line or self.byte_count <= 0:
            return
        self.bytes_since += nbytes
        if self.bytes_since >= self.byte_count:
            self.bytes_since -= self.byte_count
            self.b_count += 1
            self._increase()
            if self.log is not None:
                self.log.append((now, self.rc, self.rt, self.alpha))

    def next_deadline(self):
        if self.mlx:                       # (alpha's clock needs no event: caught up lazily)
            a, b = self.inc_deadline, self.dec_next
        else:
            a, b = self.alpha_deadline, self.inc_deadline
        if a == NEVER:
            return b
        if b == NEVER:
            return a
        return a if a < b else b

    def on_timer(self, now):
        if self.mlx:
            self._timer_mlx(now)
            return
        if self.alpha_deadline != NEVER and now >= self.alpha_deadline:
            if not self.cnp_since_alpha:
                self.alpha = (1.0 - self.g) * self.alpha
            self.cnp_since_alpha = False
            self.alpha_deadline = now + self.alpha_period
        if self.inc_deadline != NEVER and now >= self.inc_deadline:
            self.t_count += 1
            self._increase()
            self.inc_deadline = now + self.inc_period
            if self.log is not None:
                self.log.append((now, self.rc, self.rt, self.alpha))
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

    # -- mlx: the ConnectX / HPCC-simulator reaction point ---------------------------------

    def _cnp_mlx(self, now):
        if self.first_cnp:                 # alpha = 1, both clocks start, rate unchanged
            self.first_cnp = False
            self.alpha = 1.0
            self.cnp_since_alpha = False
            self.alpha_deadline = now + self.alpha_period
            self.dec_anchor = now + self.dec_period + PS_PER_NS
            self.dec_next = self.dec_anchor
            self.dec_flag = True
            return
        self._catch_up_alpha(now)
        self.cnp_since_alpha = True
        self.dec_flag = True
        if self.dec_next == NEVER:         # resume the checks on their grid
            k = (now - self.dec_anchor) // self.dec_period + 1
            self.dec_next = self.dec_anchor + k * self.dec_period

    def _catch_up_alpha(self, now):
        """Apply the alpha updates due at or before ``now``."""
        t = self.alpha_deadline
        if t == NEVER or now < t:
            return
        n = (now - t) // self.alpha_period + 1
        keep = 1.0 - self.g
        alpha = self.alpha
        if self.cnp_since_alpha:
            alpha = keep * alpha + self.g
            self.cnp_since_alpha = False
            n -= 1
        if n > 0:
            alpha *= keep ** n
        self.alpha = alpha
        self.alpha_deadline = t + ((now - t) // self.alpha_period + 1) * self.alpha_period

    def _timer_mlx(self, now):
        if self.dec_next != NEVER and now >= self.dec_next:
            if self.dec_flag:
                self._catch_up_alpha(now)
                if self.clamp or self.stage != 0:
                    self.rt = self.rc
                self.rc = max(self.min_rate, self.rc * (1.0 - self.alpha / 2.0))
                self.stage = 0
                self.dec_flag = False
                self.inc_deadline = now + self.inc_period
                self.dec_next = now + self.dec_period
                self.cuts += 1
                if self.log is not None:
                    self.log.append((now, self.rc, self.rt, self.alpha))
            else:
                self.dec_next = NEVER      # idle until the next CNP
        if self.inc_deadline != NEVER and now >= self.inc_deadline:
            self.inc_deadline = now + self.inc_period
            if self.stage == self.f:
                self.rt += self.ai
            elif self.stage > self.f:
                self.rt += self.hai
            if self.rt > self.line:
                self.rt = self.line
            self.rc = (self.rt + self.rc) / 2.0
            if self.line - self.rc < 1e-6:
                self.rc = self.line
            self.stage += 1
            if self.log is not None:
                self.log.append((now, self.rc, self.rt, self.alpha))
            if self.rc >= self.line:       # nothing left to increase until the next cut
                self.inc_deadline = NEVER
