"""A node of the UDP runtimes built from its configuration (``gse.runtimes.udp.config``).

``build_node(conf, ...)`` is what ``gse agent`` (one node per process), the in-process
runtime (``gse.runtimes.udp.network``) and the Mininet agents call: the host driver and
its agent, a switch driver with its switch (and PFC), or for fabric mode
(``gse-fabric``) a leaf driving the ``FabricLeaf`` scheduler and spines following the
path the leaves chose; then every port with its emulated link.  With a ``secure``
section the node claims the run's epoch for itself (a configuration runs once) and gets
its channels: a host's end-to-end ``Tss``, and where PFC frames cross its links a
``LinkAuth``.  ``open_lane(driver, conf, sock)`` gives a node with a ``pfc_bind`` its PFC
lane (the endpoint of ``sock``, bound there by the caller).
"""

import random

from gse.protocols import host_factory
from gse.runtimes.udp.fabric import LeafDriver
from gse.runtimes.udp.io import Endpoint
from gse.runtimes.udp.link import EmulatedPort, HostNic
from gse.runtimes.udp.node import HostDriver, SwitchDriver
from gse.wire import wire_profile
from gse.wire.linkrate import wire_time_ps
from switchmodel.fabric import FabricConfig, FabricLeaf, FabricSpine
from switchmodel.fabric_plan import extend_row
from switchmodel.pfc import PfcConfig, PfcState
from switchmodel.queue import OutputQueue, QueueConfig
from switchmodel.switch import Switch

__all__ = ["build_node", "open_lane"]


def open_lane(driver, conf, sock):
    """The PFC lane of ``driver`` on ``sock`` (bound to ``conf["pfc_bind"]``): an
    ``Endpoint`` marked ``lane`` that its reactor reads first, not yet started (start it
    with the node's datagram handler).  Its datagrams come from the neighbours' data
    sockets, so the node's ``port_of`` knows their ports."""
    ep = Endpoint(sock, conf["name"] + "/pfc", getattr(driver.endpoint, "recv_size", 65536))
    ep.lane = True
    for port in driver.ports:
        ep.know(port.peer_addr)
    driver.lane = ep
    return ep


def build_node(conf, sched, endpoint, protocol_config, on_delivered=None, on_sent=None):
    """The driver of one node from its configuration (``gse.runtimes.udp.config`` format).

    ``protocol_config`` is the host agent's config object (GseConfig, RoceConfig,
    FabricConfig), already built from ``conf["agent"]``; switches ignore it (a fabric
    leaf builds its own from ``conf["fabric"]["params"]``).
    """
    nid = conf["node"]
    seed = conf["seed"]
    qconf = QueueConfig(**conf["queue"])
    slack = conf["run"]["slack_ps"]
    role = conf["role"]
    fabric = conf.get("fabric")
    wire = conf.get("wire", "gse")
    schedule = _session(conf)
    if role == "host":
        link = conf["ports"][0]
        make_host = host_factory(conf["agent"]["protocol"], protocol_config)
        agent = make_host(nid, random.Random("%s/host/%d" % (seed, nid)), link["gbps"])
        driver = HostDriver(nid, conf["name"], sched, endpoint, agent, on_delivered, on_sent)
        if schedule is not None:
            from gse.runtimes.udp.secure import Tss
            driver.tss = Tss(schedule, nid, conf["hosts"], wire)
    elif fabric:
        driver = _fabric_switch(conf, sched, endpoint, fabric)
    else:
        switch = Switch(nid, conf["name"], [tuple(h) for h in conf["next_hops"]],
                        conf["salt"], conf["forwarding"])
        pfc = None
        if conf.get("pfc"):
            pfc = PfcState(PfcConfig(**conf["pfc"]), len(conf["ports"]))
        driver = SwitchDriver(nid, conf["name"], conf["kind"], sched, endpoint, switch,
                              conf.get("switch_latency_ps", 0), pfc)
    driver.max_datagram = conf["max_datagram"]
    if schedule is not None and (role != "host" or conf["ports"][0].get("pfc_quanta", 0)):
        from gse.runtimes.udp.secure import LinkAuth     # PFC frames cross its links
        driver.link_auth = LinkAuth(schedule, nid, [pc["peer"] for pc in conf["ports"]])
    codec = wire_profile(wire) if wire != "gse" else None
    driver.codec = codec
    for pc in conf["ports"]:
        pidx = pc["port"]
        qrng = random.Random("%s/queue/%d/%d" % (seed, nid, pidx))
        addr = (pc["peer_addr"][0], pc["peer_addr"][1])
        cls = HostNic if role == "host" else EmulatedPort
        port = cls(sched, endpoint, addr, OutputQueue(qconf, qrng), pc["gbps"],
                   pc["delay_ps"], slack, nid, pidx, conf["kind"], pc["faces_host"])
        port.peer = pc["peer"]
        port.peer_port = pc["peer_port"]
        port.owner = driver
        port.codec = codec
        port.set_faults(pc.get("loss", 0.0), pc.get("corrupt", 0.0),
                        random.Random("%s/wire/%d/%d" % (seed, nid, pidx)))
        port.pfc_limit = pc.get("pfc_quanta", 0)
        lane = pc.get("peer_pfc_addr")
        if lane is not None:            # the PFC frames this port makes go to the peer's lane
            port.lane_addr = (lane[0], lane[1])
        if role == "host":
            port.agent = driver.agent
            port.catchup = wire_time_ps(conf["mtu_wire_bytes"], port.mbps)
            port.want = False
            driver.nic = port
            if driver.tss is not None:
                port.seal = driver.tss.seal
        else:
            if isinstance(driver, SwitchDriver):
                port.pfc = driver.pfc
            if driver.link_auth is not None:
                port.seal = driver.link_auth.seal   # the PFC frames this switch makes
        if addr in driver.port_of:
            raise ValueError("node %r: ports %d and %d both lead to %s:%d"
                             % (conf["name"], driver.port_of[addr], pidx, addr[0], addr[1]))
        driver.port_of[addr] = pidx
        driver.ports.append(port)
        know = getattr(endpoint, "know", None)
        if know is not None:
            know(addr)
    return driver


