#!/usr/bin/env python3
"""The headline figures of README.md and docs/*.md, measured and written in one command.

    python experiments/doc_figures.py                   # every group, a few minutes
    python experiments/doc_figures.py --only ring-acceptance --only speed
    python experiments/doc_figures.py --check           # are the virtual-clock blocks current?
    python experiments/doc_figures.py --list

Each *group* runs what its figures come from (simulations, replays, the simulator's
benchmark in its own processes) and renders blocks of the docs, which are marked in their
Markdown source, a paragraph or a table, or a phrase within a line::

    <!-- figures:NAME -->generated text<!-- /figures:NAME -->

``docs/figures.md`` is generated whole: the machine (CPU, cores, memory, kernel, Python),
the date and the commit of the run, and per group its command, when and on what it was
measured and its values.  Figures on the simulation's virtual clock are exact: the same
commit gives the same text on any machine and in either build (``--check`` compares).
Wall-clock figures name the machine and its load average and give CPU time beside wall
time; they are never asserted by a test.

Groups that read public third-party files (``GSE_THIRD_PARTY_DIR``, laid out as
tests/test_third_party.py describes) are skipped without them: their blocks and their
section of docs/figures.md keep the figures of the run that last measured them, and that
section says when and where that was.
"""

import argparse
import datetime
import glob
import json
import os
import platform
import re
import subprocess
import sys
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "experiments"))

FIGURES_MD = os.path.join(ROOT, "docs", "figures.md")
MiB = 1 << 20
WIDTH = 90                        # the docs' line length


class Group:
    """A set of figures: ``measure() -> values``, ``render(values) -> {block: text}``,
    ``table(values) -> Markdown lines`` for docs/figures.md."""

    def __init__(self, name, kind, title, command, measure, render, table, needs=(),
                 slow=False, blocks=None):
        self.name, self.kind, self.title, self.command = name, kind, title, command
        self.blocks = blocks or (name,)       # the marked blocks it renders
        self.measure, self.render, self.table = measure, render, table
        self.needs = needs            # paths under GSE_THIRD_PARTY_DIR
        self.slow = slow

    def missing(self):
        """What it needs and is not there (a reason to skip), or None."""
        if not self.needs:
            return None
        base = os.environ.get("GSE_THIRD_PARTY_DIR")
        if not base:
            return "GSE_THIRD_PARTY_DIR is not set (third-party files: %s)" % ", ".join(
                self.needs)
        for n in self.needs:
            if not os.path.exists(os.path.join(base, n)):
                return "%s is not there" % os.path.join(base, n)
        return None


def third_party(*parts):
    return os.path.join(os.environ["GSE_THIRD_PARTY_DIR"], *parts)


def us(ps):
    return ps / 1e6


def fmt(v, nd=1):
    """A figure with thousands separators, as the docs write them."""
    return "{:,.{}f}".format(v, nd)


# -- README: the k=8 figures beside htsim (virtual clock) ------------------------------------

# (variant, workload, label, the htsim model it is held against)
HTSIM_ROWS = [("gse", "permutation", "GSE permutation", "UET "),
              ("roce-htsim", "permutation", "RoCE+PFC permutation (`--baseline htsim`)", ""),
              ("roce-dcqcn", "permutation", "RoCE+PFC+DCQCN permutation (`deployed`)", ""),
              ("gse", "incast", "GSE incast 32:1", "UET "),
              ("roce-htsim", "incast", "RoCE+PFC incast 32:1 (`--baseline htsim`)", ""),
              ("roce-dcqcn", "incast", "RoCE+PFC+DCQCN incast 32:1 (`deployed`)", "")]
SEEDS = (1, 2, 3)


def htsim_cells():
    """The table's htsim column, one cell per row of ``HTSIM_ROWS``: htsim's figures from
    experiments/data/htsim_anchors.json (as experiments/validate_htsim.py compares them)."""
    import validate_htsim
    cells = []
    for variant, workload, _, model in HTSIM_ROWS:
        ref = validate_htsim.HTSIM.get((variant, workload))
        if ref is None:
            cells.append("")
        elif workload == "permutation":
            cells.append("%s%.1f / %.1f, %.1f Gb/s" % (model, ref["fct_p50_us"],
                                                       ref["fct_p99_us"], ref["goodput_p50_gbps"]))
        else:
            cells.append("%s%.0f / %.0f" % (model, ref["fct_p50_us"], ref["fct_max_us"]))
    return cells


