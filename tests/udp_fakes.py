"""Stand-ins the UDP runtime's tests share: an endpoint that keeps what a node sends."""


class FakeEndpoint:
    """What ``gse.runtimes.udp.io.Endpoint`` offers a node driver, without a socket: every
    datagram sent is kept in ``out`` as ``(data, addr)``."""

    def __init__(self):
        self.out = []
        self.sent = self.send_blocked = self.send_errors = self.recv_errors = 0

    def send(self, data, addr):
        self.out.append((data, addr))
