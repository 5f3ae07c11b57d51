"""Progress bars: drawn on a terminal, silent otherwise, never changing a run."""

import io
import random

from gse.cli.main import main
from gse.cli.progress import Progress, SimProgress, wanted
from gse.protocols import default_config
from gse.runtimes.sim.run import run_simulation
from gse.workloads.traffic import permutation
from topologies import fat_tree

TOPO = fat_tree(4)


class Tty(io.StringIO):
    def isatty(self):
        return True


class Args:
    quiet = False


def test_wanted_only_on_a_terminal_without_quiet():
    assert wanted(Args(), Tty())
    assert not wanted(Args(), io.StringIO())
    quiet = Args()
    quiet.quiet = True
    assert not wanted(quiet, Tty())


def test_a_run_with_a_progress_bar_is_the_same_run():
    msgs = permutation(16, 300_000, random.Random(1))
    out = Tty()
    seen = []

    class Spy(SimProgress):
        def at_stop(self, now):
            seen.append((now, len(self.net.sender_done)))
            SimProgress.at_stop(self, now)
    with Progress(True, out) as progress:
        make = progress.sim("gse", len(msgs))
        spy = []

        def spy_make(net):
            obs = make(net)
            obs.__class__ = Spy
            spy.append(obs)
            return obs
        res = run_simulation(TOPO, msgs, "gse", default_config("gse"), 1,
                             observers=[spy_make])
    plain = run_simulation(TOPO, msgs, "gse", default_config("gse"), 1)
    assert res.per_message() == plain.per_message()
    assert len(seen) >= 2                      # it looked during the run
    assert [t for t, _ in seen] == sorted(t for t, _ in seen)
    text = out.getvalue()
    assert "gse" in text and "16/16" in text and "events/s" in text


def test_disabled_progress_hands_out_nothing():
    with Progress(False) as progress:
        assert progress.sim("x", 3)(None) is None
        progress.counter("y", 3)(2, "status")       # does nothing, raises nothing
        progress.mininet("z")({"hosts": 1})


def test_commands_are_quiet_off_a_terminal(capsys):
    assert main(["sim", "--k", "4", "--size", "100000"]) == 0
    assert main(["compare", "--k", "4", "--size", "100000", "--protocols", "gse,roce",
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err == ""
