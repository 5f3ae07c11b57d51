"""Traffic as data: generators (``traffic``), htsim connection matrices (``cmfile``),
training collectives with dependencies (``collectives``), recorded traces (``traces``)
and their replay on the simulation (``replay``)."""

from gse import _build

_build.activate(__path__, __name__)   # compiled modules first (gse/_build.py)
