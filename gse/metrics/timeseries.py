"""Time series of a simulation run: queues, links, hosts and PFC in bins of virtual time.

``--sample-us N`` (or ``run_simulation(..., sample_ps=N * PS_PER_US)``) looks at every
port and every host at each multiple of N us of virtual time and keeps, per bin:

* per port (one direction of a link, at its sending end; a host's NIC is a port too):
  the queue's occupancy at the bin's end and its peak within the bin (bytes, control and
  data classes together), the bytes that started serialisation in the bin and so the
  link's utilisation, whether PFC held its data class paused at the bin's end and for
  how long within the bin, and the trims, drops and ECN marks of the bin;
* per host: the payload bytes its receiver accepted in the bin (new bytes only: a
  duplicate or a trimmed header adds nothing; RoCE counts bytes accepted in order) and so
  its goodput, and the wire bytes its NIC sent.

The sampler (``gse.runtimes.sim.sampler``, compiled) is an observer of the run
(``gse.runtimes.sim.observe``): it reads counters the simulation keeps anyway and
schedules nothing, so a sampled run executes the same events as an unsampled one and its
results are bit-identical, and a run without sampling pays nothing.  This module is the
result: the ``TimeSeries`` object, its tables and files.

Tables are long ("tidy"): one row per (bin, port) and per (bin, host), bin-major, in the
order of ``Network.ports`` and host ids.  docs/timeseries.md gives every column.  The
Python API (stable; what experiments use)::

    result = run_simulation(topo, messages, "gse", cfg, seed, sample_ps=10 * PS_PER_US)
    ts = result.timeseries
    ts.times_us()                  # bin start times
    ts.host_goodput_gbps(3)        # host 3's goodput per bin, Gb/s
    ts.port_series(node, port, "queue_bytes")
    ts.write("out/ts")             # out/ts/ports.parquet, out/ts/hosts.parquet
    ts = TimeSeries.read("out/ts")

A driver that builds its own network (not ``run_simulation``) samples with
``gse.runtimes.sim.sampler.Sampler(net, bin_ps)`` passed to
``gse.runtimes.sim.observe.run_observed`` and takes ``sampler.result()`` afterwards.
"""

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gse.metrics.columnar import Coded, format_of, read_table, write_table

if TYPE_CHECKING:
    from topologies.topology import Topology

PS_PER_US = 1_000_000

PORT_STATIC = [("node", "int32"), ("port", "int16"), ("node_name", "string"),
               ("tier", "string"), ("direction", "string"), ("peer", "int32"),
               ("peer_name", "string"), ("link_gbps", "float64")]
PORT_DYNAMIC = [("queue_bytes", "int64"), ("queue_peak_bytes", "int64"),
                ("tx_bytes", "int64"), ("paused", "bool"), ("paused_ps", "int64"),
                ("trims", "int64"), ("drops", "int64"), ("ecn_marks", "int64")]
HOST_STATIC = [("host", "int32"), ("host_name", "string"), ("link_gbps", "float64")]
HOST_DYNAMIC = [("rx_payload_bytes", "int64"), ("tx_bytes", "int64")]
TIME_COLUMNS = [("bin", "int32"), ("t_start_us", "float64"), ("t_end_us", "float64")]
PORT_SCHEMA = (TIME_COLUMNS + PORT_STATIC + PORT_DYNAMIC
               + [("utilisation", "float64"), ("paused_frac", "float64")])
HOST_SCHEMA = TIME_COLUMNS + HOST_STATIC + HOST_DYNAMIC + [("goodput_gbps", "float64")]
FILES = {"parquet": ("ports.parquet", "hosts.parquet"), "csv": ("ports.csv", "hosts.csv")}


