# Augments gse/common/finished.py.  FinishedIds becomes an extension type whose ``add`` (once
# per message delivered) and ``in`` (once per message's first packet) run as C code; the key
# stays a Python integer, so a key beyond 64 bits fails in ``keys.append`` as in the
# reference.  ``times`` and ``keys`` stay array objects: they grow, and a typed memoryview
# held on them would forbid it.
import cython

# COMPACT_AT stays a module attribute (a test lowers it to see the arrays cut).
cdef long long MASK32


@cython.final
cdef class FinishedIds:
    cdef public dict npkts_of
    cdef public object times
    cdef public object keys
    cdef public Py_ssize_t head
    cdef public long long hold_ps
    cdef public long long limit

    @cython.locals(keys=object, times=object, npkts_of=dict, oldest="long long",
                   head="Py_ssize_t", n="Py_ssize_t")
    cpdef add(self, src, msg_id, npkts, long long now)

    @cython.locals(s="unsigned long long")
    cpdef bint has(self, long long src, long long msg_id) except -1
