"""What crosses a link: the ``Packet`` every agent and runtime passes around
(``gse.wire.packet``) and its fixed 64-byte encoding for real datagrams
(``gse.wire.codec``; docs/wire-format.md).  Nothing here keeps state between packets."""

from gse import _build

_build.activate(__path__, __name__)   # compiled modules first (gse/_build.py)

# ``gse.wire`` was the codec module before the packages: its names stay importable here
from gse.wire.codec import (  # noqa: E402
                            MAX_DATAGRAM,
                            REASONS,
                            WireError,
                            decode,
                            encode,
                            payload_pattern,
                            verify_payload,
)

__all__ = ["MAX_DATAGRAM", "REASONS", "WireError", "decode", "encode", "payload_pattern",
           "verify_payload"]
