"""Sweeps: grids of independent simulations run on Dask (``gse sweep``, docs/sweeps.md).

The package is also the function ``gse.sweep(base, grid, ...)``: a grid over a Scenario
(``gse.sweep.scenario_grid.sweep``).  A module cannot be a function, so the package's
class gets a ``__call__``: ``gse.sweep`` is the same object whether reached as the lazy
``gse.sweep`` of the API or by importing the package, and nothing heavy (dask, pyarrow)
loads until it is called.
"""

import sys
import types


class _SweepPackage(types.ModuleType):
    def __call__(self, base, grid, **options):
        """``gse.sweep.scenario_grid.sweep(base, grid, **options)``."""
        from gse.sweep.scenario_grid import sweep
        return sweep(base, grid, **options)


sys.modules[__name__].__class__ = _SweepPackage
