"""When a UDP switch forwards through the compiled data plane, and how it is put in place.

``gse.runtimes.udp.switchplane.SwitchPlane`` (compiled build) runs a switch's per-packet
path in C: the same decisions and counters as the Python objects, without a Python
object per datagram (docs/udp-runtime.md, "The switch data plane").  It covers the plain case
that carries a run's traffic, and a switch outside it keeps the Python path whole:

* the compiled build, Linux, an IPv4 endpoint of the runtime's own ``Endpoint``;
* a ``SwitchDriver`` whose switch is a plain ``Switch`` or a fabric-mode spine
  (``FabricSpine``: ``--protocol gse-fabric`` with ``paths="leaf"``, byte 1 of the
  entropy naming the uplink; its queues' step ECN marking of the fabric's DATA above
  ``ecn_bytes`` is the ``OutputQueue`` model's own).  Fabric-mode leaves keep their
  scheduler and their packet path in Python (``LeafDriver``);
* no switch latency, the GSE wire profile (not ``--wire uet``), no PFC frames
  authenticated per link (``--secure`` with PFC; secured datagrams are otherwise
  forwarded, their trims and marks through ``reframe``); PFC is in (RoCE: ``PfcState``
  counts in C calls,
  the PAUSE and RESUME frames the switch makes join its C queues, a PAUSE received
  holds the C queue through the Python port's ``queue.paused``);
* route updates are in (``gse.runtimes.udp.faults.RouteUpdates``: the plane reads the
  switch's own next-hop row at every datagram, so a rewritten row routes the next one);
  a port with scheduled failures (``faults``, ``trigger_packets``: the failing link
  itself, whose ``LinkFault`` acts on the Python queues and wire) keeps its switch on the
  Python path, and so does packet capture (it taps the Python ports' sends).  Emulated
  loss and corruption are in (the port's own generator, draw for draw).

``GSE_DATAPLANE=0`` keeps every switch on the Python path (to compare the two).  The
pure build has no data plane: ``attach`` does nothing there.
"""

import os

from gse.runtimes.udp import hostplane, switchplane
from gse.runtimes.udp.io import Endpoint
from gse.runtimes.udp.link import EmulatedPort, HostNic
from gse.runtimes.udp.node import HostDriver, SwitchDriver
from switchmodel.fabric import FabricSpine
from switchmodel.switch import Switch

ENV = "GSE_DATAPLANE"
AVAILABLE = switchplane.AVAILABLE
SWITCHES = (Switch, FabricSpine)    # the switch classes whose route the plane follows


def enabled():
    """The compiled data plane is built and not turned off by ``GSE_DATAPLANE=0``."""
    return AVAILABLE and os.environ.get(ENV, "").strip().lower() not in ("0", "no", "false",
                                                                         "off")


def conf_allows(conf):
    """Does a node configuration (``gse.runtimes.udp.config``) leave its switch in the
    case the data plane covers (a fabric-mode spine, route updates included)?  (The
    driver is checked again by ``why_not``.)"""
    fabric = conf.get("fabric")
    if conf.get("role") != "switch" or (fabric and fabric.get("role") != "spine"):
        return False
    if conf.get("switch_latency_ps", 0):
        return False
    return _plain_wire_and_ports(conf)


def _plain_wire_and_ports(conf):
    """What switches and hosts share of the plain case: the GSE wire profile, no capture,
    no ``--secure``, no failure scheduled on any of the node's ports."""
    if conf.get("wire", "gse") != "gse" or conf.get("pcap") or conf.get("secure"):
        return False
    return not any(pc.get("faults") or pc.get("trigger_packets") for pc in conf["ports"])


def why_not(drv):
    """Why ``drv`` must stay on the Python path, or None if the data plane may take it."""
    if not enabled():
        return "no compiled data plane" if not AVAILABLE else "%s=0" % ENV
    if type(drv) is not SwitchDriver or type(drv.switch) not in SWITCHES:
        return "not a plain switch or fabric-mode spine"
    ep = drv.endpoint
    if type(ep) is not Endpoint or not ep.c4 or ep.closed:
        return "not an IPv4 runtime endpoint"
    if drv.latency or drv.codec is not None or drv.link_auth is not None:
        return "switch latency, another wire profile or PFC authentication"
    for port in drv.ports:
        if (type(port) is not EmulatedPort or port.fault is not None
                or port.seal is not None or port.codec is not None
                or port.queue.data_bytes or port.queue.control_bytes or port.wire
                or ":" in str(port.peer_addr[0])):
            return "a port with faults, another codec or packets held"
    return None


def attach(drv, on_receive=None):
    """Put ``drv`` on the compiled data plane if it may (``why_not``): its endpoint's
    readiness then calls the plane's ``drain`` instead of a handler per datagram.
    ``on_receive()`` is called once per drain (a liveness mark).  Returns the plane or
    None."""
    if why_not(drv) is not None:
        return None
    plane = switchplane.SwitchPlane(drv)
    plane.on_receive = on_receive
    drv.endpoint.drain = plane.drain
    drv.plane = plane
    return plane


