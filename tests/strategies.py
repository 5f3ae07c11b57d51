"""Hypothesis strategies shared by the property tests: traffic on a small fabric."""

import random

from hypothesis import strategies as st

from gse.workloads.traffic import Message, all_to_all, incast, permutation


def workloads(n_hosts, perm_max=400_000, incast_max=200_000, a2a_hosts_max=5,
              random_max=300_000):
    """Permutation, incast, all-to-all among a few hosts, or random messages with
    staggered starts, each with sizes up to the given bounds."""

    @st.composite
    def draw_workload(draw):
        kind = draw(st.sampled_from(["permutation", "incast", "random", "all-to-all"]))
        rng = random.Random(draw(st.integers(0, 2**32)))
        if kind == "permutation":
            return permutation(n_hosts, draw(st.integers(1, perm_max)), rng)
        if kind == "incast":
            return incast(n_hosts, draw(st.integers(2, 15)),
                          draw(st.integers(1, incast_max)), rng)
        if kind == "all-to-all":
            hosts = sorted(rng.sample(range(n_hosts), draw(st.integers(2, a2a_hosts_max))))
            return all_to_all(n_hosts, draw(st.integers(1, 60_000)), hosts=hosts)
        msgs = []
        for i in range(draw(st.integers(1, 30))):
            src, dst = rng.sample(range(n_hosts), 2)
            msgs.append(Message(i + 1, src, dst, draw(st.integers(1, random_max)),
                                draw(st.integers(0, 50)) * 1_000_000))
        return msgs

    return draw_workload()
