# Augments gse/agents/dcqcn.py.  Rates are C doubles: the same IEEE operations, in the same
# order, as the Python floats of the reference.
import cython


cdef class Dcqcn:
    cdef public double line
    cdef public double rc
    cdef public double rt
    cdef public double alpha
    cdef public double g
    cdef public long long alpha_period
    cdef public long long inc_period
    cdef public long long byte_count
    cdef public long long f
    cdef public double ai
    cdef public double hai
    cdef public double min_rate
    cdef public long long t_count
    cdef public long long b_count
    cdef public long long bytes_since
    cdef public bint cnp_since_alpha
    cdef public long long alpha_deadline
    cdef public long long inc_deadline
    cdef public long long cuts
    cdef public bint mlx
    cdef public long long dec_period
    cdef public bint clamp
    cdef public bint first_cnp
    cdef public long long dec_anchor
    cdef public long long dec_next
    cdef public bint dec_flag
    cdef public long long stage
    cdef public list log

    cpdef bint limited(self)

    cpdef object gap_ps(self, long long nbytes)

    cpdef on_cnp(self, long long now)

    cpdef on_sent(self, long long nbytes, long long now)

    @cython.locals(a="long long", b="long long")
    cpdef long long next_deadline(self)

    cpdef on_timer(self, long long now)

    @cython.locals(f="long long", t="long long", b="long long")
    cpdef _increase(self)

    @cython.locals(k="long long")
    cpdef _cnp_mlx(self, long long now)

    @cython.locals(t="long long", n="long long", keep="double", alpha="double")
    cpdef _catch_up_alpha(self, long long now)

    cpdef _timer_mlx(self, long long now)
