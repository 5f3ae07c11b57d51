"""What crosses a link: the ``Packet`` every agent and runtime passes around
(``gse.wire.packet``) and its fixed 64-byte encoding for real datagrams
(``gse.wire.codec``, the reference; docs/wire-format.md), which the runtimes call through
``gse.wire.fastcodec`` (C in the compiled build).  Nothing here keeps state between packets."""

from gse import _build

_build.activate(__path__, __name__)   # compiled modules first (gse/_build.py)

# The encodings a runtime can put on the wire: the project's 64-byte header (default) and
# the UET profile (UET 1.0 PDS/SES headers over UDP 4793, gse.wire.uet).  Each is a module
# with encode(pkt) -> bytes and decode(data, max_datagram) -> Packet, raising WireError.
WIRE_PROFILES = ("gse", "uet")


def wire_profile(name):
    """The codec module of wire profile ``name`` (``WIRE_PROFILES``)."""
    if name == "gse":
        from gse.wire import codec
        return codec
    if name == "uet":
        from gse.wire import uet
        return uet
    raise ValueError("unknown wire profile %r (known: %s)" % (name, ", ".join(WIRE_PROFILES)))
