# Augments switchmodel/pfc.py.  dynamic_alpha stays a Python number (int or float as given).
import cython


cdef class PfcConfig:
    cdef public long long xoff_bytes
    cdef public long long xon_gap_bytes
    cdef public long long headroom_bytes
    cdef public object dynamic_alpha
    cdef public long long buffer_bytes
    cdef public long long pause_quanta
    cdef public object model


cdef class PfcState


@cython.locals(cfg=PfcConfig, free="long long")
cdef long long _xoff(PfcState st) except? -1


cdef class PfcState:
    cdef public PfcConfig cfg
    cdef public long long[::1] ingress_bytes
    cdef public bytearray pausing
    cdef public long long used
    cdef public long long pauses_sent
    cdef public long long resumes_sent
    cdef public long long headroom_overflows
    cdef public long long peak_ingress
    cdef public bint dynamic
    cdef public bint htsim

    cpdef long long xoff(self) except? -1

    @cython.locals(b="long long", xoff="long long")
    cpdef bint on_enqueue(self, Py_ssize_t port, long long size) except -1

    @cython.locals(b="long long", xon="long long")
    cpdef bint on_dequeue(self, Py_ssize_t port, long long size) except -1

    @cython.locals(b="long long")
    cpdef bint on_release(self, Py_ssize_t port, long long size) except -1
