"""Stand-ins for the ``cython`` decorators the hot modules use, for an install without
Cython (the pure-Python build): each returns the class unchanged, and ``cast`` its
value."""

compiled = False


def no_gc(cls):
    return cls


def freelist(n):
    return lambda cls: cls


def cclass(cls):
    return cls


def boundscheck(flag):
    return lambda fn: fn


def wraparound(flag):
    return lambda fn: fn


def cast(t, x):
    return x
