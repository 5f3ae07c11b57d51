"""A Scenario's command-line form: the options of ``gse sim`` / ``gse compare`` (fabric,
traffic, protocol, failures, times) and ``scenario_from_args`` that turns them into a
``gse.api.Scenario``.

They live here, below ``gse.cli``, because a sweep (``gse.sweep``) reads points as
``gse sim`` arguments too: both parse the same options into the same Scenario.  The
``*_ps(args)`` checks refuse bad times with the options' own names in the message.
"""

from gse.api.scenario import TOPOLOGY_DEFAULTS, WORKLOAD_DEFAULTS, Scenario
from gse.config import BASELINES, PS_PER_US, ConfigError
from topologies.registry import add_topology_options


def add_scenario_options(p, protocols, real_time=False):
    """Fabric, traffic, protocol and failure options (``real_time``: a runtime on real
    time, which also takes the failure trigger ``--fail-after-packets``); returns the
    failure group."""
    add_topology_options(p)
    add_traffic_options(p)
    add_protocol_options(p, protocols)
    g = add_fault_options(p)
    if real_time:
        add_trigger_option(g)
    return g


def add_traffic_options(p):
    g = p.add_argument_group("traffic")
    g.add_argument("--traffic", default="permutation",
                   choices=("permutation", "incast", "all-to-all", "random"))
    g.add_argument("--traffic-file", metavar="FILE.cm",
                   help="htsim connection matrix in place of the generator options")
    g.add_argument("--size", type=int, default=2_000_000, help="message bytes")
    g.add_argument("--senders", type=int, default=32, help="incast senders")
    g.add_argument("--receiver", type=int, default=None, help="incast receiver host")
    g.add_argument("--messages", type=int, default=1000, help="random: message count")
    g.add_argument("--size-dist", help="random: fixed:N, uniform:LO:HI, exp:MEAN, "
                                       "lognormal:MEDIAN:SIGMA")
    g.add_argument("--load", type=float, default=0.5, help="random: offered load per host")
    g.add_argument("--start-us", type=float, default=0.0, help="start time of generated flows")
    g.add_argument("--seed", type=int, default=1)
    return g


def add_protocol_options(p, protocols):
    g = p.add_argument_group("protocol")
    g.add_argument("--protocol", default=protocols[0], choices=protocols)
    g.add_argument("--unsched", type=int, default=None,
                   help="GSE unscheduled first window in bytes (0 = off)")
    g.add_argument("--policy", choices=("rr", "srpt", "fifo"),
                   help="GSE receiver grant policy (default rr)")
    g.add_argument("--baseline", default="deployed", choices=sorted(BASELINES),
                   help="the RoCE baseline profile (docs/comparison.md): deployed = RoCEv2 + "
                        "PFC + DCQCN + ECN (default); htsim = htsim's RoCE model (no "
                        "congestion control, its framing, NIC and PFC); hpcc-dcqcn = DCQCN "
                        "as the HPCC authors' ns-3 simulator runs it; --set overrides apply "
                        "on top")
    g.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override any protocol parameter (repeatable)")
    g.add_argument("--loss", type=float, default=0.0, help="random loss per link traversal")
    g.add_argument("--corrupt", type=float, default=0.0,
                   help="random corruption per link traversal")
    return g


DEFAULT_DETECT_US = 1000.0


def add_fault_options(p):
    g = p.add_argument_group("failures")
    g.add_argument("--fail", action="append", default=[], metavar="SPEC",
                   help="fail links or a switch during the run, e.g. "
                        "link:agg0_0-core0@50us, switch:agg1_0@50us,restore=1ms, "
                        "tier:agg-core:25%%@50us, ...,flap=10us/40us,until=1ms, ...,gray=1%% "
                        "(repeatable; docs/failures.md)")
    g.add_argument("--fail-file", action="append", default=[], metavar="FILE",
                   help="a schedule file: one --fail SPEC per line, # comments")
    g.add_argument("--detect-us", default=str(DEFAULT_DETECT_US), metavar="US|never",
                   help="the switches learn of a failure or a restore this long after it "
                        "and route around it (default %g us)" % DEFAULT_DETECT_US)
    return g


def detect_ps(args):
    """``--detect-us`` in picoseconds, -1 for never."""
    text = str(getattr(args, "detect_us", DEFAULT_DETECT_US)).strip()
    if text == "never":
        return -1
    try:
        us = float(text)
    except ValueError:
        raise ValueError("--detect-us takes microseconds or 'never', got %r" % text) from None
    if not us >= 0 or us == float("inf"):
        raise ValueError("--detect-us must be >= 0, got %r" % text)
    return int(round(us * PS_PER_US))


