#!/usr/bin/env python3
"""This project and htsim side by side on the same ``.cm`` files, in alternation.

    python experiments/bench_htsim.py --htsim-dir DIR/uet-htsim/htsim/sim          # k=8, k=16
    python experiments/bench_htsim.py --htsim-dir DIR --protocol roce --cm perm_128n_128c_2MB.cm
    python experiments/bench_htsim.py --uec PATH/htsim_uec --cm FILE.cm --rounds 5 --json out.json

For every connection matrix, ``--rounds`` rounds, each running htsim and then ``gse sim``
(each in its own process, so wall time, CPU time (user + sys, ``os.wait4``) and peak RSS
are that process's alone, start-up included on both sides):

* ``--protocol gse``: ``htsim_uec -tm FILE`` (its defaults: 100 Gb/s, 1 us hops, 1-BDP
  queues with trimming, ECN 20-80%) against ``gse sim --topology fat-tree --k K
  --traffic-file FILE --protocol gse``;
* ``--protocol roce``: ``htsim_roce -nodes N -tm FILE -strat ecmp_host -paths 1 -mtu 4150``
  against ``gse sim ... --protocol roce --baseline htsim`` (the htsim-PFC profile).

K is the Fat-Tree arity whose k^3/4 hosts are the matrix's ``Nodes``.  Each side's flow
completion times are read back (htsim's ``Flow ... finished at T`` lines, the project's
``--records``), every flow of the matrix must have finished on both sides (else the row
says how many did not), and p50 / p99 / max FCT are computed the same way for both.

The table gives, per matrix, the median over the rounds of each side and the ratio
project / htsim of those medians, plus the median and range of the per-round ratios (the
two runs of a round are adjacent in time, so a change in the machine's load weighs on
both alike).  ``events`` and ``CPU ns/event`` are the project's (htsim does not print its
event count): the per-event cost per fabric size.  htsim's row gives its CPU over the
project's events on the same matrix in brackets, a yardstick for how htsim's own cost
per unit of work grows with the fabric; with several matrices a last line gives each
side's per-event cost against the first matrix's (the seed's question: does the cost per
event stay flat as the fabric grows?).  Figures are printed, never asserted.

htsim is neither shipped nor built here: ``--htsim-dir`` names a build of uet-htsim's
``htsim/sim`` (binaries in ``datacenter/``, matrices in
``datacenter/connection_matrices/``), or ``GSE_THIRD_PARTY_DIR`` laid out as
tests/test_third_party.py says.
"""

import argparse
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

DEFAULT_CMS = ("perm_128n_128c_2MB.cm", "perm_1024n_1024c_0u_2000000b.cm")
BINARY = {"gse": "htsim_uec", "roce": "htsim_roce"}
GNU_TIME = "/usr/bin/time"
# htsim's flow completion line, UEC (``Flow Uec_3_7 flowId 1 uecSrc 0 finished at 198.2
# ...``) and RoCE (``Flow Roce_3_7 3169 finished at 178.7 total bytes 482``): source and
# destination are in the name, the time (us from the run's start) after "finished at".
FINISHED = re.compile(r"^Flow [A-Za-z]+_(\d+)_(\d+) .*?finished at ([0-9.eE+-]+)")


class BenchError(Exception):
    """A missing binary or matrix, or output that cannot be read: the message names it."""


# -- inputs -----------------------------------------------------------------------------

def htsim_dir_default():
    base = os.environ.get("GSE_THIRD_PARTY_DIR")
    return os.path.join(base, "uet-htsim", "htsim", "sim") if base else None


def binary(args, protocol):
    """The htsim binary for ``protocol``: ``--uec``/``--roce``, else in ``--htsim-dir``."""
    path = args.uec if protocol == "gse" else args.roce
    if not path:
        if not args.htsim_dir:
            raise BenchError("no %s: give --%s PATH or --htsim-dir (or set "
                             "GSE_THIRD_PARTY_DIR)" % (BINARY[protocol],
                                                       "uec" if protocol == "gse" else "roce"))
        path = os.path.join(args.htsim_dir, "datacenter", BINARY[protocol])
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise BenchError("htsim binary %s not found or not executable: %s"
                         % (BINARY[protocol], path))
    return os.path.abspath(path)


