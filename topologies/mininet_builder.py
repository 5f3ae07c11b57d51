"""Lay a project topology out as a Mininet network: a namespace per node, a veth per link.

Every node of the topology -- host or switch -- becomes one plain Mininet ``Host`` (its own
network namespace; no Open vSwitch, no controller), every link one veth pair (plain
``Link``: no ``TCLink``, rates and delays are emulated inside the agents), with one /31
per link.  A switch position thus has one address per port, and a neighbour reached on
port ``p`` is addressed by its own address on that link: a node that binds 0.0.0.0 sends
to ``peer_ip(nid, p)`` and the kernel picks the /31 of that link as the source, so the
receiver recognises the ingress port by the source address.  Neighbour entries are static
(no ARP) and IPv6 is off in every namespace, so nothing but the agents' datagrams crosses
a veth.

    with MininetFabric(fat_tree(4, link_gbps=0.02)) as fab:     # builds; stops on exit
        fab.popen(0, ["ping", "-c1", fab.peer_ip(0, 0)], log_path="/tmp/h0.log").wait()
    assert not fab.left_behind()

Lifetime and clean-up, on every exit path:

* every child (node shells, and what ``popen`` starts in a node) gets
  ``PR_SET_PDEATHSIG``: shells SIGKILL, programs SIGTERM by default, so even a SIGKILLed
  parent leaves no process -- and with the processes go the namespaces and, with them,
  the veths (both ends of every veth live in node namespaces; none is ever in the root
  namespace);
* ``stop()`` (``with``, or ``try/finally``) terminates the programs (SIGTERM, then SIGKILL
  after a grace period), runs ``net.stop()``, reaps every shell (SIGKILL if needed), closes
  the ptys and restores the sysctls it raised; it runs with SIGINT/SIGTERM blocked, so a
  second signal cannot cut it short;
* ``guard(bound_s)`` turns SIGTERM into ``Terminated`` (a ``KeyboardInterrupt``) and
  raises ``WallClockExceeded`` when the wall-clock bound passes, so the ``finally`` runs;
* ``left_behind()`` checks it: no process, namespace or interface of the network remains.

Socket buffers: ``net.core.rmem_max`` and ``wmem_max`` are global (read-only inside a
namespace); ``start()`` raises them to 8 MiB when lower and ``stop()`` puts back what it
changed (a SIGKILLed parent cannot: they stay at 8 MiB, ceilings only).  The agents get
their 8 MiB receive buffers from ``SO_RCVBUFFORCE`` as root in any case.  Mininet's own
``fixLimits()`` (which rewrites machine-wide TCP sysctls and never restores them) is
skipped.

Needs Linux, root, Debian's ``mininet`` package (its ``mnexec``) and the Python package
``mininet`` (this environment's, else Debian's copy is loaded by path):
``scripts/setup-mininet.sh`` sets both up; ``mininet_unavailable()`` says what is missing.
``python -m topologies.mininet_builder --k 4`` builds a Fat-Tree, pings every link, and
tears it down, printing the times.  See docs/mininet.md.
"""

import contextlib
import ctypes
import importlib.machinery
import importlib.util
import ipaddress
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time

from topologies.topology import TopologyError

DEFAULT_IP_BASE = "198.18.0.0/15"      # RFC 2544's benchmarking range: never a real host
SOCKET_BUFFER_BYTES = 8 * 1024 * 1024
BUFFER_SYSCTLS = ("net.core.rmem_max", "net.core.wmem_max")
IFNAME_MAX = 15                         # Linux IFNAMSIZ - 1
STOP_GRACE_S = 3.0                      # SIGTERM -> SIGKILL for programs in the nodes
SHELL_GRACE_S = 2.0
PR_SET_PDEATHSIG = 1
DEBIAN_PYTHON_DIRS = ("/usr/lib/python3/dist-packages", "/usr/local/lib/python3/dist-packages")
SETUP_HINT = "run scripts/setup-mininet.sh as root"


