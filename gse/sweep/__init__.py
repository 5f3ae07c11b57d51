"""Sweeps: grids of independent simulations run on Dask (``gse sweep``, docs/sweeps.md)."""