def measure_htsim():
    import validate_htsim
    out = {}
    for variant, workload, _, _ in HTSIM_ROWS:
        runs = [validate_htsim.run(variant, workload, seed) for seed in SEEDS]
        out["%s/%s" % (variant, workload)] = {
            key: sum(r[key] for r in runs) / len(runs)
            for key in ("fct_p50_us", "fct_p99_us", "fct_max_us", "goodput_p50_gbps")} | {
            "drops": sum(r["drops"] for r in runs), "lost": sum(r["lost"] for r in runs)}
    return out


def render_htsim(v):
    lines = ["| run | FCT p50 / p99 (µs) | median Gb/s | last of incast (µs) | drops | htsim |",
             "|---|---|---|---|---|---|"]
    for (variant, workload, label, _), htsim in zip(HTSIM_ROWS, htsim_cells()):
        r = v["%s/%s" % (variant, workload)]
        if workload == "permutation":
            cells = ("%.1f / %.1f" % (r["fct_p50_us"], r["fct_p99_us"]),
                     "%.1f" % r["goodput_p50_gbps"], "")
        else:
            cells = ("%.0f (p50)" % r["fct_p50_us"], "", "%.0f" % r["fct_max_us"])
        lines.append("| %s | %s | %s | %s | %d | %s |" % ((label,) + cells
                                                          + (r["drops"], htsim)))
    return {"htsim-k8": "\n".join(lines)}


def table_htsim(v):
    lines = ["| variant/workload | FCT p50 µs | p99 µs | max µs | goodput p50 Gb/s | drops | "
             "lost |", "|---|---:|---:|---:|---:|---:|---:|"]
    for k, r in v.items():
        lines.append("| %s | %.1f | %.1f | %.1f | %.2f | %d | %d |" % (
            k, r["fct_p50_us"], r["fct_p99_us"], r["fct_max_us"], r["goodput_p50_gbps"],
            r["drops"], r["lost"]))
    return lines


# -- README: the simulator's speed (wall clock) ----------------------------------------------

SPEED_RUNS = (("perm-k8", "compiled"), ("perm-k8", "pure"), ("perm-k16", "compiled"))


def measure_speed():
    out = {}
    for scenario, build in SPEED_RUNS:
        env = dict(os.environ)
        env.pop("GSE_PURE_PYTHON", None)
        if build == "pure":
            env["GSE_PURE_PYTHON"] = "1"
        load0 = os.getloadavg()[0]
        p = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "bench_sim.py"),
                            "--child", "--scenario", scenario], env=env, capture_output=True,
                           text=True, check=True)
        row = json.loads(p.stdout.strip().splitlines()[-1])
        if row["build"] != build:
            raise RuntimeError("%s ran on the %s build, not the %s one (./dev builds the "
                               "compiled modules)" % (scenario, row["build"], build))
        row["load_before"], row["load_after"] = round(load0, 2), round(os.getloadavg()[0], 2)
        out["%s/%s" % (scenario, build)] = {k: row[k] for k in (
            "events", "wall_s", "cpu_s", "load_before", "load_after", "lost")}
    return out


def render_speed(v):
    k8c, k8p, k16 = (v["perm-k8/compiled"], v["perm-k8/pure"], v["perm-k16/compiled"])
    cpus = os.cpu_count()
    load = max(r["load_before"] for r in v.values())
    return {"speed": "runs the 128-host permutation (%.2f M events) in %.2f s compiled and "
                     "%.1f s in pure Python, and the 1,024-host permutation (%.1f M events) "
                     "in %.1f s compiled (wall clock on %d CPUs at load average up to %.1f; "
                     "CPU time %.2f, %.1f and %.1f s; [docs/figures.md](docs/figures.md))"
                     % (k8c["events"] / 1e6, k8c["wall_s"], k8p["wall_s"],
                        k16["events"] / 1e6, k16["wall_s"], cpus, load, k8c["cpu_s"],
                        k8p["cpu_s"], k16["cpu_s"])}


