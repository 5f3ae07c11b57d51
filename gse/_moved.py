"""Old module paths, from before the code was split into packages (release 0.1.0), kept
importable for one release: ``import gse.sim`` gives ``gse.runtimes.sim.network`` (the
same module object) with a ``DeprecationWarning`` naming the new path.

A meta-path finder rather than 40 shim files, so that the tree shows only the new layout.
``gse.wire`` is not listed: it is now the wire package, which re-exports the codec's names.
Remove in 0.3.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

MOVED = {
    "gse.packet": "gse.wire.packet",
    "gse.fifo": "gse.common.fifo",
    "gse.bits": "gse.common.bits",
    "gse.agent": "gse.agents.interface",
    "gse.host": "gse.agents.gse_host",
    "gse.sender": "gse.agents.sender",
    "gse.receiver": "gse.agents.receiver",
    "gse.scheduler": "gse.agents.scheduler",
    "gse.entropy": "gse.agents.entropy",
    "gse.bitmap": "gse.agents.bitmap",
    "gse.dcqcn": "gse.agents.dcqcn",
    "gse.plain_host": "gse.agents.plain_host",
    "gse.roce": "gse.agents.roce_host",
    "gse.eventq": "gse.runtimes.sim.eventq",
    "gse.sim": "gse.runtimes.sim.network",
    "gse.run": "gse.runtimes.sim.run",
    "switchmodel.fabric_sim": "gse.runtimes.sim.fabric_nodes",
    "gse.udp_io": "gse.runtimes.udp.io",
    "gse.udp_link": "gse.runtimes.udp.link",
    "gse.udp_node": "gse.runtimes.udp.node",
    "gse.udp": "gse.runtimes.udp.network",
    "gse.udp_config": "gse.runtimes.udp.config",
    "gse.udp_results": "gse.runtimes.udp.results",
    "gse.agent_main": "gse.runtimes.udp.agent_process",
    "gse.mininet_run": "gse.runtimes.mininet.run",
    "gse.traffic": "gse.workloads.traffic",
    "gse.cmfile": "gse.workloads.cmfile",
    "gse.collectives": "gse.workloads.collectives",
    "gse.replay": "gse.workloads.replay",
    "gse.traces": "gse.workloads.traces",
    "gse.report": "gse.metrics.report",
    "gse.compare": "gse.metrics.plots",
    "gse.cli_common": "gse.cli.common",
    "gse.udp_cli": "gse.cli.run",
    "gse.replay_cli": "gse.cli.replay",
}


def new_name(old):
    """The current name of ``old`` (a moved module or a submodule of a moved package)."""
    if old in MOVED:
        return MOVED[old]
    head, _, tail = old.rpartition(".")
    while head:
        if head in MOVED:
            return MOVED[head] + old[len(head):]
        head = head.rpartition(".")[0]
    return None


class _Alias(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        warnings.warn("%s moved to %s; the old name goes in release 0.3"
                      % (spec.name, self.target), DeprecationWarning, stacklevel=2)
        return importlib.import_module(self.target)

    def exec_module(self, module):
        pass            # already executed under its new name


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        target_name = new_name(fullname)
        if target_name is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(target_name))


def install():
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())    # before the path finder, which
        # would load a second copy of a moved package's submodule under the old name