class MininetUnavailable(RuntimeError):
    """Mininet cannot run here; the message says why and what to do."""


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived (or the wall-clock bound passed) while a network was up."""


class WallClockExceeded(Terminated):
    """The wall-clock bound of ``guard`` passed."""


# ---------------------------------------------------------------------------- mininet


def import_mininet():
    """The ``mininet`` package: this environment's, else Debian's loaded by path.

    Loading Debian's copy by path (``/usr/lib/python3/dist-packages/mininet``) puts only
    that package in ``sys.modules``, not the rest of Debian's dist-packages, so any Python
    (a virtual environment, pyenv) can use the system's Mininet.  Mininet 2.3 imports
    ``distutils``, gone in Python 3.12: setuptools brings it back when installed.
    Raises ``MininetUnavailable``.
    """
    errors = []
    for attempt in (_mininet_from_environment, _mininet_from_debian):
        try:
            return attempt()
        except ImportError as exc:
            _forget("mininet")
            if "distutils" in str(exc) and _have("setuptools"):
                try:
                    return attempt()
                except ImportError as again:
                    _forget("mininet")
                    exc = again
            errors.append(str(exc))
    raise MininetUnavailable("the Python package mininet is not importable (%s); %s"
                             % ("; ".join(errors), SETUP_HINT))


def _have(module):
    try:
        importlib.import_module(module)
        return True
    except ImportError:
        return False


def _mininet_from_environment():
    importlib.import_module("mininet.net")
    return sys.modules["mininet"]


def _mininet_from_debian():
    for base in DEBIAN_PYTHON_DIRS:
        if not os.path.isfile(os.path.join(base, "mininet", "net.py")):
            continue
        spec = importlib.machinery.PathFinder.find_spec("mininet", [base])
        if spec is None:
            continue
        module = importlib.util.module_from_spec(spec)
        sys.modules["mininet"] = module
        spec.loader.exec_module(module)
        importlib.import_module("mininet.net")
        return module
    raise ImportError("no Debian mininet package in %s" % ", ".join(DEBIAN_PYTHON_DIRS))


def _forget(package):
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]


_UNAVAILABLE = []


def mininet_unavailable():
    """None when Mininet can run here, else why not (one line, with what to do)."""
    if _UNAVAILABLE:
        return _UNAVAILABLE[0]
    reason = _probe()
    _UNAVAILABLE.append(reason)
    return reason


def _probe():
    if not sys.platform.startswith("linux"):
        return "Mininet needs Linux network namespaces (this is %s)" % sys.platform
    if os.geteuid() != 0:
        return "Mininet needs root (namespaces, veths); run as root (CI does)"
    for tool, package in (("mnexec", "mininet"), ("ip", "iproute2"), ("ifconfig", "net-tools")):
        if shutil.which(tool) is None:
            return "%s not found (Debian package %s); %s" % (tool, package, SETUP_HINT)
    try:
        import_mininet()
    except MininetUnavailable as exc:
        return str(exc)
    try:
        out = subprocess.run(["mnexec", "-cdn", "ip", "-o", "link", "show", "lo"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=10,
                             text=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return "mnexec cannot make a network namespace here: %s" % exc
    if out.returncode != 0:
        return "mnexec cannot make a network namespace here: %s" % out.stdout.strip()
    return None


# ---------------------------------------------------------------------------- processes


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


def _raise_nofile(want=16384):
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


# ---------------------------------------------------------------------------- addresses


class LinkAddress:
    """One link laid out: the /31 and MAC and interface name of each end."""

    __slots__ = ("index", "a", "a_port", "b", "b_port", "ip_a", "ip_b", "mac_a", "mac_b",
                 "intf_a", "intf_b")

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}


def interface_names(topo):
    """``names[nid][port]``: ``<node>-eth<port>``, or ``n<id>-eth<port>`` when the node's
    name is too long for Linux (15 characters)."""
    out = []
    for nid, node in enumerate(topo.nodes):
        stem = node.name
        longest = len("%s-eth%d" % (stem, max(len(node.ports) - 1, 0)))
        if longest > IFNAME_MAX or not stem.replace("_", "").isalnum():
            stem = "n%d" % nid
        out.append(["%s-eth%d" % (stem, p) for p in range(len(node.ports))])
    return out


def address_plan(topo, ip_base=DEFAULT_IP_BASE):
    """One /31 per link from ``ip_base``: link i has base + 2i (end a) and base + 2i + 1
    (end b); MACs 02:47:xx:xx:xx:xx from the same number.  Returns a list by link index."""
    try:
        net = ipaddress.IPv4Network(ip_base, strict=False)
    except ValueError as exc:
        raise TopologyError("ip base %r: %s" % (ip_base, exc)) from None
    need = 2 * len(topo.links)
    if need > net.num_addresses:
        raise TopologyError("ip base %s has %d addresses; %d links need %d"
                            % (net, net.num_addresses, len(topo.links), need))
    base = int(net.network_address)
    names = interface_names(topo)
    plan = []
    for link in topo.links:
        la = LinkAddress()
        la.index, la.a, la.a_port, la.b, la.b_port = (link.index, link.a, link.a_port,
                                                      link.b, link.b_port)
        n = 2 * link.index
        la.ip_a = str(ipaddress.IPv4Address(base + n))
        la.ip_b = str(ipaddress.IPv4Address(base + n + 1))
        la.mac_a, la.mac_b = _mac(n), _mac(n + 1)
        la.intf_a = names[link.a][link.a_port]
        la.intf_b = names[link.b][link.b_port]
        plan.append(la)
    return plan


def _mac(n):
    return "02:47:%02x:%02x:%02x:%02x" % ((n >> 24) & 255, (n >> 16) & 255, (n >> 8) & 255,
                                          n & 255)


# ---------------------------------------------------------------------------- the network


class MininetFabric:
    """A topology as a Mininet network; ``start()`` builds it, ``stop()`` removes it all.

    ``nodes[nid]`` is the Mininet Host of node ``nid`` (named as in the topology);
    ``port_addresses(nid)`` its (interface, own ip, peer ip) per local port;
    ``popen(nid, argv, ...)`` starts a program in the node's namespace.
    """

    def __init__(self, topo, ip_base=DEFAULT_IP_BASE, buffer_bytes=SOCKET_BUFFER_BYTES,
                 static_arp=True, disable_ipv6=True, state_path=None):
        self.topo = topo
        self.ip_base = ip_base
        self.plan = address_plan(topo, ip_base)
        self.buffer_bytes = buffer_bytes
        self.static_arp = static_arp
        self.disable_ipv6 = disable_ipv6
        self.state_path = state_path       # JSON: pids, namespaces, interfaces (for checks)
        self.net = None
        self.nodes = []
        self.procs = []                    # (nid, Popen) of programs started in nodes
        self.shell_pids = []
        self.namespaces = []               # net:[inode] of every node
        self.starts = {}                   # pid -> start time (pid_start) of our processes
        self.stopped_ticks = None          # boot_ticks() when stop() began
        self._fds = []                     # Mininet's class-level fd -> node maps
        self._restore = {}                 # sysctl -> value before start()
        self.setup_s = None
        self.teardown_s = None
        self.errors = []                   # what went wrong during stop() (still cleaned)
        self.started = False
        self.stopped = False

    # -- addresses

    def port_addresses(self, nid):
        """[(interface, own ip, peer ip)] in local port order."""
        out = []
        node = self.topo.nodes[nid]
        for port, lidx in enumerate(node.ports):
            la = self.plan[lidx]
            if la.a == nid and la.a_port == port:
                out.append((la.intf_a, la.ip_a, la.ip_b))
            else:
                out.append((la.intf_b, la.ip_b, la.ip_a))
        return out

    def peer_ip(self, nid, port):
        return self.port_addresses(nid)[port][2]

    # -- life

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        """Build the network.  On any failure (or interruption) it is removed again."""
        reason = mininet_unavailable()
        if reason:
            raise MininetUnavailable(reason)
        if self.started:
            raise RuntimeError("MininetFabric.start: already started")
        self.started = True
        t0 = time.perf_counter()
        try:
            self._build()
        except BaseException:
            self.stop()
            raise
        self.setup_s = time.perf_counter() - t0
        self._write_state()
        return self

    def _build(self):
        import_mininet()
        from mininet.link import Link
        from mininet.net import Mininet
        from mininet.node import Host
        _raise_nofile()
        self._raise_buffers()
        # Mininet() would call fixLimits(), which rewrites machine-wide sysctls (TCP
        # buffers, backlog, ARP cache) for good; what the agents need is raised above.
        Mininet.inited = True
        cls = _node_class(Host, self.disable_ipv6)
        self.net = net = Mininet(topo=None, build=False, controller=None, host=cls,
                                 link=_link_class(Link),
                                 ipBase=self.ip_base, autoSetMacs=False, autoStaticArp=False)
        topo = self.topo
        for node in topo.nodes:
            # ip=None: no address of Mininet's own plan; waitExited=False: stop() reaps
            h = net.addHost(node.name, ip=None, waitExited=False)
            self.nodes.append(h)
            self.shell_pids.append(h.pid)
            self.starts[h.pid] = pid_start(h.pid)
            self.namespaces.append(netns_of(h.pid))
            self._fds.append((h.stdout.fileno(), h.stdin.fileno()))
        for la in self.plan:
            net.addLink(self.nodes[la.a], self.nodes[la.b], port1=la.a_port, port2=la.b_port,
                        intfName1=la.intf_a, intfName2=la.intf_b, addr1=la.mac_a,
                        addr2=la.mac_b)
        net.build()
        # Addresses with ip(8), one command line per node.  Not Mininet's ifconfig: it
        # gives a /31 the classful broadcast address (x.y.z.255 for 198.18.z.0/31's
        # neighbours), and a peer at .255 then is unreachable.
        for nid, h in enumerate(self.nodes):
            cmds = []
            for port, (intf, ip, peer) in enumerate(self.port_addresses(nid)):
                cmds.append("ip addr replace %s/31 dev %s && ip link set dev %s up"
                            % (ip, intf, intf))
                if self.static_arp:
                    la = self.plan[topo.nodes[nid].ports[port]]
                    mac = la.mac_b if la.intf_a == intf else la.mac_a
                    cmds.append("ip neigh replace %s lladdr %s dev %s nud permanent"
                                % (peer, mac, intf))
                itf = h.nameToIntf.get(intf)
                if itf is not None:
                    itf.ip, itf.prefixLen = ip, 31
            for line in _command_lines(cmds):
                out = h.cmd(line)
                if out.strip():
                    raise RuntimeError("node %s: addresses: %s" % (h.name, out.strip()))

    def _raise_buffers(self):
        for name in BUFFER_SYSCTLS:
            try:
                old = int(read_sysctl(name))
                if old < self.buffer_bytes:
                    write_sysctl(name, self.buffer_bytes)
                    self._restore[name] = old
            except (OSError, ValueError) as exc:
                self.errors.append("sysctl %s: %s" % (name, exc))

    def _restore_buffers(self):
        for name, old in self._restore.items():
            try:
                if int(read_sysctl(name)) == self.buffer_bytes:   # nobody changed it since
                    write_sysctl(name, old)
            except (OSError, ValueError) as exc:
                self.errors.append("sysctl %s: %s" % (name, exc))
        self._restore = {}

    def popen(self, nid, argv, log_path=None, env=None, cwd=None, pdeathsig=signal.SIGTERM):
        """Start ``argv`` in node ``nid``'s namespace (``mnexec -a``); output to
        ``log_path`` (else discarded).  The process gets ``pdeathsig`` when we die."""
        if not self.started or self.stopped:
            raise RuntimeError("MininetFabric.popen: the network is not up")
        pid = self.nodes[nid].pid
        log = open(log_path, "ab") if log_path else subprocess.DEVNULL
        try:
            proc = subprocess.Popen(["mnexec", "-a", str(pid)] + list(argv), stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, cwd=cwd, close_fds=True,
                                    preexec_fn=die_with_parent(pdeathsig))
        finally:
            if log is not subprocess.DEVNULL:
                log.close()
        self.procs.append((nid, proc))
        self.starts[proc.pid] = pid_start(proc.pid)
        self._write_state()
        return proc

    def terminate_programs(self, procs=None, grace_s=STOP_GRACE_S):
        """SIGTERM the given programs (default: all started), SIGKILL what is left after
        ``grace_s``; waits for (reaps) every one.  Returns how many needed SIGKILL."""
        procs = [p for _, p in self.procs] if procs is None else list(procs)
        for p in procs:
            if p.poll() is None:
                with contextlib.suppress(OSError):
                    p.send_signal(signal.SIGTERM)
        end = time.monotonic() + grace_s
        killed = 0
        for p in procs:
            try:
                p.wait(max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                killed += 1
                with contextlib.suppress(OSError):
                    p.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(5.0)
        return killed

    def stop(self):
        """Remove everything (idempotent): programs, links, shells, ptys, sysctls."""
        if self.stopped:
            return
        self.stopped = True
        self.stopped_ticks = boot_ticks()
        with signals_blocked():
            t0 = time.perf_counter()
            try:
                self.terminate_programs()
            except Exception as exc:            # keep cleaning whatever happens
                self.errors.append("programs: %r" % (exc,))
            if self.net is not None:
                try:
                    self.net.stop()
                except Exception as exc:
                    self.errors.append("net.stop: %r" % (exc,))
            self._reap_shells()
            self._sweep_namespaces()
            self._forget_fds()
            self._restore_buffers()
            self.teardown_s = time.perf_counter() - t0
            self._write_state()

    def _reap_shells(self):
        shells = [h.shell for h in self.nodes if getattr(h, "shell", None) is not None]
        # net.stop() hung up every shell and dropped its Popen (h.shell = None); the
        # Popen objects are gone then, so wait by pid as well.
        for h in self.nodes:
            if getattr(h, "shell", None) is None:
                continue
            with contextlib.suppress(OSError):
                os.killpg(h.shell.pid, signal.SIGHUP)
        end = time.monotonic() + SHELL_GRACE_S
        for pid in self.shell_pids:
            while time.monotonic() < end and _alive_child(pid):
                time.sleep(0.01)
            if _alive_child(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, 0)
        for sh in shells:
            with contextlib.suppress(Exception):
                sh.wait(0)
        for h in self.nodes:               # ptys: Node.cleanup closed them after net.stop()
            if getattr(h, "shell", None) is not None:
                with contextlib.suppress(OSError, ValueError):
                    h.stdin.close()
                with contextlib.suppress(OSError):
                    os.close(h.slave)
                h.shell = None

    def _sweep_namespaces(self):
        """SIGKILL our children still in one of our namespaces: a program whose start a
        signal interrupted before we had its pid.  Only our own children, by pid (a
        namespace's number is reused once it is gone, maybe by another network)."""
        me = os.getpid()
        for _ in range(3):
            pids = [p for p in namespace_holders(self.namespaces)
                    if p != me and _ppid(p) == me and netns_of(p) in set(self.namespaces)]
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            end = time.monotonic() + 2.0
            while time.monotonic() < end and any(_alive_child(p) for p in pids):
                time.sleep(0.01)
            self.errors.append("killed %d process(es) left in the namespaces: %s"
                               % (len(pids), pids))

    def _forget_fds(self):
        try:
            from mininet.node import Node
        except ImportError:
            return
        for out_fd, in_fd in self._fds:
            node = Node.outToNode.get(out_fd)
            if node is not None and node in self.nodes:
                del Node.outToNode[out_fd]
            node = Node.inToNode.get(in_fd)
            if node is not None and node in self.nodes:
                del Node.inToNode[in_fd]
        self._fds = []

    # -- checks

    def state(self):
        """What this network made (for ``left_behind`` in another process)."""
        return {"shell_pids": self.shell_pids, "program_pids": [p.pid for _, p in self.procs],
                "starts": {str(pid): t for pid, t in self.starts.items()},
                "stopped_ticks": self.stopped_ticks,
                "namespaces": [ns for ns in self.namespaces if ns],
                "interfaces": sorted({la.intf_a for la in self.plan}
                                     | {la.intf_b for la in self.plan}),
                "started": self.started, "stopped": self.stopped,
                "setup_s": self.setup_s, "teardown_s": self.teardown_s}

    def _write_state(self):
        if self.state_path:
            tmp = self.state_path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(self.state(), f, indent=1)
            os.replace(tmp, self.state_path)

    def left_behind(self):
        return left_behind(self.state())


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


def _command_lines(cmds, limit=2000):
    """``cmds`` joined with "; " into lines under ``limit`` characters: a node's shell
    reads from a pty in canonical mode, which cuts a line at 4,095 characters."""
    line = ""
    for c in cmds:
        if line and len(line) + 2 + len(c) > limit:
            yield line
            line = ""
        line = c if not line else line + "; " + c
    if line:
        yield line


def _ppid(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _alive_child(pid):
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


def _link_class(link_cls):
    """A veth Link that ``net.stop()`` does not delete one by one.

    Both ends of every veth live in node namespaces, so the kernel removes them with the
    namespaces when the shells end -- in one batch, where ``ip link del`` costs an RCU
    grace period per link (~24 ms: 1.2 s of the k=4 Fat-Tree's 1.2 s tear-down).
    ``left_behind`` checks that nothing remains.
    """

    class FabricLink(link_cls):
        def delete(self):
            for intf in (self.intf1, self.intf2):
                if intf is not None:
                    intf.node.delIntf(intf)
            self.intf1 = self.intf2 = None

    return FabricLink


def _node_class(host_cls, disable_ipv6):
    """A Mininet Host whose children die with us, born without IPv6."""

    class FabricNode(host_cls):
        def _popen(self, cmd, **params):
            params.setdefault("preexec_fn", die_with_parent(signal.SIGKILL))
            return host_cls._popen(self, cmd, **params)

        def startShell(self, *args, **kwargs):
            host_cls.startShell(self, *args, **kwargs)
            if disable_ipv6:
                self.cmd("sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 "
                         "net.ipv6.conf.default.disable_ipv6=1")

    return FabricNode


# ---------------------------------------------------------------------------- command line


def main(argv=None):
    """Build a topology in Mininet, ping across every link, tear it down; print times."""
    import argparse

    from topologies.registry import add_topology_options, build_topology
    p = argparse.ArgumentParser(prog="python -m topologies.mininet_builder",
                                description=main.__doc__)
    add_topology_options(p)
    p.set_defaults(k=4)
    p.add_argument("--ip-base", default=DEFAULT_IP_BASE)
    p.add_argument("--no-ping", action="store_true", help="build and tear down only")
    p.add_argument("--check", metavar="STATE.json",
                   help="only report what a network's state file says is left behind")
    args = p.parse_args(argv)
    if args.check:
        with open(args.check) as f:
            left = left_behind(json.load(f))
        print(json.dumps(left or {"left_behind": "nothing"}))
        return 1 if left else 0
    reason = mininet_unavailable()
    if reason:
        print("mininet: %s" % reason, file=sys.stderr)
        return 2
    topo = build_topology(args)
    fab = MininetFabric(topo, args.ip_base)
    failed = 0
    with guard(600):
        try:
            fab.start()
            print("built %d nodes, %d links in %.2f s"
                  % (len(topo.nodes), len(topo.links), fab.setup_s))
            if not args.no_ping:
                t0 = time.perf_counter()
                for la in fab.plan:
                    out = fab.nodes[la.a].cmd("ping -c1 -W1 -q %s >/dev/null; echo $?"
                                              % la.ip_b)
                    if out.strip().splitlines()[-1:] != ["0"]:
                        failed += 1
                        print("link %d %s -> %s: no answer" % (la.index, la.intf_a, la.intf_b))
                print("pinged %d links in %.2f s: %d failed"
                      % (len(fab.plan), time.perf_counter() - t0, failed))
        finally:
            fab.stop()
    left = fab.left_behind()
    print("torn down in %.2f s; left behind: %s" % (fab.teardown_s, left or "nothing"))
    return 1 if failed or left or fab.errors else 0


if __name__ == "__main__":
    sys.exit(main())