def table_speed(v):
    lines = ["| run | build | events | wall s | CPU s | load avg before / after |",
             "|---|---|---:|---:|---:|---|"]
    for key, r in v.items():
        scenario, build = key.split("/")
        lines.append("| %s | %s | %s | %.2f | %.2f | %.2f / %.2f |" % (
            scenario, build, fmt(r["events"], 0), r["wall_s"], r["cpu_s"], r["load_before"],
            r["load_after"]))
    return lines


# -- docs/traces.md: ring all-reduce acceptance (virtual clock) ------------------------------

RINGS = (("rail", 8, MiB), ("rail", 16, MiB), ("rail", 8, 4 * MiB), ("fat4", 8, MiB),
         ("fat4", 16, MiB), ("fat4", 8, 4 * MiB))


def fabric(name):
    from topologies.fattree import fat_tree
    from topologies.spineleaf import spine_leaf_rail
    return spine_leaf_rail(servers=8) if name == "rail" else fat_tree(4)


def measure_rings():
    from gse.workloads.collectives import Collective
    from gse.workloads.replay import replay, ring_bound_ps
    out = {}
    for name, n, size in RINGS:
        topo = fabric(name)
        r = replay(topo, [Collective(1, "all_reduce", range(n), size)], "gse", seed=1)
        bound, one_way = ring_bound_ps(topo, list(range(n)), size)
        out["%s/%d/%d" % (name, n, size)] = {"time_us": us(r.collectives[0].time_ps()),
                                              "bound_us": us(bound), "one_way_us": us(one_way),
                                              "lost": r.summary["lost"]}
    return out


