"""The Python API (docs/api.md): ``Scenario`` describes a run as data, ``run`` and
``compare`` run it in the simulation and return ``Result`` objects.  The command line,
sweeps and (later) the other runtimes build on it; it imports nothing of ``gse.cli``."""

from gse.api.result import Result, Summary
from gse.api.run import compare, run
from gse.api.scenario import Scenario, ScenarioError

__all__ = ["Scenario", "ScenarioError", "Result", "Summary", "run", "compare"]
