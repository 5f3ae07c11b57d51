# The compiled twin of gse/wire/linkrate.py, with its body here so that every compiled module
# that cimports it computes it in place.  Operands are non-negative and mbps > 0 (the
# configuration checks), so C division is the reference's floor division.
cimport cython


@cython.cdivision(True)
cdef inline long long wire_time_ps(long long nbytes, long long mbps) noexcept nogil:
    return (nbytes * 8000000 + mbps - 1) // mbps
