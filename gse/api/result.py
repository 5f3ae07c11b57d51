"""``Result``: what ``gse.run`` returns — the summary (``gse sim --json``'s object), the
per-message records as a table, the sampled time series, figures (``plot_*``).

Tables load their libraries only when asked: ``records_table()`` needs pyarrow,
``records_frame()`` pandas (not a dependency of the project), so ``import gse`` and a run
stay cheap, and the ``plot_*`` methods matplotlib (``gse.api.plots``).
"""

import json


class Summary:
    """A run's summary: the figures and the description of what was run, exactly the
    object ``gse sim --json`` writes (``to_dict()``); keys read as items or attributes."""

    __slots__ = ("_data",)

    def __init__(self, data):
        self._data = data

    def to_dict(self):
        return self._data

    def to_json(self):
        return json.dumps(self._data, indent=2, sort_keys=True) + "\n"

    def __getitem__(self, key):
        return self._data[key]

    def __getattr__(self, name):
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self):
        keys = ("messages", "delivered", "lost", "end")
        return "Summary(%s)" % ", ".join("%s=%r" % (k, self._data.get(k)) for k in keys)


class Result:
    """One protocol's run: ``scenario``, ``protocol``, ``summary`` (a ``Summary``),
    ``records`` (``MessageRecord`` objects), ``timeseries`` (a
    ``gse.metrics.timeseries.TimeSeries`` when the scenario samples, else None) and
    ``run`` (the runtime's ``RunResult``, with its network for inspection)."""

    __slots__ = ("scenario", "protocol", "summary", "records", "timeseries", "run")

    def __init__(self, scenario, protocol, run):
        self.scenario = scenario
        self.protocol = protocol
        self.run = run
        self.summary = Summary(run.summary)
        self.records = run.records
        self.timeseries = run.timeseries

    def records_columns(self):
        """The records as {column: list}, the columns and units of ``--records``
        (docs/records.md; None where a message was not delivered or completed)."""
        from gse.metrics.report import RECORD_SCHEMA
        rows = [dict(r.as_dict(), completed=r.completed) for r in self.records]
        return {name: [row.get(name) for row in rows] for name, _ in RECORD_SCHEMA}

    def records_table(self):
        """The per-message records as a pyarrow Table (the schema of ``--records``)."""
        from gse.metrics.columnar import pyarrow_module
        from gse.metrics.report import RECORD_SCHEMA
        pa = pyarrow_module()
        cols = self.records_columns()
        return pa.table({name: pa.array(cols[name], type=pa.type_for_alias(typ))
                         for name, typ in RECORD_SCHEMA})

    def records_frame(self):
        """The per-message records as a pandas DataFrame (needs pandas)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("records_frame() needs pandas (pip install pandas); "
                              "records_table() gives a pyarrow Table") from None
        return pandas.DataFrame(self.records_columns())

    # Figures (gse.api.plots; matplotlib loads on the first call)
    def plot_fct_cdf(self, **options):
        """This run's FCT CDF (``gse.plot_fct_cdf`` draws several)."""
        from gse.api.plots import plot_fct_cdf
        return plot_fct_cdf(self, **options)

    def plot_queue_heatmap(self, **options):
        """Queue occupancy per port over time (needs ``sample_us``)."""
        from gse.api.plots import plot_queue_heatmap
        return plot_queue_heatmap(self, **options)

    def plot_timeseries(self, metric, **options):
        """One time-series column over time, a line per tier (needs ``sample_us``)."""
        from gse.api.plots import plot_timeseries
        return plot_timeseries(self, metric, **options)

    def plot_goodput(self, **options):
        """Goodput over time with the failures marked (needs ``sample_us``)."""
        from gse.api.plots import plot_goodput
        return plot_goodput(self, **options)

    def __repr__(self):
        return "Result(%s, %r)" % (self.protocol, self.summary)
