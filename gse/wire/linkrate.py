"""Serialisation time: how long ``nbytes`` take to clock onto a link of ``mbps`` Mb/s, in
integer picoseconds, rounded up.  The one formula every runtime, the switch agent and the
metrics use (``topologies.serialisation_ps`` computes the same from a rate in Gb/s, since
topologies import nothing of ``gse``).

Rates are integer Mb/s, so 4,160 bytes at 100 Gb/s is exactly 332,800 ps and event times
never depend on float rounding.

Its compiled twin is the ``cdef inline`` body in ``cython/gse/wire/linkrate.pxd``: a compiled
module that cimports it there computes it in place, with no call.  Such a module imports
the module and calls ``linkrate.wire_time_ps(...)`` (Cython refuses a cimported inline
function imported by name); this module itself is not compiled.
"""


def wire_time_ps(nbytes, mbps):
    """Picoseconds to serialise ``nbytes`` at ``mbps`` Mb/s (> 0), rounded up."""
    return (nbytes * 8_000_000 + mbps - 1) // mbps
