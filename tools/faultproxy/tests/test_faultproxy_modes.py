"""Each mode of the fault proxy against a real echo upstream over real sockets: what a client sees
on a new connection and on one already open when the mode switches."""

import errno
import socket
import time

import pytest

from faultproxy_testlib import recv_exactly, wait_until
from faultproxy import FaultProxy, FaultProxyError, ProxyGroup

# How long a client waits to show that nothing arrives (blackhole): bounded, not a sleep.
QUIET = 0.5


def connect(port, timeout=5.0):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def roundtrip(sock, payload=b"ping"):
    sock.sendall(payload)
    return recv_exactly(sock, len(payload))


def assert_reset(sock):
    """The connection was reset: recv (or a send after it) fails with ECONNRESET, within bounds."""
    sock.settimeout(5.0)
    with pytest.raises((ConnectionResetError, BrokenPipeError)):
        for _ in range(100):        # a send may be accepted before the RST is seen
            sock.sendall(b"x")
            if sock.recv(10) == b"":
                pytest.fail("closed with a FIN, not reset")


def test_pass_forwards_both_ways(echo, proxy):
    with connect(proxy.port) as s:
        assert roundtrip(s, b"hello") == b"hello"
        big = bytes(range(256)) * 1024
        assert roundtrip(s, big) == big
    assert echo.snapshot()[0] == 1


def test_refuse_closes_the_listener_and_keeps_the_port(echo, proxy):
    with connect(proxy.port) as open_before:
        assert roundtrip(open_before) == b"ping"
        proxy.set_mode("refuse")
        with pytest.raises(ConnectionRefusedError):
            connect(proxy.port)
        assert roundtrip(open_before, b"still") == b"still"     # open connections are left alone
    proxy.set_mode("pass")
    with connect(proxy.port) as s:
        assert roundtrip(s) == b"ping"


def test_reset_new_connections(echo, proxy):
    proxy.set_mode("reset")
    with connect(proxy.port) as s:
        assert_reset(s)
    assert echo.snapshot()[0] == 0


def test_reset_kills_open_connections(echo, proxy):
    with connect(proxy.port) as s:
        assert roundtrip(s) == b"ping"
        proxy.set_mode("reset")
        assert_reset(s)
    wait_until(lambda: proxy.active_connections() == 0, what="the reset connection to be gone")


def test_blackhole_new_connection_is_accepted_and_never_answered(echo, proxy):
    proxy.set_mode("blackhole")
    with connect(proxy.port) as s:
        s.sendall(b"anyone there?")
        s.settimeout(QUIET)
        with pytest.raises(socket.timeout):
            s.recv(10)                      # neither an answer nor a close
        assert proxy.active_connections() == 1
        assert echo.snapshot() == (0, b"")  # the upstream never saw it
        proxy.set_mode("pass")              # a blackholed connection stays dead
        s.sendall(b"again")
        with pytest.raises(socket.timeout):
            s.recv(10)
    wait_until(lambda: proxy.active_connections() == 0, what="the client's close to be seen")


def test_blackhole_stalls_open_connections_and_they_resume(echo, proxy):
    with connect(proxy.port) as s:
        assert roundtrip(s, b"one") == b"one"
        proxy.set_mode("blackhole")
        s.sendall(b"two")
        s.settimeout(QUIET)
        with pytest.raises(socket.timeout):
            s.recv(10)
        assert echo.snapshot()[1] == b"one"         # "two" is held, not forwarded
        proxy.set_mode("pass")
        assert recv_exactly(s, 3) == b"two"
        assert echo.snapshot()[1] == b"onetwo"


def test_blackhole_stalls_the_answer_direction_too():
    """An answer the upstream sends after the switch is held too, and arrives once back to pass."""
    upstream = socket.create_server(("127.0.0.1", 0))
    with upstream, FaultProxy("127.0.0.1", upstream.getsockname()[1]) as p, connect(p.port) as s:
        upstream.settimeout(5.0)
        server_side, _ = upstream.accept()
        with server_side:
            p.set_mode("blackhole")
            server_side.sendall(b"late")
            s.settimeout(QUIET)
            with pytest.raises(socket.timeout):
                s.recv(4)
            p.set_mode("pass")
            assert recv_exactly(s, 4) == b"late"


