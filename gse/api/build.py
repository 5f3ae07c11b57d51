"""From a ``Scenario`` to what a runtime takes: topology, messages (and triggers),
protocol config, fault schedule, times in picoseconds, and the summary's description of
what was run.  This is the run-building logic the command line used to hold in argparse
code; ``gse.cli`` now turns options into a Scenario and calls these.
"""

import random
from types import SimpleNamespace

from gse.config import PS_PER_US, ConfigError, roce_baseline
from gse.protocols import default_config
from gse.workloads import traffic
from gse.workloads.cmfile import read_cm_workload
from gse.workloads.faults import FaultSchedule, build_schedule
from topologies.registry import build_topology, describe_topology_args


def topology_args(scenario):
    """The topology as the ``topologies.registry`` builders read it (option names)."""
    t = dict(scenario.topology)
    return SimpleNamespace(topology=t.pop("name"), **t)


def topology(scenario):
    return build_topology(topology_args(scenario))


def workload(scenario, topo, log=print):
    """(messages, triggers): ``triggers`` is the connection matrix (a
    ``gse.workloads.cmfile.CmWorkload``) when it holds flows for triggers, else None;
    ``log`` says what a ``.cm`` file held that the run ignores."""
    n = len(topo.hosts)
    w = scenario.workload
    if w["kind"] == "cm":
        cm = read_cm_workload(w["path"])
        if cm.nodes > n:
            raise ValueError("%s declares %d nodes but the topology has %d hosts"
                             % (w["path"], cm.nodes, n))
        for key, count in sorted(cm.ignored.items()):
            log("%s: ignored %s on %d connection(s)" % (w["path"], key, count))
        return cm.messages, (cm if cm.triggers or cm.held else None)
    return generated_traffic(scenario, n), None


def generated_traffic(scenario, n):
    """The messages of the workload generator over ``n`` hosts."""
    w = scenario.workload
    rng = random.Random("%s/traffic" % scenario.seed)
    start = int(w["start_us"] * PS_PER_US)
    if w["kind"] == "permutation":
        return traffic.permutation(n, w["size"], rng, start_ps=start)
    if w["kind"] == "incast":
        return traffic.incast(n, w["senders"], w["size"], rng, receiver=w["receiver"],
                              start_ps=start)
    if w["kind"] == "all-to-all":
        return traffic.all_to_all(n, w["size"], start_ps=start)
    dist = traffic.parse_size_dist(w["size_dist"] or str(w["size"]))
    return traffic.uniform_random(n, w["messages"], rng, dist, w["load"],
                                  scenario.topology["link_gbps"], start_ps=start)


def overrides(items):
    """(name, value) of ``NAME=VALUE`` strings."""
    for item in items or ():
        if "=" not in item:
            raise ConfigError("--set takes name=value, got %r" % item)
        name, value = item.split("=", 1)
        yield name.strip(), value.strip()


def config(scenario, protocol, lenient=False):
    """The protocol's config (GseConfig or RoceConfig) with the scenario's overrides;
    ``lenient`` (a comparison): an unprefixed name applies where the config has it."""
    if protocol == "roce":
        cfg = roce_baseline(scenario.baseline)
    else:
        cfg = default_config(protocol)
    for name, value in overrides(scenario.overrides):
        if "." in name:                  # gse.NAME=V / roce.NAME=V: one protocol only
            target, name = name.split(".", 1)
            if target != protocol:
                continue
        elif lenient and name not in cfg.__slots__:
            continue
        cfg.set(name, value)
    if protocol == "gse":
        if scenario.unsched is not None:
            cfg.unsched_bytes = scenario.unsched
        if scenario.policy:
            cfg.policy = scenario.policy
    cfg.validate()
    return cfg


def faults(scenario, topo, after_packets=None):
    """The run's fault schedule (empty without failures)."""
    if not scenario.failures and not scenario.failure_files:
        if after_packets is not None:
            raise ValueError("--fail-after-packets needs a schedule (--fail or --fail-file)")
        return FaultSchedule()
    return build_schedule(topo, list(scenario.failures), list(scenario.failure_files),
                          scenario.seed, after_packets)


def _ps(us):
    return int(round(us * PS_PER_US))


def detect_ps(scenario):
    return -1 if scenario.detect_us == "never" else _ps(scenario.detect_us)


def until_ps(scenario):
    return -1 if scenario.until_us is None else int(scenario.until_us * PS_PER_US)


def stall_ps(scenario):
    """None for the watchdog's default, 0 for off."""
    if scenario.stall_us is None:
        return None
    ps = _ps(scenario.stall_us)
    if scenario.stall_us > 0 and ps == 0:
        raise ValueError("--stall-us %r is below a picosecond" % scenario.stall_us)
    return ps


def sample_ps(scenario):
    """0 when not sampling."""
    if scenario.sample_us is None:
        return 0
    ps = _ps(scenario.sample_us)
    if ps <= 0:
        raise ValueError("--sample-us %r is below a picosecond" % scenario.sample_us)
    return ps


def describe(summary, scenario, cfg):
    """Add what was run to a summary, so a JSON file stands on its own."""
    w = scenario.workload
    summary["topology"] = describe_topology_args(topology_args(scenario))
    summary["traffic"] = (w["path"] if w["kind"] == "cm" else
                          {"kind": w["kind"], "size": w["size"], "seed": scenario.seed})
    summary["config"] = cfg.as_dict()
    if summary.get("protocol") == "roce":
        summary["baseline"] = scenario.baseline
    return summary
