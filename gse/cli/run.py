"""Commands of the real-network runtimes, loaded by ``gse.cli.main``.

    gse run --runtime udp --k 4 --link-gbps 0.1 --traffic incast --senders 8 --json out.json
    gse agent-configs --k 4 --traffic permutation --size 100000 --out-dir nodes/

``gse run`` takes every option of ``gse sim`` and writes the same summary; its defaults
are scaled to what one Python process carries over real sockets (k=4, 0.1 Gb/s links,
200 KB messages, 8 incast senders: ``gse.api.scenario.REAL_TIME_DEFAULTS``).  Protocol
timers get their real-time values (``gse.runtimes.udp.config.UDP_TIMERS``) unless set with
``--set``.  ``--runtime`` chooses where the nodes run: ``udp`` (this process, loopback) or
``mininet`` (an agent process per node in its own namespace), when installed.  The
options become a ``gse.Scenario`` (``run_scenario``) that ``gse.run`` runs
(``gse.api.realtime``), so ``--json`` is that Result's ``summary.to_dict()``.
"""

import importlib.util
import signal
import sys

from gse.api.realtime import explicit_settings as explicit_names
from gse.api.runner import run
from gse.api.scenario import REAL_TIME_DEFAULTS, runtime_options_defaults
from gse.cli.common import (add_run_options, add_stall_option, emit, gse_config_from_args,
                            scenario_from_args, stall_ps, topology_from_args,
                            traffic_from_args)
from gse.cli.faults import detect_ps, faults_from_args
from gse.cli.observe import add_observe_options, check_outputs
from gse.cli.progress import Progress, wanted
from gse.metrics.stall import describe_stall
from gse.runtimes.udp.config import (RUN_DEFAULTS, loopback_addresses, node_configs,
                                     pfc_lane_wanted, slowest_link_gbps, udp_profile,
                                     udp_protocols, write_node_configs)
from gse.runtimes.udp.io import LOOPS
from gse.wire import WIRE_PROFILES

# runtime name -> the module it needs (None: always here)
RUNTIMES = {"udp": None, "mininet": "gse.runtimes.mininet.run"}

UDP_DEFAULTS = dict(REAL_TIME_DEFAULTS["topology"], **REAL_TIME_DEFAULTS["workload"])


def available_runtimes():
    return [name for name, mod in RUNTIMES.items()
            if mod is None or importlib.util.find_spec(mod) is not None]


def explicit_settings(args):
    """Parameter names the user set with ``--set`` (with or without a protocol prefix)."""
    return explicit_names(getattr(args, "set", None))


def run_scenario(args):
    """The run ``gse run``'s options describe: ``gse sim``'s fields, the runtime and the
    options of that runtime (``gse.api.scenario.runtime_options_defaults``)."""
    s = scenario_from_args(args)
    if args.runtime != "mininet" and getattr(args, "forwarding", "agents") != "agents":
        raise ValueError("--forwarding %s: switch namespaces exist in --runtime mininet only"
                         % args.forwarding)
    options = {name: getattr(args, name) for name in runtime_options_defaults(args.runtime)
               if hasattr(args, name)}
    return s.replace(runtime=args.runtime, runtime_options=options)


def _log(line):
    """What the run warns about on stderr, what it notes on stdout."""
    if line.startswith("warning:"):
        print("gse run: %s" % line, file=sys.stderr)
    else:
        print(line)


def cmd_run(args):
    scenario = run_scenario(args)
    check_outputs(args)
    try:
        with Progress(wanted(args)) as progress:
            result = run(scenario, log=_log, progress=progress if progress.enabled else None)
    except KeyboardInterrupt:           # sockets and tasks are closed by then
        print("gse run: interrupted", file=sys.stderr)
        return 130
    summary = result.summary.to_dict()
    emit(summary, result.records, args)
    if args.pcap and not args.quiet:
        print("pcap captures written to %s (tshark -X lua_script:tools/wireshark/gse.lua "
              "-r FILE)" % args.pcap)
    stopped_by = summary.get("udp", {}).get("signal")
    if stopped_by:                      # a partial summary, marked "complete": false
        print("gse run: interrupted by %s: partial results (%d of %d messages delivered)%s"
              % (stopped_by, summary["delivered"], summary["messages"],
                 " written to %s" % args.json if args.json else ""), file=sys.stderr)
        return 128 + getattr(signal, stopped_by)
    if summary.get("stall"):
        print("gse run: error: %s" % describe_stall(summary["stall"]), file=sys.stderr)
        return 1
    return 0 if summary["lost"] == 0 else 1