def render_rings(v):
    names = {"rail": "rail Spine-Leaf", "fat4": "k=4 Fat-Tree"}
    lines = ["| fabric | ranks | S | mean one-way µs | completion µs | bound µs | ratio |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, n, size in RINGS:
        r = v["%s/%d/%d" % (name, n, size)]
        lines.append("| %s | %d | %d MiB | %.2f | %.1f | %.1f | %.3f |" % (
            names[name], n, size // MiB, r["one_way_us"], r["time_us"], r["bound_us"],
            r["time_us"] / r["bound_us"]))
    return {"ring-acceptance": "\n".join(lines)}


def table_rings(v):
    return render_rings(v)["ring-acceptance"].splitlines()


# -- docs/traces.md: ASTRA-sim's custom ring all-reduce (virtual, third-party) ---------------

CUSTOM_RING = "astra-sim/examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB"


def measure_custom_ring():
    from gse.workloads.replay import hop_one_way_ps, replay, ring_bound_ps
    from gse.workloads.traces import load_trace
    t = load_trace(third_party(CUSTOM_RING))
    compute = max(sum(op.dur_ps for op in p.ops if op.kind == "compute")
                  for p in t.programs.values())
    out = {}
    for name in ("rail", "fat4"):
        topo = fabric(name)
        r = replay(topo, t, "gse", seed=1)
        ring, one_way = ring_bound_ps(topo, list(range(8)), MiB)
        slowest = max(hop_one_way_ps(topo, i, (i + 1) % 8) for i in range(8))
        chunk = MiB // 8 * 8 * 1000 / topo.host_link(0).gbps
        out[name] = {"end_us": r.summary["replay_time_us"], "compute_us": us(compute),
                     "ring_bound_us": us(ring), "chunk_us": us(chunk),
                     "slowest_hop_us": us(slowest), "mean_hop_us": us(one_way),
                     "slowest_bound_us": us(14 * (chunk + slowest) + compute),
                     "lost": r.summary["lost"],
                     "not_done": r.summary["programs"]["ops_not_done"]}
    return out


def render_custom_ring(v):
    rail, fat = v["rail"], v["fat4"]
    return {"custom-ring": (
        "**ASTRA-sim's custom ring all-reduce** (`custom_ring_allreduce_8npus_1MB`: per rank "
        "14 COMM_SEND/COMM_RECV pairs of 128 KiB, each receive depending on the rank's own "
        "send, and 7 reductions of 7 µs) on 8 NICs of one server of the rail Spine-Leaf "
        "(every hop alike): all ranks' programs end at %.1f µs, against ring bound %.1f µs "
        "+ the trace's %.0f µs of compute = %.1f µs (%.3f). On a k=4 Fat-Tree the ring's "
        "hops differ (mean one-way %.2f µs, the slowest %.2f µs), and since each step "
        "waits both for the rank's own send to be delivered and for the incoming chunk, "
        "every step costs the slowest hop: %.1f µs against 14 × (chunk time %.2f µs + "
        "%.2f µs) + %.0f µs = %.1f µs (%.3f), %.0f%% above the mean-hop bound."
        % (rail["end_us"], rail["ring_bound_us"], rail["compute_us"],
           rail["ring_bound_us"] + rail["compute_us"],
           rail["end_us"] / (rail["ring_bound_us"] + rail["compute_us"]),
           fat["mean_hop_us"], fat["slowest_hop_us"], fat["end_us"], fat["chunk_us"],
           fat["slowest_hop_us"], fat["compute_us"], fat["slowest_bound_us"],
           fat["end_us"] / fat["slowest_bound_us"],
           100 * (fat["end_us"] / (fat["ring_bound_us"] + fat["compute_us"]) - 1)))}


def table_keyed(v):
    keys = list(next(iter(v.values())))
    lines = ["| | %s |" % " | ".join(keys), "|---|%s" % ("---:|" * len(keys))]
    for name, r in v.items():
        lines.append("| %s | %s |" % (name, " | ".join(
            "%.6g" % r[k] if isinstance(r[k], float) else str(r[k]) for k in keys)))
    return lines


# -- docs/traces.md: param's 2-rank ResNet (virtual, third-party) ----------------------------

RESNET = "param/et_replay/tests/inputs/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz"


def measure_resnet():
    from gse.workloads.replay import replay
    from gse.workloads.traces import load_trace
    from topologies.fattree import fat_tree
    r = replay(fat_tree(4), load_trace(third_party(RESNET)), "gse", seed=1)
    busbw = [c.busbw_gbps() for c in r.collectives if c.coll.op == "all_reduce"]
    return {"resnet": {"time_ms": r.summary["replay_time_us"] / 1e3,
                       "busbw_min": min(busbw), "busbw_max": max(busbw),
                       "done": r.summary["collectives_done"], "lost": r.summary["lost"]}}


def render_resnet(v):
    r = v["resnet"]
    return {"resnet-2gpu": "they take %.2f ms (all-reduce busbw %.1f-%.1f Gb/s)"
                           % (r["time_ms"], r["busbw_min"], r["busbw_max"])}


# -- docs/traces.md: uet-htsim's triggered all-to-all (virtual, third-party) -----------------

SERIAL = "uet-htsim/htsim/sim/datacenter/connection_matrices/alltoall_serial_16n.cm"


def measure_serial():
    from gse.runtimes.sim.run import run_simulation
    from gse.workloads.cmfile import read_cm_workload
    from topologies.fattree import fat_tree
    out = {}
    for proto in ("gse", "roce"):
        w = read_cm_workload(third_party(SERIAL))
        s = run_simulation(fat_tree(4), w.messages, proto, triggers=w, seed=1).summary
        out[proto] = {"last_us": s["last_finish_us"], "fct_p50_us": s["fct_us"]["p50"],
                      "fct_max_us": s["fct_us"]["max"], "fired": s["triggers_fired"],
                      "lost": s["lost"]}
    return out


def render_serial(v):
    g, r = v["gse"], v["roce"]
    return {"triggered-a2a": (
        "**uet-htsim's `alltoall_serial_16n.cm`** (every host sends 15 × 2 MB, each flow "
        "started by the previous one's `send_done_trigger`), k=4 Fat-Tree, 100 Gb/s, 1 µs "
        "links: the last flow ends at %s µs with GSE against 2,946.44 µs in htsim's UEC run "
        "(%+.1f%%); per-flow FCT p50 %.1f µs (htsim 189.9), max %.1f µs (htsim 243.6); %d "
        "triggers fired, each flow starting at the instant its predecessor's sender had it "
        "acknowledged, as in htsim. RoCE/PFC with per-flow ECMP takes %s µs."
        % (fmt(g["last_us"]), 100 * (g["last_us"] / 2946.44 - 1), g["fct_p50_us"],
           g["fct_max_us"], g["fired"], fmt(r["last_us"], 0)))}


# -- docs/traces.md: 64 GPUs on the rail Spine-Leaf (virtual, slow) --------------------------

RAIL_SEEDS = (1, 2)


def measure_rail():
    import replay_rail
    _, results = replay_rail.run_study(RAIL_SEEDS, ["gse", "roce"], log=lambda line: None)
    out = {}
    for workload, by_proto in results.items():
        for proto, runs in by_proto.items():
            row = {k: sum(run["collectives"][k] for run in runs) / len(runs)
                   for k in runs[0]["collectives"]}
            row["whole workload"] = sum(run["total_us"] for run in runs) / len(runs)
            row["pfc_pauses"] = sum(run["pfc_pauses"] or 0 for run in runs)
            row["trims"] = sum(run["trims"] for run in runs)
            row["lost"] = sum(run["lost"] for run in runs)
            out["%s/%s" % (workload, proto)] = row
    return out


def render_rail(v):
    lines = ["| workload | collective | GSE µs | RoCE/PFC µs | RoCE / GSE |",
             "|---|---|---:|---:|---:|"]
    notes = []
    for workload in ("dp-step", "dp-step-rail", "moe"):
        g, r = v["%s/gse" % workload], v["%s/roce" % workload]
        for k in g:
            if k in ("pfc_pauses", "trims", "lost"):
                continue
            lines.append("| %s | %s | %s | %s | %.2f |" % (workload, k, fmt(g[k]), fmt(r[k]),
                                                          r[k] / g[k]))
        notes.append("%s: GSE trims %s packets, RoCE/PFC pauses %s times"
                     % (workload, fmt(g["trims"], 0), fmt(r["pfc_pauses"], 0)))
    return {"replay-rail": "\n".join(lines) + "\n\nSummed over the seeds: %s." % "; ".join(
        notes)}


GROUPS = [
    Group("htsim-k8", "virtual", "k=8 permutation and 32:1 incast beside htsim (README)",
          "python experiments/validate_htsim.py --seeds 1 2 3", measure_htsim, render_htsim,
          table_htsim),
    Group("speed", "wall", "the simulator's speed (README)",
          "python experiments/bench_sim.py --scenario perm-k8 --scenario perm-k16 "
          "(and GSE_PURE_PYTHON=1 for perm-k8)", measure_speed, render_speed, table_speed),
    Group("ring-acceptance", "virtual", "ring all-reduce against its bound (docs/traces.md)",
          "tests/test_collectives.py::test_ring_all_reduce_within_10_percent_of_the_bound",
          measure_rings, render_rings, table_rings),
    Group("custom-ring", "virtual", "ASTRA-sim's custom ring all-reduce (docs/traces.md)",
          "gse replay $GSE_THIRD_PARTY_DIR/%s --topology spine-leaf-rail --servers 8" % (
              CUSTOM_RING), measure_custom_ring, render_custom_ring, table_keyed,
          needs=(CUSTOM_RING,)),
    Group("resnet-2gpu", "virtual", "param's 2-rank ResNet trace (docs/traces.md)",
          "gse replay $GSE_THIRD_PARTY_DIR/%s --topology fat-tree --k 4" % RESNET,
          measure_resnet, render_resnet, table_keyed, needs=(RESNET,)),
    Group("triggered-a2a", "virtual", "uet-htsim's triggered all-to-all (docs/traces.md)",
          "gse sim --topology fat-tree --k 4 --traffic-file $GSE_THIRD_PARTY_DIR/%s" % SERIAL,
          measure_serial, render_serial, table_keyed, needs=(SERIAL,)),
    Group("replay-rail", "virtual", "64 GPUs on the rail Spine-Leaf (docs/traces.md)",
          "python experiments/replay_rail.py --seeds 1 2 --protocols gse,roce", measure_rail,
          render_rail, lambda v: render_rail(v)["replay-rail"].splitlines(), slow=True),
]
BY_NAME = {g.name: g for g in GROUPS}

# -- the docs' marked blocks -----------------------------------------------------------------

MARK = re.compile(r"<!-- figures:([a-z0-9-]+) -->(.*?)<!-- /figures:\1 -->", re.S)


def doc_paths():
    return [os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "*.md")))


