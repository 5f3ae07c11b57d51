"""Rates over time: DCQCN reaction points' logs on a time grid, and how fast flows converge.

``RoceHost.rate_log`` (enabled by ``run_simulation(trace_rates=True)``) holds, per flow,
the steps of its reaction point's rate: ``[(t_ps, Rc, Rt, alpha), ...]`` in Mb/s.  Here
they are sampled on a grid (``sample_steps``) as the reference simulator's monitor samples
its queue pairs every microsecond, written as CSV, and reduced to the convergence figures
of experiments/validate_dcqcn.py, defined as the reference analysis defines them:

* ``spread`` at a sample: (max - min) / max of the active flows' values;
* ``hold``: the earliest sample, not before the first rate cut, from which the spread stays
  within ``tol`` for ``hold_ps`` (or to the end of the interval);
* ``settle``: the time after which the spread stays within ``tol`` to the end;
* ``frac``: the share of samples within ``tol``.

Times returned are from the interval's start, in µs; None where never met.
"""

import csv
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def sample_steps(steps: Sequence[Sequence[float]], times: Iterable[int],
                 field: int = 1) -> list[Any]:
    """The value of a step function ``steps`` ([(t, v1, v2, ...)] ascending) at each of
    ``times`` (ascending): the last step at or before t, None before the first."""
    out: list[Any] = []
    i = -1
    n = len(steps)
    for t in times:
        while i + 1 < n and steps[i + 1][0] <= t:
            i += 1
        out.append(steps[i][field] if i >= 0 else None)
    return out


def grid(t0_ps: int, t1_ps: int, step_ps: int) -> list[int]:
    return list(range(t0_ps, t1_ps + 1, step_ps))


def window_rate(times: Sequence[int], counts: Sequence[Any],
                window_ps: int) -> list[float | None]:
    """Rate in Gb/s over the trailing ``window_ps`` from cumulative byte ``counts`` sampled
    at ``times`` (a regular grid); None for the first window."""
    step = times[1] - times[0] if len(times) > 1 else window_ps
    lag = max(1, window_ps // step)
    out: list[float | None] = []
    for i in range(len(times)):
        if i < lag or counts[i] is None or counts[i - lag] is None:
            out.append(None)
        else:
            out.append((counts[i] - counts[i - lag]) * 8 / ((times[i] - times[i - lag]) / 1e3))
    return out


def convergence(times: Sequence[int], series: Mapping[Any, Sequence[Any]],
                t_from: int, t_to: int, t_cut: int, tol: float = 0.10,
                hold_ps: int = 500_000_000) -> dict[str, float | None]:
    """``hold``, ``settle``, ``frac`` (module docstring) of the flows in ``series`` (name ->
    values on ``times``) over [t_from, t_to], ``hold`` not before ``t_cut``."""
    samples = []
    for i, t in enumerate(times):
        if t < t_from or t > t_to:
            continue
        values = [v[i] for v in series.values()]
        if any(x is None for x in values):
            continue
        top = max(values)
        spread = (top - min(values)) / top if top > 0 else 0.0
        samples.append((t, spread <= tol))
    out: dict[str, float | None] = {"hold": None, "settle": None, "frac": None}
    if not samples:
        return out
    out["frac"] = sum(ok for _, ok in samples) / len(samples)
    last_ok = None
    for t, ok in reversed(samples):
        if not ok:
            break
        last_ok = t
    if last_ok is not None:
        out["settle"] = (last_ok - t_from) / 1e6
    n = len(samples)
    next_bad = [n] * (n + 1)
    for i in range(n - 1, -1, -1):
        next_bad[i] = i if not samples[i][1] else next_bad[i + 1]
    for i, (t, ok) in enumerate(samples):
        if t < t_cut or not ok:
            continue
        end = min(t + hold_ps, t_to)
        j = next_bad[i]
        if j == n or samples[j][0] > end:
            out["hold"] = (t - t_from) / 1e6
            break
    return out


def jain(values: Iterable[float]) -> float | None:
    vs = [v for v in values if v]
    if not vs:
        return None
    return sum(vs) ** 2 / (len(vs) * sum(v * v for v in vs))


def write_rate_csv(path: str, times: Sequence[int],
                   flows: Mapping[Any, Sequence[Sequence[float]]]) -> None:
    """One row per sample and flow: ``t_us, flow, rc_gbps, rt_gbps, alpha`` from the flows'
    step logs (``flows``: name -> [(t_ps, Rc, Rt, alpha), ...])."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_us", "flow", "rc_gbps", "rt_gbps", "alpha"])
        sampled = {name: [sample_steps(steps, times, k) for k in (1, 2, 3)]
                   for name, steps in flows.items()}
        for i, t in enumerate(times):
            for name, (rc, rt, alpha) in sampled.items():
                if rc[i] is not None:
                    w.writerow([t / 1e6, name, round(rc[i] / 1000, 6), round(rt[i] / 1000, 6),
                                round(alpha[i], 6)])
