"""The simulation's objects on huge pages (``gse.runtimes.sim.eventq.huge_pages``).

The compiled build serves pymalloc's arenas from a region marked for transparent huge
pages (cython/gse/runtimes/sim/gse_arena.h): memory is laid out differently and nothing
else changes.  Each case runs in a fresh interpreter, since the arena allocator is the
process's own from the first import of ``gse.runtimes.sim`` on."""

import json
import os
import subprocess
import sys

import pytest

from gse import _build

ROOT = _build.ROOT

_RUN = r"""
import json, random, resource, sys
limit = int(sys.argv[1])
if limit:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from gse import _build
import gse.runtimes.sim
from gse.runtimes.sim.eventq import huge_blocks_used, huge_pages, huge_pages_used
from gse.config import GseConfig
from gse.runtimes.sim.run import run_simulation
from gse.workloads import traffic
from topologies import fat_tree
used_before = huge_pages_used()
keep = [(i, str(i)) for i in range(200_000)]        # small objects: new arenas
r = run_simulation(fat_tree(4), traffic.incast(16, 6, 200_000, random.Random(5)), "gse",
                   GseConfig(), 5, loss_rate=0.002)
print(json.dumps({"build": _build.build(), "on": huge_pages(), "used": huge_pages_used(),
                  "blocks": huge_blocks_used(),
                  "used_before": used_before, "events": r.summary["events"],
                  "per_message": r.per_message()}))
"""


def _run(huge=True, limit=0, blocks=True):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["GSE_HUGE_BLOCKS"] = "1" if blocks else "0"
    if not huge:
        env["GSE_HUGE_PAGES"] = "0"
    out = subprocess.run([sys.executable, "-c", _RUN, str(limit)], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_huge_pages_change_the_memory_not_the_run():
    on, off, arenas = _run(huge=True), _run(huge=False), _run(blocks=False)
    assert off["used"] == 0 and off["blocks"] == 0
    assert arenas["blocks"] == 0              # the blocks only when GSE_HUGE_BLOCKS asks
    if on["build"] == "compiled":
        assert on["on"] is True
        assert on["used"] >= 8 << 20, on["used"]      # the objects' arenas came from it
        assert on["blocks"] >= 1 << 20, on["blocks"]  # and the larger blocks (dict tables)
    else:
        assert on["on"] is False and on["used"] == 0  # the pure build leaves memory be
        assert on["blocks"] == 0
    assert on["events"] == off["events"] and on["per_message"] == off["per_message"]
    assert arenas["per_message"] == on["per_message"]
    if on["build"] == "compiled":
        assert arenas["on"] is True and arenas["used"] >= 8 << 20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS as Linux has it")
def test_no_region_when_the_address_space_is_limited():
    # 4 GiB of address space cannot hold the 64 GiB reservation: memory stays as it was,
    # and the run is the same
    limited, free = _run(limit=4 << 30), _run(huge=False)
    assert limited["on"] is False and limited["used"] == 0 and limited["blocks"] == 0
    assert limited["per_message"] == free["per_message"]


_THREADS = r"""
import os
import threading
import gse.runtimes.sim
from gse.runtimes.sim.eventq import huge_blocks_used

def work(seed, out):
    # lists, dicts, bytes and bytearrays over 512 bytes, grown, shrunk and freed: the raw
    # allocator's calls, from four threads at once (the raw domain may run without the GIL)
    keep = []
    for i in range(3000):
        n = (seed * 7919 + i * 104729) % 5000 + 70
        lst = list(range(n))
        lst.extend(range(n // 2))
        d = {k: k for k in range(n // 8)}
        b = bytearray(bytes([seed]) * n)
        b.extend(bytes(b))
        del lst[n // 3:]
        keep.append((sum(lst), len(d), b.count(seed)))
        if len(keep) > 50:
            keep.pop(0)
    out[seed] = keep

out = {}
ts = [threading.Thread(target=work, args=(s, out)) for s in range(1, 5)]
for t in ts:
    t.start()
for t in ts:
    t.join()
ref = {}
work(1, ref)
assert out[1] == ref[1], "thread 1 differs"
assert sorted(out) == [1, 2, 3, 4] and all(len(v) == 50 for v in out.values())
if hasattr(os, "fork"):               # a child allocates from the lists it inherited
    pid = os.fork()
    if pid == 0:
        child = {}
        work(2, child)
        os._exit(0 if child[2] == out[2] else 1)
    assert os.waitpid(pid, 0)[1] == 0, "the forked child failed"
print(huge_blocks_used())
"""


def test_the_blocks_region_under_threads():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["GSE_HUGE_BLOCKS"] = "1"
    out = subprocess.run([sys.executable, "-c", _THREADS], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    used = int(out.stdout.strip().splitlines()[-1])
    assert used > 0 if _build.build() == "compiled" else used == 0
