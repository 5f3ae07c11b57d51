"""GSE: a scheduled Ethernet transport (request/grant credit, packet spraying, trimming,
reordering, fast retransmission) beside a RoCEv2 + PFC baseline, on Fat-Tree fabrics.

The packages are the architecture (docs/architecture.md): ``wire`` (packets and their
encoding), ``agents`` (sans-I/O host agents), ``runtimes`` (simulation, UDP, Mininet),
``workloads`` (traffic, collectives, traces), ``metrics``, ``cli``; the switch agent is
the top-level ``switchmodel`` package and topologies are plain data in ``topologies``.
"""

__version__ = "0.1.0"

# The Python API (docs/api.md), loaded on first use so that ``import gse`` stays cheap:
# ``gse.Scenario``, ``gse.run``, ``gse.compare``, ``gse.Result``, ``gse.ScenarioError``;
# ``gse.sweep(base, grid)`` is the package ``gse.sweep``, callable (gse/sweep/__init__.py);
# the figures ``gse.plot_fct_cdf``, ``plot_queue_heatmap``, ``plot_timeseries``,
# ``plot_goodput``.
_API = ("Scenario", "ScenarioError", "Result", "Summary", "run", "compare", "sweep",
        "plot_fct_cdf", "plot_queue_heatmap", "plot_timeseries", "plot_goodput")


def __getattr__(name):
    if name == "sweep":
        import gse.sweep
        return gse.sweep
    if name in _API:
        import gse.api
        return getattr(gse.api, name)
    raise AttributeError("module 'gse' has no attribute %r" % name)


def __dir__():
    return sorted(list(globals()) + list(_API))
