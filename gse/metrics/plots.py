"""Plots of a run's results (matplotlib, optional: ``pip install 'gse-transport[plot]'``)."""


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