def blocks_in_docs():
    """{block: (path, text)} of every marked block of README.md and docs/*.md (a block
    marked twice is an error: the script would not know which is meant)."""
    out = {}
    for path in doc_paths():
        if os.path.abspath(path) == FIGURES_MD:
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in MARK.finditer(text):
            if m.group(1) in out:
                raise ValueError("block %r is marked in both %s and %s"
                                 % (m.group(1), out[m.group(1)][0], path))
            out[m.group(1)] = (path, m.group(2))
    return out


def write_blocks(rendered):
    """Put each rendered block in place; returns the files changed."""
    where = blocks_in_docs()
    missing = sorted(set(rendered) - set(where))
    if missing:
        raise ValueError("no marked block for %s in README.md or docs/*.md" % missing)
    changed = []
    for path in sorted({where[b][0] for b in rendered}):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new = MARK.sub(lambda m: "<!-- figures:%s -->%s<!-- /figures:%s -->" % (
            m.group(1), rendered[m.group(1)], m.group(1)) if m.group(1) in rendered
            else m.group(0), text)
        if new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            changed.append(os.path.relpath(path, ROOT))
    return changed


def rendered_blocks(group, values):
    """{block: text as marked}: paragraphs (wrapped as the docs are) and tables stand
    between blank lines inside their markers, a phrase stays inside its line."""
    out = {}
    for b, t in group.render(values).items():
        if "\n" in t or t.startswith(("|", "**")):
            t = "\n\n%s\n\n" % "\n\n".join(
                part if part.startswith("|") else textwrap.fill(
                    part, WIDTH, break_long_words=False, break_on_hyphens=False)
                for part in t.split("\n\n"))
        out[b] = t
    return out


