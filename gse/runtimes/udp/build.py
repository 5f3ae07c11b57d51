"""A node of the UDP runtimes built from its configuration (``gse.runtimes.udp.config``).

``build_node(conf, ...)`` is what ``gse agent`` (one node per process), the in-process
runtime (``gse.runtimes.udp.network``) and the Mininet agents call: the host driver and
its agent, a switch driver with its switch (and PFC), or for fabric mode
(``gse-fabric``) a leaf driving the ``FabricLeaf`` scheduler and spines following the
path the leaves chose; then every port with its emulated link.
"""

import random

from gse.protocols import host_factory
from gse.runtimes.udp.fabric import LeafDriver
from gse.runtimes.udp.link import EmulatedPort, HostNic
from gse.runtimes.udp.node import HostDriver, SwitchDriver
from gse.wire import wire_profile
from gse.wire.linkrate import wire_time_ps
from switchmodel.fabric import FabricConfig, FabricLeaf, FabricSpine
from switchmodel.fabric_plan import extend_row
from switchmodel.pfc import PfcConfig, PfcState
from switchmodel.queue import OutputQueue, QueueConfig
from switchmodel.switch import Switch

__all__ = ["build_node"]


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
    if role == "host":
        link = conf["ports"][0]
        make_host = host_factory(conf["agent"]["protocol"], protocol_config)
        agent = make_host(nid, random.Random("%s/host/%d" % (seed, nid)), link["gbps"])
        driver = HostDriver(nid, conf["name"], sched, endpoint, agent, on_delivered, on_sent)
        secure = conf.get("secure")
        if secure:
            from gse.runtimes.udp.secure import Tss, load_domain_key
            driver.tss = Tss(load_domain_key(secure["key_file"]), nid, conf["hosts"])
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
    wire = conf.get("wire", "gse")
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
        if role == "host":
            port.agent = driver.agent
            port.catchup = wire_time_ps(conf["mtu_wire_bytes"], port.mbps)
            port.want = False
            driver.nic = port
            if driver.tss is not None:
                port.seal = driver.tss.seal
        elif isinstance(driver, SwitchDriver):
            port.pfc = driver.pfc
        if addr in driver.port_of:
            raise ValueError("node %r: ports %d and %d both lead to %s:%d"
                             % (conf["name"], driver.port_of[addr], pidx, addr[0], addr[1]))
        driver.port_of[addr] = pidx
        driver.ports.append(port)
        know = getattr(endpoint, "know", None)
        if know is not None:
            know(addr)
    return driver


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
    agent = FabricLeaf(nid, cfg, switch, host_ports, host_gbps, fabric["leaf_of"])
    return LeafDriver(nid, conf["name"], conf["kind"], sched, endpoint, switch, agent, latency)