def port_static(topo: "Topology", ports: Iterable[Any]) -> dict[str, list[Any]]:
    """The static columns of ``ports`` (objects with ``node``, ``port``, ``mbps``)."""
    cols: dict[str, list[Any]] = {name: [] for name, _ in PORT_STATIC}
    for p in ports:
        node = topo.nodes[p.node]
        peer, _ = topo.peer(p.node, p.port)
        pnode = topo.nodes[peer]
        cols["node"].append(p.node)
        cols["port"].append(p.port)
        cols["node_name"].append(node.name)
        cols["tier"].append(node.kind)
        cols["direction"].append("up" if pnode.tier > node.tier else "down")
        cols["peer"].append(peer)
        cols["peer_name"].append(pnode.name)
        cols["link_gbps"].append(p.mbps / 1000.0)
    return cols


class TimeSeries:
    """Sampled queues, links and hosts of one run (see the module docstring).

    ``edges``: bin boundaries in ps (``len = bins + 1``); ``ports`` / ``hosts``: the
    static columns, one value per port or host; ``port_values`` / ``host_values``: the
    per-bin columns, bin-major (row ``b * n + i`` is entity ``i`` in bin ``b``)."""

    def __init__(self, edges: Iterable[int], ports: Mapping[str, Sequence[Any]],
                 port_values: Mapping[str, Sequence[int]], hosts: Mapping[str, Sequence[Any]],
                 host_values: Mapping[str, Sequence[int]], meta: Mapping[str, Any]) -> None:
        self.edges = list(edges)
        self.ports = ports
        self.port_values = port_values
        self.hosts = hosts
        self.host_values = host_values
        self.meta = dict(meta)
        self.bin_ps = int(self.meta.get("bin_ps", 0))
        self.nports = len(ports["node"])
        self.nhosts = len(hosts["host"])
        self._port_index = {(n, p): i for i, (n, p) in
                            enumerate(zip(ports["node"], ports["port"]))}

    @property
    def nbins(self) -> int:
        return len(self.edges) - 1

    def times_us(self) -> list[float]:
        """The start of every bin, in us."""
        return [t / PS_PER_US for t in self.edges[:-1]]

    def durations_ps(self) -> list[int]:
        return [b - a for a, b in zip(self.edges, self.edges[1:])]

    def host_series(self, host: int, column: str) -> list[int]:
        """Per-bin values of a host column (``rx_payload_bytes``, ``tx_bytes``)."""
        if not 0 <= host < self.nhosts:
            raise ValueError("host %r outside 0..%d" % (host, self.nhosts - 1))
        return list(self.host_values[column][host::self.nhosts])

    def host_goodput_gbps(self, host: int) -> list[float]:
        """Host ``host``'s goodput in every bin (Gb/s): new payload bytes accepted by its
        receiver over the bin's length."""
        return [b * 8 / d * 1000.0 if d else 0.0
                for b, d in zip(self.host_series(host, "rx_payload_bytes"),
                                self.durations_ps())]

    def total_goodput_gbps(self) -> list[float]:
        """The sum over hosts of the goodput in every bin (Gb/s)."""
        rx = self.host_values["rx_payload_bytes"]
        n = self.nhosts
        return [sum(rx[b * n:(b + 1) * n]) * 8 / d * 1000.0 if d else 0.0
                for b, d in enumerate(self.durations_ps())]

    def port_index(self, node: int, port: int) -> int:
        try:
            return self._port_index[(node, port)]
        except KeyError:
            raise ValueError("no port %r of node %r in this time series"
                             % (port, node)) from None

    def port_series(self, node: int, port: int, column: str) -> list[float]:
        """Per-bin values of a port column (``queue_bytes``, ``utilisation``, ...)."""
        i = self.port_index(node, port)
        if column == "utilisation":
            gbps = self.ports["link_gbps"][i]
            return [tx * 8 / (d * gbps / 1000.0) if d else 0.0
                    for tx, d in zip(self.port_series(node, port, "tx_bytes"),
                                     self.durations_ps())]
        return list(self.port_values[column][i::self.nports])

    def port_table(self) -> dict[str, Any]:
        """Every port column of docs/timeseries.md, long format (``{name: column}``)."""
        out, dur = self._table(self.ports, self.port_values, self.nports)
        np = _numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            out["utilisation"] = np.where(
                dur > 0, out["tx_bytes"] * 8.0 / (dur * out["link_gbps"] / 1000.0), 0.0)
            out["paused_frac"] = np.where(dur > 0, out["paused_ps"] / dur, 0.0)
        return {name: out[name] for name, _ in PORT_SCHEMA}

    def host_table(self) -> dict[str, Any]:
        """Every host column of docs/timeseries.md, long format (``{name: column}``)."""
        out, dur = self._table(self.hosts, self.host_values, self.nhosts)
        np = _numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            out["goodput_gbps"] = np.where(dur > 0, out["rx_payload_bytes"] * 8000.0 / dur, 0.0)
        return {name: out[name] for name, _ in HOST_SCHEMA}

    def _table(self, static, values, n):
        np = _numpy()
        e = np.asarray(self.edges, dtype=np.int64)
        nb = len(e) - 1
        out = {"bin": np.repeat(np.arange(nb, dtype=np.int32), n),
               "t_start_us": np.repeat(e[:-1] / PS_PER_US, n),
               "t_end_us": np.repeat(e[1:] / PS_PER_US, n)}
        for name, per_entity in static.items():
            per_entity = list(per_entity)
            if per_entity and isinstance(per_entity[0], str):
                uniques = sorted(set(per_entity))
                index = {v: i for i, v in enumerate(uniques)}
                codes = np.array([index[v] for v in per_entity], dtype=np.int32)
                out[name] = Coded(np.tile(codes, nb), uniques)
            else:
                out[name] = np.tile(np.asarray(per_entity), nb)
        for name, col in values.items():
            a = np.asarray(col, dtype=np.int64)
            out[name] = a.astype(bool) if name == "paused" else a
        return out, np.repeat(e[1:] - e[:-1], n)

    def write(self, directory: str, fmt: str = "parquet") -> list[str]:
        """``directory``/ports.parquet and hosts.parquet (or .csv); returns the paths."""
        fmt = format_of("", fmt)
        os.makedirs(directory, exist_ok=True)
        meta = {"gse_timeseries": json.dumps(self.meta, sort_keys=True)}
        names = FILES[fmt]
        paths = [os.path.join(directory, name) for name in names]
        write_table(paths[0], self.port_table(), PORT_SCHEMA, meta, fmt)
        write_table(paths[1], self.host_table(), HOST_SCHEMA, meta, fmt)
        return paths

    @classmethod
    def read(cls, directory: str) -> "TimeSeries":
        """A time series written by :meth:`write` (Parquet or CSV, whichever is there)."""
        for fmt in ("parquet", "csv"):
            ports_path, hosts_path = (os.path.join(directory, n) for n in FILES[fmt])
            if os.path.exists(ports_path):
                break
        else:
            raise OSError("no time series in %s (expected ports.parquet or ports.csv, "
                          "written by --sample-us)" % directory)
        pcols, meta = read_table(ports_path)
        hcols, _ = read_table(hosts_path)
        info = json.loads(meta.get("gse_timeseries", "{}"))
        nports = int(info.get("ports", 0)) or len(set(zip(pcols["node"], pcols["port"])))
        nhosts = int(info.get("hosts", 0)) or len(set(hcols["host"]))
        nb = len(pcols["bin"]) // nports if nports else 0
        edges = [round(t * PS_PER_US) for t in pcols["t_start_us"][::nports]]
        if nb:
            edges.append(round(pcols["t_end_us"][-1] * PS_PER_US))
        ports = {name: pcols[name][:nports] for name, _ in PORT_STATIC}
        hosts = {name: hcols[name][:nhosts] for name, _ in HOST_STATIC}
        pv = {name: pcols[name] for name, _ in PORT_DYNAMIC}
        hv = {name: hcols[name] for name, _ in HOST_DYNAMIC}
        return cls(edges, ports, pv, hosts, hv, info)


def _numpy():
    try:
        import numpy
    except ImportError as exc:
        raise RuntimeError("writing a time series needs numpy: pip install "
                           "'gse-transport[data]'") from exc
    return numpy