def add_trigger_option(g):
    """``gse run`` only: the real-time runtimes start a schedule on the traffic's progress."""
    g.add_argument("--fail-after-packets", type=int, default=None, metavar="N",
                   help="the --fail times count from when a node has sent N packets over "
                        "the schedule's links, not from time 0: the failure hits traffic "
                        "however slowly the machine gets it going")


def until_ps(args):
    """``--until-us`` as the runtimes take it: picoseconds, -1 for no bound."""
    us = getattr(args, "until_us", None)
    if us is None:
        return -1
    if not 0 <= us < float("inf"):
        raise ValueError("--until-us must be a time >= 0 (microseconds), got %r" % us)
    return int(us * PS_PER_US)


def add_stall_option(p):
    """``--stall-us``: the no-progress watchdog's span (``gse.metrics.stall``)."""
    p.add_argument("--stall-us", type=float, default=None, metavar="US",
                   help="end the run when nothing completes, is acknowledged or received for "
                        "this long on the run's clock while messages are unfinished (default: "
                        "4 x the protocol's rto_max_ps, 6.4 ms for GSE, 64 ms for RoCE and "
                        "fabric mode, 4 s over UDP, and not before the failures' last change; "
                        "0: never)")


def stall_ps(args):
    """``--stall-us`` as the runtimes take it: None for the default, 0 for off."""
    us = getattr(args, "stall_us", None)
    if us is None:
        return None
    if not 0 <= us < float("inf"):
        raise ValueError("--stall-us must be a time >= 0 (microseconds; 0: no watchdog), "
                         "got %r" % us)
    ps = int(round(us * PS_PER_US))
    if us > 0 and ps == 0:
        raise ValueError("--stall-us %r is below a picosecond" % us)
    return ps


def sample_ps(args):
    """``--sample-us`` in picoseconds, 0 when not sampling."""
    us = getattr(args, "sample_us", None)
    if us is None:
        return 0
    if us <= 0:
        raise ValueError("--sample-us must be positive, got %r" % us)
    ps = int(round(us * PS_PER_US))
    if ps <= 0:
        raise ValueError("--sample-us %r is below a picosecond" % us)
    return ps


def arg_overrides(args):
    for item in getattr(args, "set", None) or ():
        if "=" not in item:
            raise ConfigError("--set takes name=value, got %r" % item)
        name, value = item.split("=", 1)
        yield name.strip(), value.strip()


def topology_part(args):
    """The topology options as a Scenario's ``topology`` (name and parameters).  Read
    with ``getattr``, as the registry reads them: a Namespace built by hand for the traffic
    alone (experiments/mininet_fattree.py) has none, and gets the defaults."""
    out = {"name": getattr(args, "topology", None) or "fat-tree"}
    for name in TOPOLOGY_DEFAULTS:
        value = getattr(args, name, None)
        out[name] = TOPOLOGY_DEFAULTS[name] if value is None else value
    return out


def workload_part(args):
    """The traffic options as a Scenario's ``workload``: a ``.cm`` file or a generator."""
    if getattr(args, "traffic_file", None):
        return {"kind": "cm", "path": args.traffic_file}
    out = {"kind": getattr(args, "traffic", "permutation")}
    for name, default in WORKLOAD_DEFAULTS.items():
        value = getattr(args, name, default)
        out[name] = value
    return out


def scenario_from_args(args, protocols=None):
    """The run the options describe, as a ``gse.api.Scenario`` (bad times and ``--set``
    items are refused first, with the options' own messages)."""
    until_ps(args)
    stall_ps(args)
    detect = detect_ps(args)
    sample_ps(args)
    list(arg_overrides(args))
    return Scenario(
        topology=topology_part(args), workload=workload_part(args),
        protocols=list(protocols or [args.protocol]),
        baseline=getattr(args, "baseline", None) or "deployed",
        overrides=list(getattr(args, "set", None) or ()),
        unsched=getattr(args, "unsched", None), policy=getattr(args, "policy", None),
        loss=getattr(args, "loss", 0.0), corrupt=getattr(args, "corrupt", 0.0),
        failures=list(getattr(args, "fail", None) or ()),
        failure_files=list(getattr(args, "fail_file", None) or ()),
        detect_us="never" if detect == -1 else float(str(args.detect_us).strip())
        if hasattr(args, "detect_us") else 1000.0,
        seed=getattr(args, "seed", 1), until_us=getattr(args, "until_us", None),
        stall_us=getattr(args, "stall_us", None), sample_us=getattr(args, "sample_us", None))
