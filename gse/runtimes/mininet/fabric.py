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
``python -m gse.runtimes.mininet --k 4`` builds a Fat-Tree, pings every link, and
tears it down, printing the times.  See docs/mininet.md.
"""

import contextlib
import json
import os
import signal
import subprocess
import time

from gse.runtimes.mininet.addressing import DEFAULT_IP_BASE, address_plan
from gse.runtimes.mininet.environment import MininetUnavailable, import_mininet, mininet_unavailable
from gse.runtimes.mininet.system import (alive_child, boot_ticks, die_with_parent, left_behind,
                                         namespace_holders, netns_of, parent_pid, pid_start,
                                         raise_nofile_limit, read_sysctl, signals_blocked,
                                         write_sysctl)

SOCKET_BUFFER_BYTES = 8 * 1024 * 1024
BUFFER_SYSCTLS = ("net.core.rmem_max", "net.core.wmem_max")
STOP_GRACE_S = 3.0                      # SIGTERM -> SIGKILL for programs in the nodes
SHELL_GRACE_S = 2.0


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
        raise_nofile_limit()
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

    def set_link(self, li, up):
        """Take link ``li`` down (both ends of its veth pair: ``ip link set ... down``) or
        bring it back up, with its addresses and static neighbours.  Returns the error
        text of a node whose command failed, or ''."""
        la = self.plan[li]
        errors = []
        for nid, intf, ip, peer, mac in ((la.a, la.intf_a, la.ip_a, la.ip_b, la.mac_b),
                                         (la.b, la.intf_b, la.ip_b, la.ip_a, la.mac_a)):
            if up:
                line = "ip link set dev %s up && ip addr replace %s/31 dev %s" % (intf, ip, intf)
                if self.static_arp:
                    line += " && ip neigh replace %s lladdr %s dev %s nud permanent" % (
                        peer, mac, intf)
            else:
                line = "ip link set dev %s down" % intf
            out = self.nodes[nid].cmd(line).strip()
            if out:
                errors.append("%s: %s" % (self.nodes[nid].name, out))
        return "; ".join(errors)

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
            while time.monotonic() < end and alive_child(pid):
                time.sleep(0.01)
            if alive_child(pid):
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
                    if p != me and parent_pid(p) == me and netns_of(p) in set(self.namespaces)]
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            end = time.monotonic() + 2.0
            while time.monotonic() < end and any(alive_child(p) for p in pids):
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

    def left_behind(self, settle_s=3.0):
        """What of the network remains once its teardown has settled.  An agent killed by
        its parent's death signal leaves its namespace only when the kernel has run its
        exit, which on a loaded machine can come a moment after ``net.stop()`` returns: so
        what remains is asked again for up to ``settle_s`` seconds before it is reported."""
        end = time.monotonic() + settle_s
        while True:
            out = left_behind(self.state())
            if not out or time.monotonic() >= end:
                return out
            time.sleep(0.05)



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