# -- provenance and docs/figures.md ----------------------------------------------------------

def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(ln for ln in f if ln.startswith("MemTotal")).split()[1])
        mem = ", %.0f GiB" % (kb / 2 ** 20)
    except (OSError, StopIteration):
        pass
    from gse import _build
    return "%s, %d logical CPUs%s, %s %s, Python %s, %s build" % (
        cpu, os.cpu_count(), mem, platform.system(), platform.release(),
        platform.python_version(), _build.build())


def commit():
    def git(*args):
        return subprocess.run(["git", "-C", ROOT] + list(args), capture_output=True,
                              text=True).stdout.strip()
    sha = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return sha + (" (with uncommitted changes)" if dirty else "")


def section(group, values, stamp, load):
    clock = ("virtual clock: exact" if group.kind == "virtual" else
             "wall clock; load average (1 min) %.2f before, %.2f after" % load)
    lines = ["<!-- figures:group:%s -->" % group.name, "## %s: %s" % (group.name, group.title),
             "", "Measured %s at commit %s on %s (%s)." % (stamp["date"], stamp["commit"],
                                                          stamp["machine"], clock),
             "", "Command: `%s`" % group.command, ""]
    lines += group.table(values)
    lines += ["", "<!-- /figures:group:%s -->" % group.name]
    return "\n".join(lines)


def old_sections():
    if not os.path.exists(FIGURES_MD):
        return {}
    with open(FIGURES_MD, encoding="utf-8") as f:
        text = f.read()
    return {m.group(1): m.group(0) for m in re.finditer(
        r"<!-- figures:group:([a-z0-9-]+) -->.*?<!-- /figures:group:\1 -->", text, re.S)}