def cmd_agent_configs(args):
    if not 1 <= args.port <= 65535:
        raise ValueError("--port must be a UDP port 1..65535 that every agent binds and "
                         "sends to, got %d" % args.port)
    topo = topology_from_args(args)
    messages = traffic_from_args(args, topo)
    cfg = udp_profile(gse_config_from_args(args), explicit_settings(args),
                      link_gbps=slowest_link_gbps(topo))
    addrs = loopback_addresses(topo, args.base_ip, args.port)
    # PFC lanes (protocols with PFC): every node's second socket, on port + 1
    lanes = ([(ip, port + 1) for ip, port in addrs]
             if pfc_lane_wanted(args.protocol, cfg) and args.port < 65535 else None)
    run = {"timeout_s": args.timeout_s, "loop": args.loop}
    stall = stall_ps(args)
    if stall is not None:
        run["stall_s"] = stall / 1e12
    confs = node_configs(topo, messages, args.protocol, cfg, args.seed, addrs, args.loss,
                         args.corrupt, output_dir=args.out_dir, run=run, wire=args.wire,
                         secure_key_file=args.secure,
                         faults=faults_from_args(args, topo), detect_ps=detect_ps(args),
                         pfc_lanes=lanes)
    paths = write_node_configs(confs, args.out_dir)
    print("wrote %d node configurations (%d hosts, %d messages) to %s"
          % (len(paths), len(topo.hosts), len(messages), args.out_dir))
    if args.secure:
        print("--secure: epoch %d of %s and a fresh salt; each node runs these "
              "configurations once (write them again for another run)"
              % (confs[0]["secure"]["epoch"], args.secure))
    return 0


def _wire_option(g):
    g.add_argument("--wire", choices=WIRE_PROFILES, default="gse",
                   help="what goes on the wire: gse (the project's 64-byte header, default) or "
                        "uet (UET 1.0 PDS/SES headers over UDP 4793, GSE protocol only; "
                        "docs/wire-format.md)")


def _udp_run_options(p):
    g = p.add_argument_group("udp runtime")
    _wire_option(g)
    g.add_argument("--timeout-s", type=float, default=120.0,
                   help="wall-clock bound of the run (default 120)")
    g.add_argument("--until-us", type=float, default=None,
                   help="stop when the run's clock reaches this time")
    add_stall_option(g)
    g.add_argument("--loop", choices=LOOPS, default="auto",
                   help="event loop (auto: uvloop when installed)")
    g.add_argument("--addressing", choices=("ports", "ips"), default="ports",
                   help="ports: 127.0.0.1 and one port per node; ips: 127.78.x.y per node")
    g.add_argument("--slack-us", type=float, default=20.0,
                   help="emulated wire times below this are not waited for")
    g.add_argument("--coarse-timers", action="store_true",
                   help="sleep >= 1 ms instead of polling for sub-millisecond timers")
    _secure_option(g)


def _secure_option(g):
    g.add_argument("--secure", metavar="KEYFILE", default=None,
                   help="authenticate every packet between hosts and every PFC frame "
                        "(AES-GCM, keys for this run derived from the domain key in KEYFILE "
                        "-- 64 hex digits or >= 16 bytes -- a fresh salt and the key's next "
                        "epoch, kept in KEYFILE.epochs: its folder must be writable; "
                        "docs/hardening.md); needs the cryptography package")


def add_commands(sub):
    protocols = udp_protocols()

    p = sub.add_parser("run", help="run traffic over a real network runtime (UDP sockets)",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("--runtime", choices=available_runtimes(), default="udp",
                   help="udp: every node in this process on the loopback range")
    add_run_options(p, protocols, real_time=True)
    p.set_defaults(**UDP_DEFAULTS)
    _udp_run_options(p)
    add_observe_options(p, sampling=False)
    g = p.add_argument_group("mininet runtime")
    g.add_argument("--placement", choices=("node", "tier", "switches", "all"), default="node",
                   help="which nodes share an agent process: node (one process per node, "
                        "default), tier (per switch tier), switches (all switches in one), "
                        "all (one process); every node keeps its own namespace")
    g.add_argument("--precise-timers", action="store_true",
                   help="agents wake for timers to the microsecond (timerfd) instead of "
                        "sleeping at least 1 ms")
    g.add_argument("--forwarding", choices=("agents", "kernel"), default="agents",
                   help="agents: a switch agent per switch position (default); kernel: "
                        "the switch namespaces route in the kernel (multipath on the UDP "
                        "source port, tbf links; GSE only: no PFC, ECN, trimming, control "
                        "priority or link delay; docs/mininet.md)")

    p = sub.add_parser("agent-configs",
                       help="write the per-node configurations of a topology and traffic")
    add_run_options(p, protocols)
    p.set_defaults(**UDP_DEFAULTS)
    p.add_argument("--out-dir", required=True, help="one NAME.json per node; results too")
    p.add_argument("--base-ip", default="127.77.0.0", help="node n binds base + n + 1")
    p.add_argument("--port", type=int, default=47000, help="UDP port of every node")
    p.add_argument("--timeout-s", type=float, default=RUN_DEFAULTS["timeout_s"])
    add_stall_option(p)
    p.add_argument("--loop", choices=LOOPS, default="auto")
    _wire_option(p)
    _secure_option(p)
    return {"run": cmd_run, "agent-configs": cmd_agent_configs}