def counters(drv):
    """``{"fast", "slow"}``, datagrams by path, if ``drv`` forwards on the data plane, else
    None: what a run's node counters carry as ``dataplane`` (the summary counts those
    switches, ``udp.dataplane_switches``)."""
    plane = getattr(drv, "plane", None) if type(drv) is SwitchDriver else None
    return None if plane is None else {"fast": plane.fast, "slow": plane.slow}


def detach(drv):
    """Back to the Python path (what the plane still holds is dropped: the run is over)."""
    plane = getattr(drv, "plane", None)
    if plane is None:
        return
    drv.plane = None
    if drv.endpoint.drain == plane.drain:
        drv.endpoint.drain = None
    for port in drv.ports:
        port.restart_fn = None
    plane.close()


# -- hosts (issue 27, part 2) ----------------------------------------------------------
#
# ``gse.runtimes.udp.hostplane.HostPlane`` (compiled build): a host's datagrams received
# into C buffers and decoded straight into the packet its agent is handed, its NIC's
# packets encoded straight into a C send batch; the agent, the NIC's schedule and the
# counters stay the Python objects'.  The same plain case as a switch's: the runtime's
# IPv4 endpoint, the GSE wire profile, no ``--secure`` (end-to-end sealing is per
# packet, in Python), no capture, no scheduled failures on the host's link.
# ``GSE_DATAPLANE=0`` keeps hosts on the Python path too.

def conf_allows_host(conf):
    """Does a node configuration leave its host in the plain case (``why_not_host`` checks
    the driver again)?  A host of kernel forwarding (``kernel_host``) too: its plane
    then sends each datagram to its destination host from the socket of its entropy
    (``HostPlane.kernel``)."""
    return conf.get("role") == "host" and _plain_wire_and_ports(conf)


def why_not_host(drv):
    """Why host ``drv`` must stay on the Python path, or None if its packet path may be C."""
    if not enabled():
        return "no compiled packet path" if not hostplane.AVAILABLE else "%s=0" % ENV
    if type(drv) is not HostDriver or type(drv.nic) is not HostNic:
        return "not a plain host"
    ep = drv.endpoint
    if type(ep) is not Endpoint or not ep.c4 or ep.closed or ep.drain is not None:
        return "not an IPv4 runtime endpoint"
    if drv.codec is not None or drv.tss is not None or drv.link_auth is not None:
        return "another wire profile or authenticated packets"
    nic = drv.nic
    if (nic.endpoint is not ep or nic.fault is not None or nic.seal is not None
            or nic.codec is not None or nic.wire or nic.plane is not None
            or ":" in str(nic.peer_addr[0])):
        return "a link with faults, another codec or packets held"
    return None


def attach_host(drv, on_receive=None, kernel=None):
    """Put host ``drv`` on the compiled packet path if it may (``why_not_host``): its
    endpoint's readiness calls the plane's ``drain``, its NIC sends through the plane.
    ``on_receive()`` is called once per drain.  ``kernel``: (sender, hosts, first port,
    count) of a host of kernel forwarding (``kernel_host.plane_args``).  Returns the
    plane or None."""
    if why_not_host(drv) is not None:
        return None
    plane = hostplane.HostPlane(drv)
    if kernel is not None:
        plane.kernel(*kernel)
    plane.on_receive = on_receive
    nic = drv.nic
    nic.plane = plane
    nic.ep = None                       # every send of the NIC through the plane, in order
    nic.send = plane.send_to
    drv.endpoint.drain = plane.drain
    return plane


def host_counters(drv):
    """``{"fast", "slow", "encoded", "kernel_sent"}`` if host ``drv`` runs on the compiled
    packet path, else None: datagrams received by path, packets encoded in C, and (kernel
    forwarding) datagrams the plane sent from the send sockets.  A run's node counters
    carry it as ``hostplane`` (the summary counts such hosts, ``udp.hostplane_hosts``)."""
    nic = getattr(drv, "nic", None) if type(drv) is HostDriver else None
    plane = getattr(nic, "plane", None)
    if plane is None:
        return None
    return {"fast": plane.fast, "slow": plane.slow, "encoded": plane.encoded,
            "kernel_sent": plane.kernel_sent}


def detach_host(drv):
    """Back to the Python path (what the plane holds is sent first; what waits on the
    emulated wire in its buffers is dropped: the run is over)."""
    nic = drv.nic
    plane = getattr(nic, "plane", None)
    if plane is None:
        return
    if nic.wire:
        kept = [item for item in nic.wire if item[1] is not None]
        nic.wire.clear()
        nic.wire.extend(kept)
    if drv.endpoint.drain == plane.drain:
        drv.endpoint.drain = None
    nic.plane = None
    sender = plane.ksender              # kernel forwarding: back to its KernelSender
    nic.ep = drv.endpoint if sender is None else None
    nic.send = drv.endpoint.send if sender is None else sender.send
    plane.close()