def cm_path(args, name):
    """``name`` as given if it exists, else under ``--htsim-dir``'s connection matrices."""
    if os.path.isfile(name):
        return os.path.abspath(name)
    if args.htsim_dir and not os.path.isabs(name):
        path = os.path.join(args.htsim_dir, "datacenter", "connection_matrices", name)
        if os.path.isfile(path):
            return path
    raise BenchError("connection matrix not found: %s (a path, or a name under "
                     "--htsim-dir's datacenter/connection_matrices/)" % name)


def read_matrix(path):
    """(nodes, [(src, dst, start_us)]) of a ``.cm``, read by the project's own parser."""
    sys.path.insert(0, ROOT)
    from gse.workloads.cmfile import CmFileError, read_cm
    try:
        n, messages = read_cm(path)
    except CmFileError as e:
        raise BenchError(str(e)) from None
    return n, [(m.src, m.dst, m.start_ps / 1e6) for m in messages]


def fat_tree_k(nodes, path):
    k = round((4 * nodes) ** (1 / 3))
    if k % 2 or k ** 3 // 4 != nodes:
        raise BenchError("%s: %d nodes is not a k-ary Fat-Tree's k^3/4 hosts" % (path, nodes))
    return k


# -- output parsing ---------------------------------------------------------------------

def htsim_fcts(text, flows):
    """FCT (us) of each flow of ``flows`` ([(src, dst, start_us)]) from htsim's output.

    htsim names a flow by its source and destination; several flows of one pair are
    matched in order (earliest start with earliest finish).  Returns (fcts, unknown):
    the FCTs of the flows that finished and the finish lines no flow of the matrix has."""
    starts = {}
    for src, dst, start in flows:
        starts.setdefault((src, dst), []).append(start)
    for v in starts.values():
        v.sort(reverse=True)
    finishes = {}
    for line in text.splitlines():
        m = FINISHED.match(line)
        if m:
            finishes.setdefault((int(m.group(1)), int(m.group(2))), []).append(
                float(m.group(3)))
    fcts, unknown = [], 0
    for pair, times in finishes.items():
        pending = starts.get(pair, [])
        for t in sorted(times):
            if pending:
                fcts.append(t - pending.pop())
            else:
                unknown += 1
    return fcts, unknown