def write_figures_md(sections, stamp, skipped):
    old = old_sections()
    parts = ["# Headline figures (generated)", "",
             "Written by `python experiments/doc_figures.py`, which also rewrites the marked "
             "blocks (`<!-- figures:NAME -->`) of README.md and docs/*.md: edit the script, "
             "not these files. Figures on the simulation's virtual clock are exact for a "
             "commit; wall-clock figures depend on the machine and its load, named with "
             "each group, and give CPU time beside wall time.", "",
             "Covered: README.md (the simulator's speed, the k=8 table beside htsim) and "
             "docs/traces.md (its Figures). The other documents quote figures from the "
             "experiments they name (docs/comparison.md, fabric-mode.md, failures.md, "
             "mininet.md, scale.md, udp-runtime.md, compiled-build.md, ...); they are not "
             "generated here yet.", "",
             "Last run: %s, commit %s, on %s." % (stamp["date"], stamp["commit"],
                                                stamp["machine"]), ""]
    for g in GROUPS:
        if g.name in sections:
            parts += [sections[g.name], ""]
        elif g.name in old:
            parts += [re.sub(r"\n\n(Not measured by the last run \(.*?\); measured|Measured)",
                             lambda m: "\n\nNot measured by the last run (%s); measured"
                             % skipped.get(g.name, "not asked for"), old[g.name], count=1), ""]
    with open(FIGURES_MD, "w", encoding="utf-8") as f:
        f.write("\n".join(parts).rstrip() + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", choices=[g.name for g in GROUPS],
                    help="measure only these groups (the others' blocks stay as they are)")
    ap.add_argument("--skip-slow", action="store_true",
                    help="leave out the slow groups (%s)" % ", ".join(
                        g.name for g in GROUPS if g.slow))
    ap.add_argument("--check", action="store_true",
                    help="measure the virtual-clock groups and say whether the docs' blocks "
                         "match (exit 1 if not); writes nothing")
    ap.add_argument("--list", action="store_true", help="list the groups and exit")
    args = ap.parse_args(argv)
    if args.list:
        for g in GROUPS:
            print("%-16s %-7s %s%s%s" % (g.name, g.kind, g.title, " (slow)" if g.slow else "",
                                         " [needs %s]" % ", ".join(g.needs) if g.needs else ""))
        return 0
    chosen = [g for g in GROUPS if (not args.only or g.name in args.only)
              and not (args.skip_slow and g.slow) and not (args.check and g.kind != "virtual")]
    stamp = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
             "commit": commit(), "machine": machine()}
    print("doc figures: %s\n  commit %s\n  %s" % (stamp["date"], stamp["commit"],
                                                 stamp["machine"]), flush=True)
    docs = blocks_in_docs()
    rendered, sections, skipped, stale = {}, {}, {}, []
    for g in chosen:
        why = g.missing()
        if why:
            skipped[g.name] = why
            print("  %-16s skipped: %s" % (g.name, why), flush=True)
            continue
        load0, t0 = os.getloadavg()[0], time.perf_counter()
        values = g.measure()
        load1 = os.getloadavg()[0]
        blocks = rendered_blocks(g, values)
        rendered.update(blocks)
        sections[g.name] = section(g, values, stamp, (load0, load1))
        changes = [b for b, t in blocks.items() if docs.get(b, (None, None))[1] != t]
        stale += changes
        print("  %-16s %5.1f s%s" % (g.name, time.perf_counter() - t0, "" if not changes else
                                     "  (blocks that change: %s)" % ", ".join(changes)),
              flush=True)
    if args.check:
        print(("up to date" if not stale else "out of date: %s" % ", ".join(sorted(stale)))
              + ("" if not skipped else " (not checked: %s)" % ", ".join(sorted(skipped))))
        return 1 if stale else 0
    changed = write_blocks(rendered)
    write_figures_md(sections, stamp, skipped)
    print("written: %s" % ", ".join(changed + [os.path.relpath(FIGURES_MD, ROOT)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
