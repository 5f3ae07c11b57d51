"""The API's figures (gse.api.plots, docs/api.md "Plots"): matplotlib Figures drawn from
Results by the code behind ``gse plot``, never shown, matplotlib loaded only when asked."""

import subprocess
import sys

import pytest

import gse

pytest.importorskip("matplotlib")

SCENARIO = gse.Scenario(topology={"name": "fat-tree", "k": 4},
                        workload={"kind": "incast", "senders": 6, "size": 200_000},
                        failures=["tier:agg-core:25%@20us"], detect_us=30, sample_us=5)


@pytest.fixture(scope="module")
def results():
    return gse.compare(SCENARIO, protocols=["gse", "roce"], log=lambda *a: None)


def _lines(ax):
    return {line.get_label(): line for line in ax.get_lines()}


def test_an_fct_cdf_has_a_line_per_result_of_a_comparison(results):
    from matplotlib.figure import Figure
    fig = gse.plot_fct_cdf(results)
    assert isinstance(fig, Figure)
    labels = list(_lines(fig.axes[0]))
    assert [label.split(" ")[0] for label in labels] == ["gse", "roce"]
    # one result, or a list of them (a repeated protocol keeps its own line)
    assert len(results["gse"].plot_fct_cdf().axes[0].get_lines()) == 1
    both = gse.plot_fct_cdf([results["gse"], results["gse"]], log_x=True)
    assert [lb.split(" (")[0] for lb in _lines(both.axes[0])] == ["gse", "gse"]
    assert both.axes[0].get_xscale() == "log"
    # the CDF ends at 1 at the slowest message
    line = fig.axes[0].get_lines()[1]
    assert line.get_ydata()[-1] == 1.0
    assert max(line.get_xdata()) == pytest.approx(results["roce"].summary.fct_us["max"],
                                                  abs=0.001)


def test_the_queue_heatmap_shows_the_summarys_peaks(results):
    r = results["roce"]
    fig = r.plot_queue_heatmap()
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left")]
    peak = r.summary.peak_queue_bytes["edge"]
    assert peak > 0
    assert any(t.startswith("edge uplinks") and format(peak, ",") in t for t in titles)
    only = gse.plot_queue_heatmap(r, tiers=["edge:up"], value="queue_bytes", end_us=100)
    assert len([ax for ax in only.axes if ax.get_title(loc="left")]) == 1


def test_goodput_marks_the_failure_and_its_detection(results):
    fig = gse.plot_goodput(results)
    lines = _lines(fig.axes[0])
    assert {"gse", "roce"} <= set(lines)
    fail = lines["tier:agg-core:25%@20us fails"]
    assert list(fail.get_xdata()) == [20.0, 20.0]
    assert list(lines["detected"].get_xdata()) == [50.0, 50.0]
    assert set(_lines(results["gse"].plot_goodput(failures=False).axes[0])) == {"gse"}
    per_host = results["gse"].plot_goodput(hosts=[0, 1])
    assert {"gse host 0", "gse host 1"} <= set(_lines(per_host.axes[0]))


def test_a_timeseries_metric_has_a_line_per_tier(results):
    fig = results["roce"].plot_timeseries("utilisation")
    labels = set(_lines(fig.axes[0]))
    assert {"edge uplinks", "agg downlinks", "host NICs (up)"} <= labels
    goodput = results["roce"].plot_timeseries("goodput_gbps")
    assert "roce" in _lines(goodput.axes[0])
    with pytest.raises(ValueError, match="metric 'queue' is not one of queue_bytes"):
        results["roce"].plot_timeseries("queue")
    with pytest.raises(ValueError, match="aggregate: expected max, mean or sum"):
        results["roce"].plot_timeseries("queue_bytes", aggregate="median")


def test_a_figure_without_a_time_series_says_how_to_get_one():
    r = gse.run(SCENARIO.replace(sample_us=None, failures=[]), log=lambda *a: None)
    for draw in (r.plot_queue_heatmap, r.plot_goodput):
        with pytest.raises(ValueError, match="needs a time series: set sample_us"):
            draw()
    assert r.plot_fct_cdf().axes[0].get_lines()


def test_figures_are_drawn_without_pyplot_and_save(tmp_path, results):
    code = ("import sys, gse\n"
            "r = gse.run(gse.Scenario(topology={'name': 'fat-tree', 'k': 4},"
            " workload={'kind': 'incast', 'senders': 3, 'size': 20000}, sample_us=5),"
            " log=lambda *a: None)\n"
            "assert 'matplotlib' not in sys.modules\n"
            "r.plot_queue_heatmap().savefig(sys.argv[1])\n"
            "assert 'matplotlib.pyplot' not in sys.modules\n")
    out = tmp_path / "q.png"
    subprocess.run([sys.executable, "-c", code, str(out)], check=True)
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_the_command_lines_savers_write_the_same_drawings(tmp_path, results):
    from gse.metrics import plots
    runs = {p: r.run for p, r in results.items()}
    assert plots.plot_fct_cdfs(runs, str(tmp_path / "f.svg"), title="cmp").endswith("f.svg")
    assert (tmp_path / "f.svg").read_text().startswith("<?xml")
    panels = [("healthy", {"gse": ([0.0, 5.0], [1000.0, 0.0])}),
              ("failed", {"gse": ([0.0, 5.0], [500.0, 0.0])}),
              ("failed late", {"gse": ([0.0, 5.0], [900.0, 0.0])})]
    plots.plot_goodput(panels, str(tmp_path / "g.png"), fail_us=2.0, xmax_us=6.0)
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"
