# Augments gse/agents/phases.py: enter() compiled, a C function the agents cimport (a message
# changes phase two or three times in its life), on Phased, the base class of OutMsg and
# InMsg whose phase is a C field; the phase constants stay Python integers (each agent
# declares its own C copies).
import cython

# ALLOWED stays a module attribute (tests read it)


cdef class Phased:
    cdef public long long phase     # SENDING ... DROPPED


@cython.locals(old="long long", n="Py_ssize_t", mask="long long")
cpdef enter(Phased msg, long long phase)
