"""Bit helpers of the ACK path: a 64-bit little-endian read and the lowest set bit.

Plain Python in the reference; ``cython/gse/common/bits.pyx`` is the compiled twin, whose
functions the compiled sender and receive bitmap call as C functions on C integers
(``int.from_bytes`` of a slice and ``int.bit_length`` are method calls on Python objects
there, a few hundred times dearer than the arithmetic they do).
``tests/test_compiled_containers.py`` checks that the twins agree.
"""


def le64(buf, start):
    """The little-endian integer of ``buf[start:start + 8]`` (fewer bytes near the end)."""
    return int.from_bytes(buf[start:start + 8], "little")


def lowest_bit(x):
    """The index of the lowest set bit of ``x`` (-1 for 0); ``x`` below 2^64."""
    return (x & -x).bit_length() - 1
