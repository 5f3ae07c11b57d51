"""The protocols a run can name, and what each one puts in the hosts and switches.

One table for every runtime (simulation, UDP, Mininet): the host agent a protocol runs,
its default parameters, and the switch queue and PFC settings it expects.  Runtimes build
their nodes from these; nothing here knows how packets travel.
"""

from gse.config import GseConfig, RoceConfig
from switchmodel.fabric_config import FabricConfig
from switchmodel.pfc import PfcConfig
from switchmodel.queue import QueueConfig

# gse-fabric: plain RoCE-like hosts, the leaves schedule (docs/fabric-mode.md)
PROTOCOLS = ("gse", "roce", "gse-fabric")

# The parameters of a run, whichever its protocol (default_config's result)
ProtocolConfig = GseConfig | RoceConfig | FabricConfig


def check_protocol(protocol: str) -> None:
    if protocol not in PROTOCOLS:
        raise ValueError("unknown protocol %r (known: %s)" % (protocol, ", ".join(PROTOCOLS)))


def default_config(protocol: str) -> ProtocolConfig:
    if protocol == "gse":
        return GseConfig()
    if protocol == "roce":
        return RoceConfig()
    if protocol == "gse-fabric":
        return FabricConfig()
    raise ValueError("unknown protocol %r (known: %s)" % (protocol, ", ".join(PROTOCOLS)))


def host_factory(protocol, config):
    """``make_host(addr, rng, downlink_gbps)`` for the protocol's sans-I/O host agent (its
    module imported here: a RoCE run does not load GSE's agent, nor a GSE run RoCE's)."""
    if protocol == "gse":
        from gse.agents.gse_host import GseHost as cls
    elif protocol == "roce":
        from gse.agents.roce_host import RoceHost as cls
    elif protocol == "gse-fabric":
        from gse.agents.plain_host import PlainHost as cls
    else:
        raise ValueError("unknown protocol %r (known: %s)" % (protocol, ", ".join(PROTOCOLS)))

    def make_host(addr, rng, gbps):
        return cls(addr, config, rng, gbps)
    return make_host


def queue_config(protocol, config):
    """Switch egress queues as the protocol expects them."""
    if protocol == "gse":
        return QueueConfig.from_gse(config)
    if protocol == "gse-fabric":      # drop-tail or trimming (repaired by the leaves); ECN
        k = config.ecn_bytes          # (step marking) on the DATA the leaves spray
        trim = config.trim and config.leaf_recovery and config.reorder == "leaf"
        return QueueConfig(config.queue_bytes, config.control_queue_bytes, trim, None,
                           k > 0, k, k)
    limit = config.switch_buffer_bytes if config.pfc else config.queue_bytes
    return QueueConfig(limit, limit, False, None, config.ecn, config.ecn_kmin_bytes,
                       config.ecn_kmax_bytes, config.ecn_pmax_pct / 100.0,
                       config.switch_control_priority, config.ecn_mark_on == "dequeue")


def pfc_config(protocol, config):
    if protocol != "roce" or not config.pfc:
        return None
    return PfcConfig(config.pfc_xoff_bytes, config.pfc_xoff_bytes - config.pfc_xon_bytes,
                     config.pfc_headroom_bytes, config.pfc_dynamic_alpha,
                     config.switch_buffer_bytes, config.pfc_pause_quanta, config.pfc_model)
