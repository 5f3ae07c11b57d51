"""The UDP runtimes' I/O layer: endpoints deliver every datagram with the sender's
address as the socket module reports it, count what they could not send, and the
scheduler's clock is ``time.monotonic_ns`` in picoseconds.  Run in both builds (the
compiled endpoint uses recvfrom(2)/sendto(2) itself on IPv4)."""

import asyncio
import time

import pytest

from gse.runtimes.udp.io import Endpoint, Scheduler, open_udp_socket, run_async, uvloop_available

LOOPS = ["asyncio"] + (["uvloop"] if uvloop_available() else [])


@pytest.mark.parametrize("loop", LOOPS)
def test_endpoints_deliver_in_order_with_the_senders_address(loop):
    async def main():
        a = Endpoint(open_udp_socket("127.0.0.1", 0), "a")
        b = Endpoint(open_udp_socket("127.0.0.1", 0), "b")
        plain = open_udp_socket("127.0.0.1", 0)          # a sender outside the runtime
        got = []
        done = asyncio.get_running_loop().create_future()

        def handler(data, addr):
            got.append((data, addr))
            if len(got) == 302 and not done.done():
                done.set_result(None)

        try:
            await b.start(handler)
            await a.start(lambda data, addr: None)
            sizes = [0, 1, 64, 4160, 65507] + list(range(100, 395))
            for i, n in enumerate(sizes):
                a.send(bytes([i & 255]) * n, b.addr)
            plain.sendto(b"plain", b.addr)
            a.send(b"by name", ("localhost", b.addr[1]))   # not an IPv4 literal
            await asyncio.wait_for(done, 10)
            assert [d for d, _ in got[:300]] == [bytes([i & 255]) * n
                                                 for i, n in enumerate(sizes)]
            assert {addr for _, addr in got[:300]} == {a.addr}
            assert got[300] == (b"plain", plain.getsockname())
            assert got[301] == (b"by name", a.addr)
            assert type(got[0][1][0]) is str and type(got[0][1][1]) is int
            assert a.sent == 301 and a.send_blocked == a.send_errors == 0
            assert b.recv_errors == 0 and b.errors == []
        finally:
            await a.close()
            await b.close()
            plain.close()
        assert a.sock.fileno() == -1 and b.sock.fileno() == -1

    run_async(main, loop)


def test_endpoint_counts_what_it_cannot_send_and_keeps_handler_bugs():
    async def main():
        a = Endpoint(open_udp_socket("127.0.0.1", 0), "a")
        b = Endpoint(open_udp_socket("127.0.0.1", 0, rcvbuf=0), "b")
        seen = []
        try:
            def handler(data, addr):
                seen.append(data)
                if data == b"boom":
                    raise RuntimeError("driver bug")
            await b.start(handler)
            a.send(b"x" * 70000, b.addr)          # larger than a UDP datagram: an error
            a.send(b"boom", b.addr)
            a.send(b"after", b.addr)
            for _ in range(200):
                await asyncio.sleep(0.005)
                if len(seen) == 2:
                    break
            assert seen == [b"boom", b"after"]
            assert a.send_errors == 1 and a.sent == 2
            assert len(b.errors) == 1 and "driver bug" in b.errors[0]
        finally:
            await a.close()
            await b.close()
            await a.close()                       # idempotent

    run_async(main, "asyncio")


def test_scheduler_clock_is_monotonic_ns_in_picoseconds():
    loop = asyncio.new_event_loop()
    try:
        sched = Scheduler(loop)
        sched.start_clock()
        t0 = time.monotonic_ns()
        a = sched.now()
        b = sched.now()
        t1 = time.monotonic_ns()
        assert 0 <= a <= b <= (t1 - sched.t0_ns) * 1000
        assert b >= (t0 - sched.t0_ns) * 1000
        sched.start_clock(delay_ns=10**9)
        assert sched.now() == 0                   # before time 0 the clock reads 0
        sched.close()
    finally:
        loop.close()


def test_known_addresses_come_back_as_the_same_tuple():
    """A node keys its ports by its neighbours' (ip, port) tuples; after ``know`` the
    endpoint hands back those very objects (compiled build), equal ones in any build."""
    async def main():
        a = Endpoint(open_udp_socket("127.0.0.1", 0), "a")
        b = Endpoint(open_udp_socket("127.0.0.1", 0), "b")
        got = []
        try:
            mine = (a.addr[0], a.addr[1])
            b.know(mine)
            b.know(("localhost", 1))                   # not a literal: nothing to do
            b.know(("::1", 1))
            await b.start(lambda data, addr: got.append(addr))
            a.send(b"x", b.addr)
            for _ in range(200):
                await asyncio.sleep(0.005)
                if got:
                    break
            assert got == [mine]
            if b.c4:
                assert got[0] is mine
        finally:
            await a.close()
            await b.close()

    run_async(main, "asyncio")


