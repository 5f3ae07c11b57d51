"""SIGINT and SIGTERM end ``gse sim``, ``compare``, ``replay`` and ``sweep`` with their
partial results written (``"complete": false``), exit 128 + the signal and no traceback,
as ``gse run --runtime udp`` does.

Each command runs in a subprocess with its standard error on a pseudo-terminal, so that
it draws its progress bar: the test waits for the bar (the run has started; no fixed
sleep), sends the signal and waits for the process to end.  The runs are ones that never
end on their own (every path dead for good, the watchdog off), so a loaded machine cannot
make one finish before the signal comes."""

import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEAD = ["--k", "4", "--traffic", "permutation", "--size", "200000",
        "--fail", "tier:agg-core:100%@10us,detect=never", "--stall-us", "0"]
STARTED_S = 300          # bounds for a loaded machine, never reached when all is well
ENDED_S = 120


class Command:
    """``gse ARGS`` with standard error on a pseudo-terminal, read as it comes."""

    def __init__(self, args, cwd, preexec_fn=None):
        master, slave = pty.openpty()
        env = dict(os.environ, COLUMNS="200", PYTHONPATH=ROOT)
        self.proc = subprocess.Popen([sys.executable, "-m", "gse"] + args, cwd=cwd, env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=slave, preexec_fn=preexec_fn)
        os.close(slave)
        self.master = master
        self.err = b""
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.err += data

    def wait_for(self, text, bound_s=STARTED_S):
        deadline = time.monotonic() + bound_s
        while time.monotonic() < deadline:
            with self.lock:
                if text.encode() in self.err:
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.kill()
        raise AssertionError("never saw %r; stderr: %r" % (text, self.err[-2000:]))

    def stop(self, sig):
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=ENDED_S)
        finally:
            self.kill()
        self.reader.join(timeout=10)
        os.close(self.master)
        return rc, self.err.decode(errors="replace"), self.proc.stdout.read().decode()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sim_writes_its_partial_results_on_a_signal(tmp_path, sig):
    cmd = Command(["sim"] + DEAD + ["--json", "out.json", "--records", "flows.csv"],
                  str(tmp_path))
    cmd.wait_for("events/s")                     # the progress bar: the run is on
    rc, err, out = cmd.stop(sig)
    assert rc == 128 + sig, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "interrupted by %s" % sig.name in err
    s = json.loads((tmp_path / "out.json").read_text())
    assert s["complete"] is False and s["end"] == "signal" and s["signal"] == sig.name
    assert s["messages"] == 16 and 0 < s["delivered"] < 16
    assert len((tmp_path / "flows.csv").read_text().splitlines()) == 17
    assert "NO: stopped by %s" % sig.name in out


def test_a_signal_ignored_from_the_start_stays_ignored(tmp_path):
    """``cmd &`` in a shell script starts it with SIGINT ignored: it keeps running."""
    cmd = Command(["sim"] + DEAD + ["--json", "out.json"], str(tmp_path),
                  preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    cmd.wait_for("events/s")
    cmd.proc.send_signal(signal.SIGINT)
    mark = len(cmd.err)
    deadline = time.monotonic() + STARTED_S
    while len(cmd.err) < mark + 2000:            # it draws on: it is running after it
        assert cmd.proc.poll() is None, cmd.err[-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    rc, err, _ = cmd.stop(signal.SIGTERM)
    assert rc == 128 + signal.SIGTERM, err
    assert json.loads((tmp_path / "out.json").read_text())["signal"] == "SIGTERM"


def test_compare_keeps_the_protocols_it_ran(tmp_path):
    cmd = Command(["compare", "--protocols", "gse,roce"] + DEAD + ["--json", "cmp.json"],
                  str(tmp_path))
    cmd.wait_for("events/s")
    rc, err, _ = cmd.stop(signal.SIGTERM)
    assert rc == 128 + signal.SIGTERM and "Traceback" not in err, err
    s = json.loads((tmp_path / "cmp.json").read_text())
    assert list(s) == ["gse"]                     # roce never started
    assert s["gse"]["complete"] is False and s["gse"]["signal"] == "SIGTERM"


def test_replay_writes_its_partial_results_on_a_signal(tmp_path):
    trace = tmp_path / "ar.jsonl"
    trace.write_text(json.dumps({"id": 1, "op": "all_reduce", "ranks": "0-15",
                                 "bytes": 3_200_000}) + "\n")
    cmd = Command(["replay", str(trace)] + DEAD[:2] + DEAD[6:] + ["--json", "r.json"],
                  str(tmp_path))
    cmd.wait_for("events/s")
    rc, err, _ = cmd.stop(signal.SIGINT)
    assert rc == 128 + signal.SIGINT and "Traceback" not in err, err
    s = json.loads((tmp_path / "r.json").read_text())
    assert s["complete"] is False and s["signal"] == "SIGINT"
    assert s["collectives_done"] == 0


def test_sweep_keeps_the_rows_it_has(tmp_path):
    pytest.importorskip("dask.distributed")
    grid = {"name": "sig", "base": {"k": 4, "traffic": "permutation", "size": 60000},
            "grid": {"workload": [
                {"label": "quick"},
                {"label": "stuck", "size": 200000, "stall-us": 0,
                 "fail": "tier:agg-core:100%@10us,detect=never"}]}}
    (tmp_path / "grid.json").write_text(json.dumps(grid))
    cmd = Command(["sweep", "grid.json", "--workers", "1", "--out", "t"], str(tmp_path))
    deadline = time.monotonic() + STARTED_S
    while not (tmp_path / "t.csv").exists():      # written when the first run is done
        assert time.monotonic() < deadline and cmd.proc.poll() is None, cmd.err[-2000:]
        time.sleep(0.1)
    rc, err, _ = cmd.stop(signal.SIGTERM)
    assert rc == 128 + signal.SIGTERM and "Traceback" not in err, err
    assert "interrupted by SIGTERM: 1 of 2 runs" in err
    rows = (tmp_path / "t.csv").read_text().splitlines()
    assert len(rows) == 2 and ",quick," in rows[1] and ",ok," in rows[1]
