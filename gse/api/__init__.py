"""The Python API (docs/api.md): ``Scenario`` describes a run as data, ``run`` and
``compare`` run it in its runtime (the simulation, UDP or Mininet) and return ``Result``
objects, ``plot_*`` draw them as matplotlib figures.  The command line and sweeps build
on it; it imports nothing of ``gse.cli``.

The names load on first use, so that describing a scenario does not import the
simulation runtime (``gse.api.runner``) until something runs.
"""

_WHERE = {"Scenario": "gse.api.scenario", "ScenarioError": "gse.api.scenario",
          "Result": "gse.api.result", "Summary": "gse.api.result",
          "run": "gse.api.runner", "compare": "gse.api.runner",
          "plot_fct_cdf": "gse.api.plots", "plot_queue_heatmap": "gse.api.plots",
          "plot_timeseries": "gse.api.plots", "plot_goodput": "gse.api.plots"}

__all__ = sorted(_WHERE)


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError("module 'gse.api' has no attribute %r" % name)
    import importlib
    return getattr(importlib.import_module(module), name)


def __dir__():
    return sorted(list(globals()) + list(_WHERE))
