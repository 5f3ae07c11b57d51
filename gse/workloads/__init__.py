"""Traffic as data: generators (``traffic``), htsim connection matrices (``cmfile``),
training collectives with dependencies (``collectives``), recorded traces (``traces``)
and their replay on the simulation (``replay``)."""
