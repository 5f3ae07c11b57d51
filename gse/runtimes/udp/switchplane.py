"""A UDP switch's per-packet path in C: the pure build's stand-in (``AVAILABLE`` False).

The compiled build replaces this module with ``cython/gse/runtimes/udp/switchplane.pyx``:
recvmmsg(2) into C buffers, the header parsed in C, ``Switch.route``'s choice, the
``OutputQueue`` model as C FIFOs of buffers, the ``EmulatedPort`` link schedule with one
wake-up per switch on the node's ``Scheduler``, sendmmsg(2) -- no Python object per
datagram.  The pure build has no such path: its switches forward through the Python
objects (``gse.runtimes.udp.node.SwitchDriver``), which are the model this path follows,
so ``gse.runtimes.udp.dataplane.attach`` leaves them there.
"""

AVAILABLE = False     # the compiled twin says True


class SwitchPlane:
    """Not available in the pure build (see the module's docstring)."""

    def __init__(self, drv):
        raise RuntimeError("the switch data plane is compiled only (pure build)")
