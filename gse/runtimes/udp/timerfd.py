"""timerfd(2) through ctypes, for the pure-Python build (the compiled one calls it from C).

A timerfd is a descriptor that becomes readable when its timer expires: in an event
loop's descriptor set, it wakes the loop at a microsecond's precision, where the loops'
own timers sleep in milliseconds (``gse.runtimes.udp.io.Scheduler``, ``wake="timerfd"``).
Linux only: ``open_timerfd`` returns -1 elsewhere.
"""

import ctypes
import os
import select

TFD_NONBLOCK_CLOEXEC = 0o4000 | 0o2000000
TFD_TIMER_ABSTIME = 1
CLOCK_MONOTONIC = 1
PR_SET_TIMERSLACK = 29

__all__ = ["open_timerfd", "arm", "drain"]


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


_LIBC: list[ctypes.CDLL | None] = []


def _libc():
    if not _LIBC:
        try:
            lib = ctypes.CDLL(None, use_errno=True)
            lib.timerfd_create        # (AttributeError where there is none)
            lib.timerfd_settime.argtypes = [ctypes.c_int, ctypes.c_int,
                                            ctypes.POINTER(_Itimerspec), ctypes.c_void_p]
        except (OSError, AttributeError):
            lib = None
        _LIBC.append(lib)
    return _LIBC[0]


def open_timerfd():
    """A non-blocking CLOCK_MONOTONIC timerfd (and the thread's timer slack at 1 ns), or
    -1 where there is none."""
    lib = _libc()
    if lib is None or not hasattr(select, "epoll"):
        return -1
    fd = lib.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK_CLOEXEC)
    if fd >= 0:
        lib.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    return fd


def arm(fd, abs_ns):
    """Expire once at ``abs_ns`` on CLOCK_MONOTONIC (a past time: at once)."""
    if abs_ns < 1:
        abs_ns = 1                  # (zero would disarm it)
    spec = _Itimerspec()
    spec.it_value.tv_sec = abs_ns // 1_000_000_000
    spec.it_value.tv_nsec = abs_ns % 1_000_000_000
    _libc().timerfd_settime(fd, TFD_TIMER_ABSTIME, ctypes.byref(spec), None)


def drain(fd):
    """Consume the expiry count (nothing if it has not expired)."""
    try:
        os.read(fd, 8)
    except (BlockingIOError, InterruptedError):
        pass
