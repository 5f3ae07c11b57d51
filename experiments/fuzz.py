"""Coverage-guided fuzzing (atheris) of the wire decoder and of every agent.

    python experiments/fuzz.py --runs 1000000              # every target, 10^6 inputs each
    python experiments/fuzz.py --targets wire,gse_host --runs 100000 --json fuzz.json

The targets are ``tests/fuzz_targets.py`` (``wire``: the reference decoder and the UDP
runtime's fast decoders agree and round-trip; ``gse_host``, ``roce_host``, ``plain_host``:
host agents fed programs of packets with every header field at its full wire width,
timers, new messages and NIC pulls, their state within its bounds afterwards; ``switch``:
routing, egress queues, PFC accounting; ``fabric_leaf``: a fabric-mode leaf).  Each
target runs in a process of its own under libFuzzer (atheris) for ``--runs`` inputs with a
per-input time limit (a hang fails) and a memory limit (``--rss-limit-mb``: growth fails);
a crash leaves its input in ``--artifacts`` and is reported: add it to
``tests/fuzz_targets.REGRESSIONS``.  Each run starts from the target's corpus and its
seeds (``fuzz_targets.seeds``: the regressions and a few coherent programs).  Reported per
target: inputs run, wall time, exec/s, coverage (cov, ft) and the process's peak RSS, from
libFuzzer's own closing statistics.

The pure-Python build is fuzzed by default (atheris instruments Python bytecode, so the
coverage that guides it is the reference modules'); ``--compiled`` runs the compiled
build instead, without coverage of its compiled modules.  Needs atheris: ``./dev fuzz
...`` installs it (the project's ``fuzz`` extra, ``pip install -e '.[fuzz]'``) and runs
this script; without it the script says so and exits 2.  ``tests/test_fuzz.py`` runs every
target for a few thousand inputs in each pass of the suite.
"""

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

STAT = re.compile(r"#(\d+)\s+DONE\s+cov: (\d+) ft: (\d+) corp: (\d+)/\S+ .*?exec/s: (\d+) "
                  r"rss: (\d+)Mb")
# any progress line (the last one before a crash, when no DONE line comes)
PROGRESS = re.compile(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/")


def child(target, argv):
    """Run one target under atheris in this process (never returns)."""
    import atheris
    with atheris.instrument_imports():
        import fuzz_targets
    fn = fuzz_targets.TARGETS[target]

    def one(data):
        fn(data)
    atheris.Setup([sys.argv[0]] + argv, one)
    atheris.Fuzz()


MISSING = ("atheris is not installed in this Python (%s): `./dev fuzz [options]` installs it "
           "and runs this script, or pip install -e '.[fuzz]'")


def atheris_missing():
    """None if atheris can be imported here, else what to do about it."""
    if importlib.util.find_spec("atheris") is None:
        return MISSING % sys.executable
    return None


def write_seeds(target, folder):
    """The target's seeds (``fuzz_targets.seeds``) as files in ``folder``."""
    import fuzz_targets
    os.makedirs(folder, exist_ok=True)
    for i, data in enumerate(fuzz_targets.seeds(target)):
        with open(os.path.join(folder, "seed-%02d" % i), "wb") as f:
            f.write(data)


def run_target(target, args):
    art = os.path.abspath(os.path.join(args.artifacts, target))
    os.makedirs(art, exist_ok=True)
    corpus = os.path.abspath(os.path.join(args.artifacts, target + ".corpus"))
    os.makedirs(corpus, exist_ok=True)
    seed_dir = os.path.abspath(os.path.join(args.artifacts, target + ".seeds"))
    write_seeds(target, seed_dir)
    env = dict(os.environ)
    if not args.compiled:
        env["GSE_PURE_PYTHON"] = "1"
    cmd = [sys.executable, os.path.abspath(__file__), "--child", target, "--",
           "-runs=%d" % args.runs, "-timeout=%d" % args.timeout_s,
           "-rss_limit_mb=%d" % args.rss_limit_mb, "-max_len=%d" % args.max_len,
           "-artifact_prefix=%s/" % art, "-print_final_stats=1", "-seed=%d" % args.seed,
           corpus, seed_dir]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t0
    out = proc.stdout
    with open(os.path.join(args.artifacts, target + ".log"), "w") as f:
        f.write(out)
    m = None
    for m in STAT.finditer(out):
        pass
    crashes = sorted(n for n in os.listdir(art) if n.startswith(("crash-", "timeout-", "oom-")))
    res = {"target": target, "exit": proc.returncode, "wall_s": round(wall, 1),
           "crashes": crashes, "build": "compiled" if args.compiled else "pure"}
    if m is not None:
        res.update({"runs": int(m.group(1)), "cov": int(m.group(2)), "ft": int(m.group(3)),
                    "corpus": int(m.group(4)), "exec_per_s": int(m.group(5)),
                    "peak_rss_mb": int(m.group(6))})
    else:
        last = None
        for last in PROGRESS.finditer(out):
            pass
        if last is not None:      # stopped early (a crash): where it had got to
            res.update({"runs_before_stop": int(last.group(1)), "cov": int(last.group(2)),
                        "ft": int(last.group(3)), "corpus": int(last.group(4))})
    peak = re.findall(r"peak_rss_mb:\s+(\d+)", out)
    if peak:
        res["peak_rss_mb"] = int(peak[-1])
    return res


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child(argv[1], argv[3:] if len(argv) > 2 and argv[2] == "--" else argv[2:])
        return 0
    import fuzz_targets
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=100_000, help="inputs per target")
    p.add_argument("--targets", default=",".join(fuzz_targets.TARGETS),
                   help="comma-separated (known: %s)" % ", ".join(fuzz_targets.TARGETS))
    p.add_argument("--timeout-s", type=int, default=10, help="per input: longer is a hang")
    p.add_argument("--rss-limit-mb", type=int, default=1024)
    p.add_argument("--max-len", type=int, default=4096, help="longest input")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--compiled", action="store_true", help="fuzz the compiled build")
    p.add_argument("--artifacts", default="fuzz-artifacts",
                   help="crash inputs, corpora and logs go here")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    missing = atheris_missing()
    if missing:
        print("fuzz.py: %s" % missing, file=sys.stderr)
        return 2
    results = []
    for target in args.targets.split(","):
        if target not in fuzz_targets.TARGETS:
            p.error("unknown target %r" % target)
        res = run_target(target, args)
        results.append(res)
        runs = res.get("runs", ">%s" % res["runs_before_stop"] if "runs_before_stop" in res
                       else "?")
        print("%-12s %s runs %9s  %7.1f s  %6s exec/s  cov %5s  ft %6s  peak RSS %4s MB  %s"
              % (target, res["build"], runs, res["wall_s"], res.get("exec_per_s", "?"),
                 res.get("cov", "?"), res.get("ft", "?"), res.get("peak_rss_mb", "?"),
                 "crashes: %s" % ", ".join(res["crashes"]) if res["crashes"] else
                 ("ok" if res["exit"] == 0 else "exit %d (see %s.log)"
                  % (res["exit"], target))), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if any(r["crashes"] or r["exit"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
