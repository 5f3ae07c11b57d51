"""What the Mininet runtime does to this machine and reads back from it.

Children that die with their parent (``PR_SET_PDEATHSIG``), signal guards that turn
SIGTERM and a wall-clock bound into exceptions so ``finally`` blocks run, sysctls and the
open-file limit, and the inspection of processes, namespaces and interfaces with which
``left_behind`` proves that a network left nothing behind.
"""

import contextlib
import ctypes
import os
import resource
import signal
import threading

PR_SET_PDEATHSIG = 1


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived (or the wall-clock bound passed) while a network was up."""


class WallClockExceeded(Terminated):
    """The wall-clock bound of ``guard`` passed."""


def die_with_parent(sig=signal.SIGTERM):
    """A ``preexec_fn`` giving the child ``PR_SET_PDEATHSIG`` = ``sig``.

    The signal is sent when the thread that forked the child ends, so start children from
    the thread that owns the network (the main thread).  A parent already gone before the
    call counts as dead.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    parent = os.getpid()
    sig = int(sig)

    def preexec():
        if prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
            os._exit(126)
        if os.getppid() != parent:
            os.kill(os.getpid(), sig)
    return preexec


@contextlib.contextmanager
def guard(bound_s=None):
    """SIGTERM raises ``Terminated``; after ``bound_s`` seconds ``WallClockExceeded``.

    Only in the main thread (elsewhere signals cannot be caught: it yields and does
    nothing).  Restores the previous handlers and cancels the timer on exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum, _frame):
        raise Terminated("signal %d" % signum)

    def on_alarm(_signum, _frame):
        raise WallClockExceeded("wall-clock bound of %.0f s passed" % bound_s)

    old_term = signal.signal(signal.SIGTERM, on_term)
    old_alarm = None
    if bound_s is not None:
        old_alarm = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, max(bound_s, 0.001))
    try:
        yield
    finally:
        if bound_s is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_alarm)
        signal.signal(signal.SIGTERM, old_term)


@contextlib.contextmanager
def signals_blocked():
    """SIGINT, SIGTERM and SIGALRM wait (in the main thread) until the block ends."""
    sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGALRM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def raise_nofile_limit(want=16384):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def _sysctl_path(name):
    return "/proc/sys/" + name.replace(".", "/")


def read_sysctl(name):
    with open(_sysctl_path(name)) as f:
        return f.read().strip()


def write_sysctl(name, value):
    with open(_sysctl_path(name), "w") as f:
        f.write(str(value))


def netns_of(pid):
    """The network namespace (``net:[inode]``) of a process, or None if it is gone."""
    try:
        return os.readlink("/proc/%d/ns/net" % pid)
    except OSError:
        return None


def pid_state(pid):
    """'R', 'S', 'Z', ... of a process, or None if there is none."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def pid_start(pid):
    """When a process started (clock ticks since boot), or None if there is none: a pid
    and its start time name one process, whatever reuses the pid later."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def boot_ticks():
    """Now, in the clock ticks of ``pid_start``."""
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK")) + 1


def root_interfaces():
    """Interface names of this (the root) network namespace."""
    try:
        return set(os.listdir("/sys/class/net"))
    except OSError:
        return set()


def namespace_holders(namespaces):
    """Pids whose network namespace, or an open file, is one of ``namespaces``."""
    wanted = set(namespaces)
    holders = set()
    if not wanted:
        return holders
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if netns_of(pid) in wanted:
            holders.add(pid)
            continue
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) in wanted:
                    holders.add(pid)
                    break
            except OSError:
                continue
    return holders


def udp_bound(pid, port):
    """True if the process's network namespace has a UDP socket bound to ``port``."""
    want = ":%04X" % port
    try:
        with open("/proc/%d/net/udp" % pid) as f:
            next(f)
            return any(line.split()[1].endswith(want) for line in f)
    except (OSError, StopIteration, IndexError):
        return False


def udp_in_datagrams(pid):
    """``Udp: InDatagrams`` of the process's network namespace (0 when unreadable)."""
    try:
        with open("/proc/%d/net/snmp" % pid) as f:
            lines = [line.split() for line in f if line.startswith("Udp:")]
        return int(lines[1][lines[0].index("InDatagrams")])
    except (OSError, IndexError, ValueError):
        return 0


def left_behind(state):
    """What of a network (``MininetFabric.state()``) still exists: processes (also
    zombies), namespaces (held by any process or open file) and interfaces of the root
    namespace.  An empty dict when nothing does.

    Pids and namespace numbers are reused once free, maybe by another network on the
    machine: a process counts as ours when its start time is the one recorded, a holder
    of one of our namespace numbers when it started before the network was stopped."""
    out = {}
    starts = {int(k): v for k, v in state.get("starts", {}).items()}
    pids = [p for p in state["shell_pids"] + state["program_pids"]
            if pid_state(p) is not None and (p not in starts or pid_start(p) == starts[p])]
    if pids:
        out["processes"] = sorted(pids)
    holders = namespace_holders(state["namespaces"])
    stopped = state.get("stopped_ticks")
    if stopped is not None:
        holders = {p for p in holders if (pid_start(p) or 0) <= stopped}
    if holders:
        out["namespaces"] = sorted({netns_of(p) or "?" for p in holders})
        out["namespace_holders"] = sorted(holders)
    intfs = sorted(set(state["interfaces"]) & root_interfaces())
    if intfs:
        out["interfaces"] = intfs
    return out


def parent_pid(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def alive_child(pid):
    """True while ``pid`` runs; reaps it (if our child) once it has exited."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return False
    except ChildProcessError:
        pass
    except OSError:
        return False
    st = pid_state(pid)
    return st is not None and st != "Z"
