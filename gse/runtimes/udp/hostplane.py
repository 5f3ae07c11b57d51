"""A UDP host's packet path in C: the pure build's stand-in (``AVAILABLE`` False).

The compiled build replaces this module with ``cython/gse/runtimes/udp/hostplane.pyx``:
recvmmsg(2) into C buffers, each datagram's header parsed and its payload pattern
checked in the buffer, decoded straight into the ``Packet`` the agent is handed (no bytes
object, no address tuple); the NIC's packets encoded straight into a batch of C buffers
and sent with sendmmsg(2) (no bytes object per datagram).  The agent
(``HostDriver.driver``), the emulated link's schedule (``HostNic``) and every counter
stay the Python objects'.  The pure build has no such path: its hosts run through
``gse.runtimes.udp.node.HostDriver.datagram`` and ``gse.runtimes.udp.link.HostNic``,
the model this path follows, so ``gse.runtimes.udp.dataplane.attach_host`` leaves them
there.
"""

AVAILABLE = False     # the compiled twin says True


class HostPlane:
    """Not available in the pure build (see the module's docstring)."""

    def __init__(self, drv):
        raise RuntimeError("the host packet path in C is compiled only (pure build)")
