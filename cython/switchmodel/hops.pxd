# Augments switchmodel/hops.py: the two int arrays are typed memoryviews (C reads per packet).

cdef class HopTable:
    cdef public int[::1] group_of
    cdef public int[::1] host_port
    cdef public list rows
    cdef public list local
    cdef public object private

    cpdef object lookup(self, long long dst)
