# The compiled twin of gse/bits.py (cython/gse/bits.pyx).

cpdef unsigned long long le64(bytearray buf, Py_ssize_t start) except? 0
cpdef int lowest_bit(unsigned long long x) noexcept