def project_fcts(records_text):
    """FCTs (us) of the completed messages in ``gse sim --records`` JSON Lines."""
    out = []
    for lineno, line in enumerate(records_text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise BenchError("records line %d is not JSON: %r" % (lineno, line[:80])) from None
        if row.get("completed") and row.get("fct_us") is not None:
            out.append(float(row["fct_us"]))
    return out


def fct_stats(values):
    """p50 / p99 / max by nearest rank, the same for both sides."""
    if not values:
        return {"p50": None, "p99": None, "max": None}
    v = sorted(values)

    def rank(p):
        return v[max(1, math.ceil(p * len(v))) - 1]
    return {"p50": rank(0.5), "p99": rank(0.99), "max": v[-1]}


# -- running ----------------------------------------------------------------------------

def timed(cmd, cwd, stdout_path, env=None, gnu_time=GNU_TIME):
    """Run ``cmd``; (wall s, CPU s user+sys, peak RSS MiB, exit status) of that child.

    The command runs under GNU time, which reports its peak RSS: a child forked straight
    from this Python would carry this Python's own peak into its ``ru_maxrss`` (Linux
    keeps the larger of the pre-exec and post-exec high-water marks), inflating htsim's
    figure by this process's size.  CPU comes from ``os.wait4`` (GNU time's own share is
    a millisecond), wall from this process's clock."""
    stats = stdout_path + ".rss"
    with open(stdout_path, "w") as out, open(stdout_path + ".err", "w") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([gnu_time, "-o", stats, "-f", "%M"] + list(cmd), cwd=cwd,
                                stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    with open(stats) as f:
        last = f.read().strip().splitlines()[-1:]
    try:
        rss_kib = int(last[0])
    except (IndexError, ValueError):
        raise BenchError("%s wrote no peak RSS for %s (in %s)" % (gnu_time, cmd[0], stats)
                         ) from None
    return wall, ru.ru_utime + ru.ru_stime, rss_kib / 1024, proc.returncode


def run_htsim(exe, protocol, cm, nodes, flows, work, gnu_time):
    if protocol == "gse":
        cmd = [exe, "-tm", cm]
    else:
        cmd = [exe, "-nodes", str(nodes), "-tm", cm, "-strat", "ecmp_host", "-paths", "1",
               "-mtu", "4150"]
    out = os.path.join(work, "htsim.out")
    wall, cpu, rss, rc = timed(cmd, work, out, gnu_time=gnu_time)
    if rc != 0:
        raise BenchError("%s exited with %d (stderr in %s.err)" % (" ".join(cmd), rc, out))
    with open(out, errors="replace") as f:
        fcts, unknown = htsim_fcts(f.read(), flows)
    return {"wall_s": wall, "cpu_s": cpu, "rss_mib": rss, "fcts": fcts, "unknown": unknown,
            "events": None}


def project_command(python, protocol, cm, k, work):
    cmd = [python, "-m", "gse.cli.main", "sim", "--topology", "fat-tree", "--k", str(k),
           "--traffic-file", cm, "--protocol", protocol, "--quiet",
           "--json", os.path.join(work, "summary.json"),
           "--records", os.path.join(work, "records.jsonl")]
    if protocol == "roce":
        cmd += ["--baseline", "htsim"]
    return cmd


EMPTY_PYCACHE = os.path.join(tempfile.gettempdir(), "bench_htsim_no_bytecode")


def project_env(bytecode):
    """The project's environment: ``cached`` runs it as an install does (pip compiles every
    module's bytecode when it installs, as htsim's binary is compiled ahead), ``none`` as a
    checkout with ``PYTHONDONTWRITEBYTECODE`` set, compiling every module at every start."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if bytecode == "cached":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        # Not writing is not enough: bytecode already in __pycache__ would still be read.
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONPYCACHEPREFIX"] = EMPTY_PYCACHE
    return env


def compile_bytecode(python):
    """Write the project's bytecode before the rounds (``--bytecode cached``), so no timed
    run pays for it or depends on which round came first."""
    dirs = [os.path.join(ROOT, d) for d in ("gse", "switchmodel", "topologies")]
    out = subprocess.run([python, "-m", "compileall", "-q"] + dirs, cwd=ROOT,
                         env=project_env("cached"), capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError("compiling the project's bytecode failed: %s"
                         % (out.stdout + out.stderr).strip()[-300:])


def run_project(python, protocol, cm, k, work, gnu_time, bytecode="cached"):
    cmd = project_command(python, protocol, cm, k, work)
    out = os.path.join(work, "gse.out")
    env = project_env(bytecode)
    wall, cpu, rss, rc = timed(cmd, ROOT, out, env, gnu_time)
    if rc != 0:
        raise BenchError("%s exited with %d (stderr in %s.err)" % (" ".join(cmd), rc, out))
    with open(os.path.join(work, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(work, "records.jsonl")) as f:
        fcts = project_fcts(f.read())
    return {"wall_s": wall, "cpu_s": cpu, "rss_mib": rss, "fcts": fcts, "unknown": 0,
            "events": summary["events"], "loop_s": summary["wall_s"]}


def check_gnu_time(path):
    """``path`` must be GNU time (``-o FILE -f %M`` writing the peak RSS in KiB)."""
    with tempfile.TemporaryDirectory(prefix="bench_htsim_") as work:
        stats = os.path.join(work, "rss")
        try:
            subprocess.run([path, "-o", stats, "-f", "%M", "true"], capture_output=True,
                           check=True)
            with open(stats) as f:
                int(f.read().split()[-1])
        except (OSError, subprocess.CalledProcessError, ValueError, IndexError):
            raise BenchError("GNU time not usable at %s (it reports each run's peak RSS; "
                             "install it or give --time PATH)" % path) from None


def project_build(python):
    """Which build ``python`` loads from this checkout (compiled or pure)."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([python, "-c", "from gse import _build; print(_build.build())"],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    return out.stdout.strip() or "unknown (%s)" % out.stderr.strip()[-200:]


def bench_matrix(args, exe, cm):
    nodes, flows = read_matrix(cm)
    k = fat_tree_k(nodes, cm)
    rounds = []
    with tempfile.TemporaryDirectory(prefix="bench_htsim_") as work:
        for i in range(args.rounds):
            load = os.getloadavg()[0]
            theirs = run_htsim(exe, args.protocol, cm, nodes, flows, work, args.time)
            ours = run_project(args.python, args.protocol, cm, k, work, args.time,
                               args.bytecode)
            rounds.append({"round": i + 1, "load_1min": load, "htsim": theirs,
                           "project": ours})
            print("  %s round %d (load %.1f): htsim %.2f s CPU, %.0f MiB; project %.2f s "
                  "CPU, %.0f MiB; CPU ratio %.2f" % (
                      os.path.basename(cm), i + 1, load, theirs["cpu_s"], theirs["rss_mib"],
                      ours["cpu_s"], ours["rss_mib"], ours["cpu_s"] / theirs["cpu_s"]),
                  flush=True)
    return summarise(os.path.basename(cm), k, len(flows), rounds)


def summarise(name, k, n_flows, rounds):
    """Medians of each side, ratios of the medians and of each round's pair."""
    row = {"cm": name, "k": k, "flows": n_flows, "rounds": len(rounds)}
    for side in ("htsim", "project"):
        runs = [r[side] for r in rounds]
        s = {key: statistics.median(r[key] for r in runs)
             for key in ("wall_s", "cpu_s", "rss_mib")}
        last = runs[-1]
        s["finished"] = min(len(r["fcts"]) for r in runs)
        s["unknown_flows"] = max(r["unknown"] for r in runs)
        s["fct_us"] = fct_stats(last["fcts"])
        if side == "project":
            s["events"] = statistics.median(r["events"] for r in runs)
            s["loop_s"] = statistics.median(r["loop_s"] for r in runs)
            s["cpu_ns_per_event"] = 1e9 * s["cpu_s"] / s["events"] if s["events"] else None
        row[side] = s
    h, p = row["htsim"], row["project"]
    # htsim prints no event count: its CPU over the project's events on the same matrix
    h["cpu_ns_per_project_event"] = 1e9 * h["cpu_s"] / p["events"] if p["events"] else None
    row["ratio"] = {key: p[key] / h[key] for key in ("wall_s", "cpu_s", "rss_mib")}
    row["ratio"]["fct_us"] = {q: (p["fct_us"][q] / h["fct_us"][q]
                                  if p["fct_us"][q] and h["fct_us"][q] else None)
                              for q in ("p50", "p99", "max")}
    for key in ("wall_s", "cpu_s"):
        per = sorted(r["project"][key] / r["htsim"][key] for r in rounds)
        row["round_ratios_" + key] = per
    row["all_finished"] = h["finished"] == p["finished"] == n_flows
    row["loads"] = [r["load_1min"] for r in rounds]
    return row


# -- report -----------------------------------------------------------------------------

def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": model, "system": platform.platform(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def git_commit(path):
    out = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True,
                         text=True)
    if out.returncode != 0:
        return None
    dirty = subprocess.run(["git", "-C", path, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return out.stdout.strip()[:12] + (" (modified)" if dirty else "")


def _num(value, fmt):
    return "-" if value is None else fmt % value


def format_table(rows):
    lines = ["| .cm (k) | side | wall s | CPU s | peak RSS MiB | events | CPU ns/event "
             "| finished | FCT p50 / p99 / max us |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for side in ("htsim", "project"):
            s = r[side]
            f = s["fct_us"]
            lines.append("| %s (k=%d) | %s | %.3f | %.3f | %.1f | %s | %s | %d/%d | %s / %s / %s |"
                         % (r["cm"], r["k"], side, s["wall_s"], s["cpu_s"], s["rss_mib"],
                            _num(s.get("events"), "%.0f"),
                            _num(s.get("cpu_ns_per_event"), "%.0f")
                            if side == "project" else
                            _num(s.get("cpu_ns_per_project_event"), "(%.0f)"), s["finished"],
                            r["flows"], _num(f["p50"], "%.1f"), _num(f["p99"], "%.1f"),
                            _num(f["max"], "%.1f")))
        q = r["ratio"]
        fq = q["fct_us"]
        lines.append("| %s (k=%d) | **project / htsim** | %.2f | %.2f | %.2f | | | %s | "
                     "%s / %s / %s |" % (
                         r["cm"], r["k"], q["wall_s"], q["cpu_s"], q["rss_mib"],
                         "all" if r["all_finished"] else "**NOT ALL**",
                         _num(fq["p50"], "%.3f"), _num(fq["p99"], "%.3f"),
                         _num(fq["max"], "%.3f")))
    lines.append("")
    for r in rows:
        c, w = r["round_ratios_cpu_s"], r["round_ratios_wall_s"]
        lines.append("%s: per-round CPU ratio median %.2f (%.2f-%.2f), wall %.2f (%.2f-%.2f); "
                     "project event loop %.2f s (wall) in %.2f s CPU; 1-min load %s"
                     % (r["cm"], statistics.median(c), c[0], c[-1], statistics.median(w), w[0],
                        w[-1], r["project"]["loop_s"], r["project"]["cpu_s"],
                        ", ".join("%.1f" % x for x in r["loads"])))
    lines.extend(growth_lines(rows))
    return "\n".join(lines)


def growth_lines(rows):
    """Each matrix's per-event cost against the first's, the project's (its own events)
    and htsim's (its CPU per project event): how each side's cost per unit of work grows
    with the fabric.  Nothing when there is one matrix or an event count is missing."""
    if len(rows) < 2:
        return []
    first = rows[0]
    base_p = first["project"].get("cpu_ns_per_event")
    base_h = first["htsim"].get("cpu_ns_per_project_event")
    if not base_p or not base_h:
        return []
    out = []
    for r in rows[1:]:
        p = r["project"].get("cpu_ns_per_event")
        h = r["htsim"].get("cpu_ns_per_project_event")
        if p and h:
            out.append("%s (k=%d) against %s (k=%d), CPU per event: project %.2fx, htsim "
                       "(per project event) %.2fx" % (r["cm"], r["k"], first["cm"],
                                                      first["k"], p / base_p, h / base_h))
    return out


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--htsim-dir", default=htsim_dir_default(),
                    help="uet-htsim's htsim/sim, built (default: $GSE_THIRD_PARTY_DIR/"
                    "uet-htsim/htsim/sim)")
    ap.add_argument("--uec", help="the htsim_uec binary (default: in --htsim-dir)")
    ap.add_argument("--roce", help="the htsim_roce binary (default: in --htsim-dir)")
    ap.add_argument("--cm", nargs="+", default=list(DEFAULT_CMS),
                    help="connection matrices: paths, or names under --htsim-dir's "
                    "datacenter/connection_matrices/ (default: %s)" % " ".join(DEFAULT_CMS))
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per matrix")
    ap.add_argument("--protocol", choices=("gse", "roce"), default="gse",
                    help="gse: htsim_uec against GSE; roce: htsim_roce against "
                    "--baseline htsim")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter running this project (default: this one)")
    ap.add_argument("--htsim-commit", help="the htsim commit built, if --htsim-dir is not a "
                    "git checkout")
    ap.add_argument("--time", default=GNU_TIME,
                    help="GNU time, which reports each run's peak RSS (default: %(default)s)")
    ap.add_argument("--bytecode", choices=("cached", "none"), default="cached",
                    help="cached: the project's bytecode compiled once before the rounds, "
                    "as an install has it; none: every module compiled at every start, as "
                    "with PYTHONDONTWRITEBYTECODE (default: %(default)s)")
    ap.add_argument("--json", help="also write every figure as JSON")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        check_gnu_time(args.time)
        exe = binary(args, args.protocol)
        cms = [cm_path(args, name) for name in args.cm]
        for cm in cms:
            fat_tree_k(read_matrix(cm)[0], cm)
        if args.bytecode == "cached":
            compile_bytecode(args.python)
    except BenchError as e:
        print("bench_htsim: %s" % e, file=sys.stderr)
        return 2
    info = dict(machine(), project_commit=git_commit(ROOT), build=project_build(args.python),
                htsim_binary=exe, protocol=args.protocol, rounds=args.rounds,
                bytecode=args.bytecode,
                htsim_commit=args.htsim_commit or git_commit(os.path.dirname(exe)),
                command=" ".join([os.path.relpath(__file__, ROOT)] + (argv or sys.argv[1:])))
    print("machine: %(nproc)s cores, %(cpu)s; %(date)s; project %(project_commit)s "
          "(%(build)s build, bytecode %(bytecode)s); htsim %(htsim_commit)s "
          "(%(htsim_binary)s)" % info, flush=True)
    rows = []
    try:
        for cm in cms:
            rows.append(bench_matrix(args, exe, cm))
    except BenchError as e:
        print("bench_htsim: %s" % e, file=sys.stderr)
        return 1
    print()
    print(format_table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "rows": rows}, f, indent=2)
    return 0 if all(r["all_finished"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