def test_datagrams_from_many_addresses_do_not_grow_the_address_caches():
    """Issue 19 item 5: the compiled endpoint cached every sender's (ip, port) for ever
    (230 B per address: 500,000 addresses took a switch agent from 31 to 146 MB).  Now a
    neighbour's address stays cached and others only up to ``ADDR_CACHE_MAX``."""
    import socket

    from gse.runtimes.udp import io
    n = io.ADDR_CACHE_MAX + 500

    async def main():
        b = Endpoint(open_udp_socket("127.0.0.1", 0), "b")
        neighbour = Endpoint(open_udp_socket("127.0.0.1", 0), "n")
        mine = (neighbour.addr[0], neighbour.addr[1])
        b.know(mine)
        got = []
        try:
            await b.start(lambda data, addr: got.append(addr))
            for i in range(n):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind(("127.2.%d.%d" % (i // 250, i % 250 + 1), 0))
                s.sendto(b"x", b.addr)
                s.close()
                if i % 100 == 99:
                    await asyncio.sleep(0)
            neighbour.send(b"y", b.addr)
            for _ in range(400):
                await asyncio.sleep(0.005)
                if len(got) >= n + 1:
                    break
            assert len(got) == n + 1 and len(set(got)) == n + 1
            assert got[-1] == mine
            if b.c4:
                assert got[-1] is mine                 # the neighbour's own tuple
            assert len(b.addr_cache) <= io.ADDR_CACHE_MAX
            for i in range(n):                         # and sending to many addresses
                b.send(b"z", ("127.4.%d.%d" % (i // 250, i % 250 + 1), 9))
            assert len(b.sockaddr_cache) <= io.ADDR_CACHE_MAX
        finally:
            await b.close()
            await neighbour.close()

    run_async(main, "asyncio")


@pytest.mark.parametrize("loop", LOOPS)
def test_a_forwarding_handler_sends_everything_in_order(loop):
    """What a handler sends while its socket is drained is held and leaves together
    (sendmmsg(2) in the compiled build): every datagram arrives, in order, counted once;
    one too large for UDP counts as a send error and the rest still go."""
    async def main():
        src = open_udp_socket("127.0.0.1", 0)
        fwd = Endpoint(open_udp_socket("127.0.0.1", 0), "fwd")
        dst = Endpoint(open_udp_socket("127.0.0.1", 0), "dst")
        got = []
        done = asyncio.get_running_loop().create_future()

        def forward(data, addr):
            fwd.send(data, dst.addr)
            if data == b"10":
                fwd.send(b"x" * 70000, dst.addr)        # refused by the kernel

        def sink(data, addr):
            got.append(data)
            if len(got) == 300 and not done.done():
                done.set_result(None)

        try:
            await fwd.start(forward)
            await dst.start(sink)
            for i in range(300):                        # a burst: read in batches
                src.sendto(b"%d" % i, fwd.addr)
            await asyncio.wait_for(done, 10)
            await asyncio.sleep(0.05)
            assert got == [b"%d" % i for i in range(300)]
            assert fwd.sent == 300 and fwd.send_errors == 1 and fwd.send_blocked == 0
            assert not fwd.out_data and not fwd.dirty       # nothing held back
        finally:
            src.close()
            await fwd.close()
            await dst.close()

    run_async(main, loop)


@pytest.mark.parametrize("wake", ["spin", "timerfd"])
def test_precise_timers_fire_in_order_never_early_and_close(wake):
    """Precise timers, polled or woken by a timerfd: every event fires once, in time
    order, never before its time; closing releases the timerfd."""
    import os
    before = len(os.listdir("/proc/self/fd"))

    async def main():
        sched = Scheduler(asyncio.get_running_loop(), True, wake)
        sched.start_clock()
        fired = []
        done = asyncio.get_running_loop().create_future()
        times = [(i * 7919) % 50 * 100_000_000 + 200_000_000 for i in range(50)]  # 0.2-5 ms

        def at(t, _arg):
            fired.append((t, sched.now()))
            if len(fired) == len(times) and not done.done():
                done.set_result(None)
        for t in times:
            sched.at(t, at, None)
        await asyncio.wait_for(done, 10)
        sched.close()
        return sched, fired, times

    sched, fired, times = run_async(main, "asyncio")
    assert [t for t, _ in fired] == sorted(times)
    assert all(now >= t for t, now in fired)
    assert sched.tfd == -1 and len(os.listdir("/proc/self/fd")) <= before
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(ValueError):
            Scheduler(loop, True, "sometimes")
    finally:
        loop.close()
