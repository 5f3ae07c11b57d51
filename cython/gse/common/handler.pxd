# Augments gse/common/handler.py: the base of the event queue's typed dispatch
# (gse.runtimes.sim.eventq calls fire as a C method).
cdef class Handler:
    cpdef fire(self, object a, object b)
