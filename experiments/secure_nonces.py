"""Does any (key, nonce) pair of AES-GCM repeat across runs with one key file? (issue 25)

AES-GCM gives away its authentication key when one nonce is used twice under one key, so
every encryption of every run with the same domain key must use a pair never used before.
This runs the k=4 Fat-Tree permutation ``--runs`` times in a row with one key file under
``--secure`` and records, for every AES-GCM encryption the processes make, the key (its
SHA-256) and the nonce, as the ``cryptography`` package is handed them (its ``AESGCM``
class is wrapped before anything imports it, so the count does not depend on how the
sublayer builds its nonces).  Reported: encryptions per run, pairs used twice within a
run, and pairs of each run already used by an earlier one -- 7,567 of 8,506 datagrams of
a second run did before issue 25.

``--mode agents`` runs every node as its own ``gse agent`` process from configurations
written for each run (as ``gse agent-configs`` writes them), each process recording its
own pairs into a file; ``--mode inprocess`` (default) runs the fabric in this process.

    python experiments/secure_nonces.py --runs 10
    python experiments/secure_nonces.py --runs 10 --mode agents --json nonces.json
"""

import argparse
import atexit
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)


class NonceRecorder:
    """Wraps ``cryptography``'s ``AESGCM``: every ``encrypt`` adds (key digest, nonce)."""

    def __init__(self):
        self.pairs = []
        self._module = None
        self._real = None

    def install(self):
        import cryptography.hazmat.primitives.ciphers.aead as aead
        real = aead.AESGCM
        pairs = self.pairs

        class RecordingAESGCM:
            __slots__ = ("_aead", "_id")

            def __init__(self, key):
                self._aead = real(key)
                self._id = hashlib.sha256(bytes(key)).digest()[:16]

            def encrypt(self, nonce, data, associated_data):
                pairs.append((self._id, bytes(nonce)))
                return self._aead.encrypt(nonce, data, associated_data)

            def decrypt(self, nonce, data, associated_data):
                return self._aead.decrypt(nonce, data, associated_data)

        self._module, self._real = aead, real
        aead.AESGCM = RecordingAESGCM
        return self

    def uninstall(self):
        if self._module is not None:
            self._module.AESGCM = self._real
            self._module = None

    def take(self):
        out = list(self.pairs)
        del self.pairs[:]
        return out


def count(runs):
    """Per run: encryptions, pairs repeated within it, pairs an earlier run used."""
    seen = set()
    rows = []
    for pairs in runs:
        within = len(pairs) - len(set(pairs))
        earlier = sum(1 for p in pairs if p in seen)
        rows.append({"encryptions": len(pairs), "repeated_within_run": within,
                     "used_by_an_earlier_run": earlier})
        seen.update(pairs)
    return rows


def workload(size, gbps, seed):
    from gse.workloads import traffic
    from topologies.fattree import fat_tree
    topo = fat_tree(4, link_gbps=gbps)
    return topo, traffic.permutation(len(topo.hosts), size, random.Random(seed))


def run_inprocess(key, size, gbps, seed, recorder):
    from gse.runtimes.udp.network import run_udp
    topo, msgs = workload(size, gbps, seed)
    s = run_udp(topo, msgs, seed=seed, timeout_s=120, secure_key_file=key).summary
    return recorder.take(), s["delivered"] == len(msgs) and s["lost"] == 0


AGENT = """import sys
sys.path.insert(0, %r)
sys.path.insert(0, %r)
import secure_nonces
secure_nonces.record_to(sys.argv[1])
from gse.runtimes.udp.agent_process import main
sys.exit(main(sys.argv[2:]))
"""


def record_to(path):
    """In an agent process: record its pairs and write them to ``path`` at exit."""
    rec = NonceRecorder().install()

    def dump():
        with open(path, "w") as f:
            json.dump([[k.hex(), n.hex()] for k, n in rec.pairs], f)
    atexit.register(dump)


def run_agents(key, size, gbps, seed, work, index):
    """One run as one ``gse agent`` process per node (configurations written for it)."""
    from gse.config import GseConfig
    from gse.runtimes.udp.config import (loopback_addresses, node_configs, udp_profile,
                                         write_node_configs)
    topo, msgs = workload(size, gbps, seed)
    out = os.path.join(work, "run%02d" % index)
    os.makedirs(out)
    confs = node_configs(topo, msgs, "gse", udp_profile(GseConfig()), seed,
                         loopback_addresses(topo, "127.93.0.0", 47700), output_dir=out,
                         secure_key_file=key,
                         run={"timeout_s": 120.0, "start_at_unix": time.time() + 10.0,
                              "linger_s": 1.0, "idle_exit_s": 5.0})
    paths = write_node_configs(confs, out)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    script = AGENT % (ROOT, HERE)
    procs = [subprocess.Popen([sys.executable, "-c", script, path + ".nonces", "--config",
                               path], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for path in paths]
    codes = [p.wait(timeout=300) for p in procs]
    pairs = []
    for path in paths:
        with open(path + ".nonces") as f:
            pairs.extend((bytes.fromhex(k), bytes.fromhex(n)) for k, n in json.load(f))
    delivered = 0
    for conf in confs:
        if conf["role"] == "host":
            with open(conf["output"]["records"]) as f:
                delivered += len(json.load(f)["received"])
    return pairs, delivered == len(msgs) and all(c == 0 for c in codes[:len(topo.hosts)])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--mode", choices=("inprocess", "agents"), default="inprocess")
    p.add_argument("--key", help="the domain key file (default: a new one, kept for all runs)")
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--gbps", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=1, help="the same traffic in every run")
    p.add_argument("--json", help="write the counts here")
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="gse-nonces-")
    key = args.key
    if key is None:
        key = os.path.join(work, "domain.key")
        with open(key, "w") as f:
            f.write(os.urandom(32).hex() + "\n")
    recorder = NonceRecorder().install() if args.mode == "inprocess" else None
    runs, ok = [], []
    for i in range(args.runs):
        if args.mode == "inprocess":
            pairs, good = run_inprocess(key, args.size, args.gbps, args.seed, recorder)
        else:
            pairs, good = run_agents(key, args.size, args.gbps, args.seed, work, i)
        runs.append(pairs)
        ok.append(good)
    rows = count(runs)
    for i, (row, good) in enumerate(zip(rows, ok)):
        print("run %2d: %6d encryptions, %d (key, nonce) pairs repeated within the run, %d "
              "used by an earlier run; every message delivered: %s"
              % (i + 1, row["encryptions"], row["repeated_within_run"],
                 row["used_by_an_earlier_run"], "yes" if good else "NO"))
    total = sum(r["repeated_within_run"] + r["used_by_an_earlier_run"] for r in rows)
    print("%d runs with one key file (%s): %d encryptions, %d (key, nonce) pairs reused"
          % (args.runs, key, sum(r["encryptions"] for r in rows), total))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": rows, "delivered": ok, "mode": args.mode, "reused": total},
                      f, indent=2)
            f.write("\n")
    return 0 if total == 0 and all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
