"""GSE against the RoCEv2 + PFC baseline on the same topology, traffic and seed.

The comparison is the project's main job: both protocols see exactly the same messages
(same ids, sizes and start times) on the same fabric, and their summaries are set side by
side; the FCT CDFs can be drawn (matplotlib, optional).
"""

from gse.report import format_side_by_side
from gse.run import run_simulation


def compare(topo, messages, configs, seed=1, loss_rate=0.0, corrupt_rate=0.0, until_ps=-1):
    """Run every (protocol, config) in ``configs``; returns {protocol: RunResult}."""
    results = {}
    for protocol, cfg in configs.items():
        results[protocol] = run_simulation(topo, messages, protocol, cfg, seed, loss_rate,
                                           corrupt_rate, until_ps)
    return results


def side_by_side(results):
    labels = list(results)
    return format_side_by_side([results[p].summary for p in labels], labels)


def plot_fct_cdfs(results, path, title=None):
    """FCT CDFs of every protocol in one figure; raises RuntimeError without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise RuntimeError("plotting needs matplotlib: pip install 'gse-transport[plot]'"
                           ) from exc
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for protocol, result in results.items():
        fcts = sorted(r.fct_ps() / 1e6 for r in result.records if r.completed)
        if not fcts:
            continue
        ys = [(i + 1) / len(fcts) for i in range(len(fcts))]
        ax.step(fcts, ys, where="post", label="%s (p99 %.0f us)"
                % (protocol, result.summary["fct_us"]["p99"]))
    ax.set_xlabel("flow completion time (us)")
    ax.set_ylabel("fraction of messages")
    ax.set_ylim(0, 1.01)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
