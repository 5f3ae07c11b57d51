"""Options that watch a run: time series (``--sample-us``), pcap captures (``--pcap``).

Shared by ``gse sim``, ``gse compare`` and ``gse replay`` (and the place a future
``gse sweep`` takes them from; ``gse run`` takes the pcap options only):
``add_observe_options`` adds the options, ``sim_observers(args, label, multi)`` builds
what ``run_simulation(..., observers=...)`` takes, ``write_observed(args, result, label,
multi)`` writes what they collected.
"""

import json
import os

from gse.api.options import sample_ps  # noqa: F401  (the commands import it from here)
from gse.config import PS_PER_US
from gse.metrics.pcap import DEFAULT_BUDGET, MIN_SNAPLEN, check_options


def add_observe_options(p, sampling=True, pcap=True):
    g = p.add_argument_group("observation")
    if pcap:
        g.add_argument("--pcap", metavar="DIR", default=None,
                       help="write pcap captures (Ethernet/IPv4/UDP frames around the real "
                            "datagrams; docs/pcap.md) into DIR, one file per interface")
        g.add_argument("--pcap-ports", metavar="SPEC", default="all",
                       help="interfaces to capture, comma-separated: all, host:N, a host's "
                            "name, NODE:PORT, tier:KIND[:up|down] (default: all)")
        g.add_argument("--pcap-budget", type=int, default=DEFAULT_BUDGET, metavar="N",
                       help="packets written per capture file (default %(default)s)")
        g.add_argument("--pcap-snaplen", type=int, default=65535, metavar="BYTES",
                       help="bytes kept of each frame (at least %d: the headers)"
                            % MIN_SNAPLEN)
    if sampling:
        g.add_argument("--sample-us", type=float, default=None, metavar="N",
                       help="sample queues, link utilisation, host goodput, PFC pauses and "
                            "trims every N us of virtual time (docs/timeseries.md)")
        g.add_argument("--timeseries", metavar="DIR", default=None,
                       help="where --sample-us writes ports.parquet and hosts.parquet "
                            "(default: ./timeseries; per protocol in DIR/PROTOCOL when "
                            "several run)")
        g.add_argument("--timeseries-format", choices=("parquet", "csv"), default="parquet",
                       help="file format of the time series (parquet needs pyarrow)")
    return g


def check_outputs(args):
    """Fail before a long run, not after it: options sound, libraries importable, and the
    files of ``--json``, ``--records`` and ``--plot`` can be written (a file name, in a
    directory that exists and is writable)."""
    for opt in ("json", "records", "plot"):
        path = getattr(args, opt, None)
        if path:
            d = os.path.dirname(os.path.abspath(path))
            if os.path.isdir(path):
                raise ValueError("--%s %s: is a directory; give the name of a file to write"
                                 % (opt, path))
            if not os.path.isdir(d):
                raise ValueError("--%s %s: directory %s does not exist" % (opt, path, d))
            if not os.access(d, os.W_OK):
                raise ValueError("--%s %s: directory %s is not writable" % (opt, path, d))
    if sample_ps(args) and args.timeseries_format == "parquet":
        from gse.metrics.columnar import pyarrow_module
        pyarrow_module()
    if getattr(args, "pcap", None):
        from gse.metrics.pcap import dpkt_module
        check_options(args.pcap_budget, args.pcap_snaplen)
        dpkt_module()


def pcap_dir(args, label, multi):
    return os.path.join(args.pcap, label) if multi else args.pcap


def sim_observers(args, label, multi=False):
    """The observers ``run_simulation(..., observers=...)`` takes for these options."""
    out = []
    if getattr(args, "pcap", None):
        from gse.runtimes.sim.capture import SimCapture
        out.append(SimCapture.factory(pcap_dir(args, label, multi), args.pcap_ports,
                                      args.pcap_budget, args.pcap_snaplen))
    return out


def timeseries_dir(args, label, multi):
    base = args.timeseries or "timeseries"
    return os.path.join(base, label) if multi else base


def write_observed(args, result, label, multi=False):
    """Write the time series a run collected; returns the paths written."""
    if getattr(args, "pcap", None) and not getattr(args, "quiet", False):
        print("pcap captures written to %s (tshark -X lua_script:tools/wireshark/gse.lua "
              "-r FILE)" % pcap_dir(args, label, multi))
    ts = getattr(result, "timeseries", None)
    if ts is None:
        return []
    d = timeseries_dir(args, label, multi)
    paths = ts.write(d, args.timeseries_format)
    with open(os.path.join(d, "summary.json"), "w") as f:    # as gse.cli.common.write_json
        json.dump(result.summary, f, indent=2, sort_keys=True)
        f.write("\n")
    paths.append(os.path.join(d, "summary.json"))
    if not getattr(args, "quiet", False):
        print("time series (%d bins of %g us, %d ports, %d hosts) written to %s"
              % (ts.nbins, ts.bin_ps / PS_PER_US, ts.nports, ts.nhosts, d))
    return paths