def test_delay_adds_the_delay_per_chunk_each_way(echo, proxy):
    proxy.set_mode("delay", ms=300)
    with connect(proxy.port) as s:
        start = time.monotonic()
        assert roundtrip(s, b"slow") == b"slow"
        elapsed = time.monotonic() - start
    assert 0.6 <= elapsed < 5.0, elapsed            # 300 ms out, 300 ms back


def test_delay_applies_to_open_connections(echo, proxy):
    with connect(proxy.port) as s:
        assert roundtrip(s) == b"ping"
        proxy.set_mode("delay", ms=250)
        start = time.monotonic()
        assert roundtrip(s) == b"ping"
        assert time.monotonic() - start >= 0.5


def test_drip_forwards_n_bytes_per_interval(echo, proxy):
    proxy.set_mode("drip", bytes=64, interval_ms=50)
    payload = bytes(range(256)) * 3                 # 768 bytes = 12 pieces of 64
    with connect(proxy.port) as s:
        start = time.monotonic()
        s.sendall(payload)
        s.settimeout(5.0)
        first = s.recv(4096)
        assert 0 < len(first) <= 64 * 2             # the start trickles in, not the whole
        rest = recv_exactly(s, len(payload) - len(first), timeout=10.0)
        elapsed = time.monotonic() - start
    assert first + rest == payload
    assert 0.5 <= elapsed < 10.0, elapsed           # at least 11 intervals of 50 ms went by


def test_modes_switch_back_to_pass(echo, proxy):
    for mode, opts in [("refuse", {}), ("reset", {}), ("blackhole", {}), ("delay", {"ms": 10}),
                       ("drip", {"bytes": 1, "interval_ms": 1})]:
        proxy.set_mode(mode, **opts)
        assert proxy.mode == (mode, opts)
        proxy.set_mode("pass")
        with connect(proxy.port) as s:
            assert roundtrip(s) == b"ping", mode


def test_bad_modes_and_options_are_refused_clearly(proxy):
    with pytest.raises(FaultProxyError, match="unknown mode 'drop'"):
        proxy.set_mode("drop")
    with pytest.raises(FaultProxyError, match="needs ms=N"):
        proxy.set_mode("delay")
    with pytest.raises(FaultProxyError, match="takes no option ms"):
        proxy.set_mode("blackhole", ms=3)
    with pytest.raises(FaultProxyError, match="not an integer"):
        proxy.set_mode("drip", bytes="many", interval_ms=1)
    with pytest.raises(FaultProxyError, match="out of range"):
        proxy.set_mode("drip", bytes=0, interval_ms=1)
    assert proxy.mode == ("pass", {})


def test_only_loopback(echo):
    with pytest.raises(FaultProxyError, match="not a loopback address"):
        FaultProxy("192.0.2.1", 443)
    with pytest.raises(FaultProxyError, match="not a loopback address"):
        FaultProxy("127.0.0.1", echo.port, listen_host="0.0.0.0")


def test_upstream_down_resets_the_client(echo):
    echo.close()
    with FaultProxy("127.0.0.1", echo.port) as p, connect(p.port) as s:
        assert_reset(s)


def test_close_frees_the_port_and_resets_connections(echo):
    p = FaultProxy("127.0.0.1", echo.port)
    s = connect(p.port)
    assert roundtrip(s) == b"ping"
    p.close()
    p.close()                                       # idempotent
    assert_reset(s)
    s.close()
    with pytest.raises(ConnectionRefusedError):
        connect(p.port)
    with pytest.raises(FaultProxyError, match="closed"):
        p.set_mode("pass")


def test_group_switches_one_host_or_all(echo):
    with ProxyGroup({"api": ("127.0.0.1", echo.port), "notify": ("127.0.0.1", echo.port)}) as g:
        g.set_mode("notify", "refuse")
        with connect(g.ports()["api"]) as s:
            assert roundtrip(s) == b"ping"
        with pytest.raises(ConnectionRefusedError):
            connect(g.ports()["notify"])
        g.set_mode("all", "refuse")
        for port in g.ports().values():
            with pytest.raises(OSError) as e:
                connect(port)
            assert e.value.errno == errno.ECONNREFUSED
        with pytest.raises(FaultProxyError, match="no proxy named 'content'"):
            g.set_mode("content", "pass")
        assert {n: s["mode"] for n, s in g.state().items()} == {"api": "refuse", "notify": "refuse"}
