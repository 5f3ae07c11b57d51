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
MAX_RESTARTS = 20     # timeouts set aside as the machine's (starved) before a target stops
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


def replay(target, path):
    """Run one input of ``target`` in this process (``--replay``): its CPU time on stdout."""
    import fuzz_targets
    with open(path, "rb") as f:
        data = f.read()
    t0 = time.process_time()
    fuzz_targets.TARGETS[target](data)
    print("cpu_s %.6f" % (time.process_time() - t0))


def starved(target, path, env, limit_s):
    """Was a timeout the machine's, not the input's?  The input is run again under a CPU
    limit of ``limit_s``: True when it finishes within it (libFuzzer's per-input limit is
    wall-clock time, which a loaded machine steals from a niced fuzzer)."""
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_CPU, (limit_s, limit_s + 1))
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--replay", target, path],
                          cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, preexec_fn=cap)
    return proc.returncode == 0 and "cpu_s" in proc.stdout


def _segment(target, args, env, runs, art, corpus, seed_dir):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", target, "--",
           "-runs=%d" % runs, "-timeout=%d" % args.timeout_s,
           "-rss_limit_mb=%d" % args.rss_limit_mb, "-max_len=%d" % args.max_len,
           "-artifact_prefix=%s/" % art, "-print_final_stats=1", "-seed=%d" % args.seed,
           corpus, seed_dir]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    return proc.returncode, proc.stdout


def run_target(target, args):
    """Fuzz one target for ``args.runs`` inputs.  A timeout whose input replays within
    the limit in CPU time was the machine's (``starved``): the input is set aside and
    the run goes on from its corpus, up to ``MAX_RESTARTS`` times."""
    art = os.path.abspath(os.path.join(args.artifacts, target))
    os.makedirs(art, exist_ok=True)
    corpus = os.path.abspath(os.path.join(args.artifacts, target + ".corpus"))
    os.makedirs(corpus, exist_ok=True)
    seed_dir = os.path.abspath(os.path.join(args.artifacts, target + ".seeds"))
    write_seeds(target, seed_dir)
    aside = os.path.join(art, "starved")
    env = dict(os.environ)
    if not args.compiled:
        env["GSE_PURE_PYTHON"] = "1"
    res = {"target": target, "build": "compiled" if args.compiled else "pure", "runs": 0,
           "starved_timeouts": 0}
    log = []
    t0 = time.perf_counter()
    while True:
        rc, out = _segment(target, args, env, args.runs - res["runs"], art, corpus, seed_dir)
        log.append(out)
        res["exit"] = rc
        m = None
        for m in STAT.finditer(out):
            pass
        if m is not None:
            res["runs"] += int(m.group(1))
            res.update({"cov": int(m.group(2)), "ft": int(m.group(3)),
                        "corpus": int(m.group(4)), "exec_per_s": int(m.group(5)),
                        "peak_rss_mb": int(m.group(6))})
            break
        last = None
        for last in PROGRESS.finditer(out):
            pass
        if last is not None:      # stopped early: where it had got to
            res["runs"] += int(last.group(1))
            res.update({"cov": int(last.group(2)), "ft": int(last.group(3)),
                        "corpus": int(last.group(4))})
        new = [n for n in os.listdir(art) if n.startswith("timeout-")]
        if (not new or any(n.startswith(("crash-", "oom-")) for n in os.listdir(art))
                or res["starved_timeouts"] >= MAX_RESTARTS):
            break
        for name in new:
            if not starved(target, os.path.join(art, name), env, args.timeout_s):
                break
            os.makedirs(aside, exist_ok=True)
            os.replace(os.path.join(art, name), os.path.join(aside, name))
            res["starved_timeouts"] += 1
        else:
            res["exit"] = 0
            if res["runs"] < args.runs:
                continue
        break
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    res["crashes"] = sorted(n for n in os.listdir(art)
                            if n.startswith(("crash-", "timeout-", "oom-")))
    out = "\n".join(log)
    with open(os.path.join(args.artifacts, target + ".log"), "w") as f:
        f.write(out)
    peak = re.findall(r"peak_rss_mb:\s+(\d+)", out)
    if peak:
        res["peak_rss_mb"] = max(int(x) for x in peak)
    return res


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child(argv[1], argv[3:] if len(argv) > 2 and argv[2] == "--" else argv[2:])
        return 0
    if argv and argv[0] == "--replay":
        replay(argv[1], argv[2])
        return 0
    import fuzz_targets
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=100_000, help="inputs per target")
    p.add_argument("--targets", default=",".join(fuzz_targets.TARGETS),
                   help="comma-separated (known: %s)" % ", ".join(fuzz_targets.TARGETS))
    p.add_argument("--timeout-s", type=int, default=10,
                   help="per input: longer is a hang (wall-clock time; a timeout whose input "
                        "replays within it in CPU time was the machine's, and is set aside)")
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
        print("%-12s %s runs %9s  %7.1f s  %6s exec/s  cov %5s  ft %6s  peak RSS %4s MB  %s%s"
              % (target, res["build"], res["runs"], res["wall_s"], res.get("exec_per_s", "?"),
                 res.get("cov", "?"), res.get("ft", "?"), res.get("peak_rss_mb", "?"),
                 "crashes: %s" % ", ".join(res["crashes"]) if res["crashes"] else
                 ("ok" if res["exit"] == 0 else "exit %d (see %s.log)"
                  % (res["exit"], target)),
                 "  (%d timeouts set aside: the machine's, see %s/starved)"
                 % (res["starved_timeouts"], target) if res["starved_timeouts"] else ""),
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if any(r["crashes"] or r["exit"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
