"""The project's sample traces: what they contain and how they are generated.

    python -m gse.workloads.traces.samples --out traces     # rewrite the samples in traces/

* ``allreduce_8r_1MiB``: one ring all-reduce of 1 MiB over ranks 0-7 (the same call as
  ASTRA-sim's ``all_reduce_8npus_1MB`` Chakra example);
* ``moe_alltoall_16r``: two MoE layers over 16 ranks, each a dispatch all-to-all, expert
  compute, and a combine all-to-all;
* ``dp_step_64r``: the gradient all-reduces of one data-parallel step over 64 ranks (8
  servers x 8 GPUs), bucketed as PyTorch DDP does: buckets become ready one after the
  other as the backward pass runs, and each all-reduce also waits for the previous one
  (one NCCL stream).

Each is written in the project format (``<name>.jsonl``) and as Chakra per-rank files
(``chakra/<name>/<name>.<rank>.et``).  Generators take sizes as parameters, so the
experiments build larger or smaller variants of the same shapes.
"""

import argparse
import os

from gse.workloads.collectives import Collective
from gse.workloads.traces.chakra import write_chakra
from gse.workloads.traces.jsonl import write_jsonl

MiB = 1 << 20
US = 1_000_000          # ps


def ring_allreduce_trace(n=8, size=MiB):
    return [Collective(1, "all_reduce", range(n), size, dtype="float32", tag="allreduce")]


def moe_trace(n=16, size=2 * MiB, layers=2, expert_us=40, gap_us=20, ranks=None):
    """Per layer: dispatch all-to-all, ``expert_us`` of expert compute, combine all-to-all;
    ``gap_us`` of other compute before the next layer.  ``size`` is a rank's send buffer
    (tokens x hidden x bytes), spread evenly over the experts."""
    ranks = list(range(n)) if ranks is None else list(ranks)
    out = []
    for layer in range(layers):
        cid = len(out) + 1
        after = [(cid - 1, gap_us * US)] if out else []
        out.append(Collective(cid, "all_to_all", ranks, size, after=after, dtype="bfloat16",
                              tag="moe%d.dispatch" % layer))
        out.append(Collective(cid + 1, "all_to_all", ranks, size, after=[(cid, expert_us * US)],
                              dtype="bfloat16", tag="moe%d.combine" % layer))
    return out


def dp_step_trace(n=64, buckets=(4 * MiB, 4 * MiB, 4 * MiB, 2 * MiB), backward_us=60,
                  ranks=None, algo="ring"):
    """Bucket k is ready ``(k + 1) * backward_us`` into the step and is all-reduced after
    bucket k-1's all-reduce (the order DDP launches them in)."""
    ranks = list(range(n)) if ranks is None else list(ranks)
    out = []
    for k, size in enumerate(buckets):
        out.append(Collective(k + 1, "all_reduce", ranks, size, algo=algo,
                              after=[(k, 0)] if k else [], start_ps=(k + 1) * backward_us * US,
                              dtype="float32", tag="bucket%d" % k))
    return out


SAMPLES = {
    "allreduce_8r_1MiB": ring_allreduce_trace,
    "moe_alltoall_16r": moe_trace,
    "dp_step_64r": dp_step_trace,
}


def write_samples(out_dir):
    """Write every sample in both formats under ``out_dir``; returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, make in SAMPLES.items():
        colls = make()
        path = os.path.join(out_dir, name + ".jsonl")
        write_jsonl(path, colls, name=name)
        written.append(path)
        cdir = os.path.join(out_dir, "chakra", name)
        os.makedirs(cdir, exist_ok=True)
        for old in os.listdir(cdir):
            if old.endswith(".et"):
                os.remove(os.path.join(cdir, old))
        written.extend(write_chakra(os.path.join(cdir, name), colls))
    return written


def main(argv=None):
    p = argparse.ArgumentParser(description="write the project's sample traces")
    p.add_argument("--out", default="traces", help="output directory (default: traces)")
    args = p.parse_args(argv)
    paths = write_samples(args.out)
    print("wrote %d files under %s" % (len(paths), args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
