"""A progress line for Mininet runs: rewritten in place on a terminal, one line every
few seconds in a log, so a long run in CI still says where it is."""

import sys
import time


class ProgressLine:
    """``progress`` for ``run_mininet``: one rewritten line on a terminal, a line every
    ``every_s`` seconds otherwise (logs, CI)."""

    def __init__(self, stream=None, every_s=10.0):
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.every_s = every_s
        self.last = 0.0
        self.width = 0
        self.stage = None

    def __call__(self, p):
        if p is None:
            if self.tty and self.width:
                self.stream.write("\r%s\r" % (" " * self.width))
                self.stream.flush()
            self.width = 0
            return
        text = ("[%s] %-10s t=%6.1fs  agents up %d/%d  hosts done %d/%d  datagrams %d"
                % (p["label"], p["stage"], p["t_s"], p["ready"], p["agents"],
                   p["hosts_done"], p["hosts"], p["datagrams"]))
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r" + text.ljust(self.width))
            self.width = max(self.width, len(text))
        elif now - self.last >= self.every_s or p["stage"] != self.stage:
            self.stream.write(text + "\n")
            self.last = now
        self.stage = p["stage"]
        self.stream.flush()