def _session(conf):
    """The node's ``KeySchedule`` under ``--secure`` (after claiming the run's epoch for
    this node: a second start of the same configuration is refused), or None."""
    secure = conf.get("secure")
    if not secure:
        return None
    from gse.runtimes.udp.secure_keys import EpochStore, schedule_from_config
    schedule = schedule_from_config(secure)
    EpochStore(secure["key_file"]).claim(conf["node"], conf["name"], secure["epoch"])
    return schedule


def _fabric_switch(conf, sched, endpoint, fabric):
    """A fabric-mode switch: a leaf (``FabricLeaf`` behind a ``LeafDriver``) or a spine
    (a ``SwitchDriver`` whose switch follows the leaf's path with ``paths="leaf"``).  Both
    route leaf ids as well as hosts (``fabric["leaf_routes"]``)."""
    nid = conf["node"]
    cfg = FabricConfig()
    for name, value in fabric["params"].items():
        cfg.set(name, value)
    cfg.validate()
    rows = extend_row(conf["next_hops"], fabric["nodes"],
                      {leaf: tuple(ports) for leaf, ports in fabric["leaf_routes"]})
    latency = conf.get("switch_latency_ps", 0)
    if fabric["role"] == "spine":
        if cfg.paths == "leaf":
            switch = FabricSpine(nid, conf["name"], rows, conf["salt"], "spray")
        else:
            switch = Switch(nid, conf["name"], rows, conf["salt"], conf["forwarding"])
        return SwitchDriver(nid, conf["name"], conf["kind"], sched, endpoint, switch, latency,
                            None)
    switch = Switch(nid, conf["name"], rows, conf["salt"], conf["forwarding"])
    host_ports, host_gbps = {}, {}
    for pc in conf["ports"]:
        if pc["faces_host"]:
            host_ports[pc["peer"]] = pc["port"]
            host_gbps[pc["peer"]] = pc["gbps"]
    agent = FabricLeaf(nid, cfg, switch, host_ports, host_gbps, fabric["leaf_of"],
                       fabric.get("spine_fanout", 1))
    return LeafDriver(nid, conf["name"], conf["kind"], sched, endpoint, switch, agent, latency)
