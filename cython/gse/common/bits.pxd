# The compiled twin of gse/common/bits.py (cython/gse/common/bits.pyx).

cpdef unsigned long long le64(bytearray buf, Py_ssize_t start) except? 0
cpdef int lowest_bit(unsigned long long x) noexcept
