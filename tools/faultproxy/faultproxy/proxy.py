"""One switchable TCP proxy: a listening port on 127.0.0.1 that forwards to one upstream host.

Exists so a test can make one host of the fake Dropbox (api, content or notify) fail the way a
laptop's network fails -- refused, reset, silently dropped, slow, trickling -- and switch it back
while the client under test keeps its connections, without root, iptables or a network namespace.

Modes (set_mode):
  pass                       forward both ways.
  refuse                     the listener is closed, so a connect gets ECONNREFUSED. The port stays
                             reserved (a second socket bound to it with SO_REUSEPORT, never
                             listening), so switching back listens on the same port. Connections
                             already open are left alone.
  reset                      a new connection is accepted and reset at once (RST); every open
                             connection is reset at the switch.
  blackhole                  a new connection is accepted, its bytes read and dropped, and never
                             answered nor closed (until its client closes it). Open connections stop
                             forwarding in both directions at once: the bytes in flight are held,
                             nothing is closed. Leaving blackhole for pass, delay or drip lets them
                             flow again (a network that came back before the peers gave up).
  delay ms=N                 every chunk waits N ms before it is forwarded (both directions).
  drip bytes=N interval_ms=M each direction forwards at most N bytes, then waits M ms.
Every mode applies to new connections and, from their next chunk, to open ones.

Threads and state: each FaultProxy runs an asyncio event loop in a daemon thread of its own. The
mode, the listener and the set of open connections are read and written only on that loop's
thread, so no lock guards them; the public methods hand their work to the loop
(run_coroutine_threadsafe) and wait for it, bounded by CALL_TIMEOUT.
"""

import asyncio
import ipaddress
import socket
import struct
import threading

MODES = ("pass", "refuse", "reset", "blackhole", "delay", "drip")
# The options each mode takes, all required, all non-negative integers (drip's bytes at least 1).
MODE_OPTIONS = {"delay": ("ms",), "drip": ("bytes", "interval_ms")}
CHUNK = 64 * 1024
CALL_TIMEOUT = 10.0         # bound on any public call waiting for the loop thread
UPSTREAM_CONNECT_TIMEOUT = 5.0


class FaultProxyError(Exception):
    """A FaultProxy could not be set up or switched (bad mode, bad option, port lost)."""


def check_options(mode, opts):
    """Returns the options of `mode` as ints; raises FaultProxyError naming what is wrong."""
    if mode not in MODES:
        raise FaultProxyError("unknown mode %r (one of %s)" % (mode, ", ".join(MODES)))
    wanted = MODE_OPTIONS.get(mode, ())
    extra = sorted(set(opts) - set(wanted))
    if extra:
        raise FaultProxyError("mode %s takes no option %s" % (mode, ", ".join(extra)))
    out = {}
    for key in wanted:
        if key not in opts:
            raise FaultProxyError("mode %s needs %s=N" % (mode, key))
        try:
            value = int(opts[key])
        except (TypeError, ValueError):
            raise FaultProxyError("%s=%r is not an integer" % (key, opts[key])) from None
        if value < (1 if key == "bytes" else 0):
            raise FaultProxyError("%s=%d is out of range" % (key, value))
        out[key] = value
    return out


def _check_loopback(host, what):
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise FaultProxyError("%s %r is not a loopback address (only 127.0.0.1 is allowed)" % (what, host))


def _reset(writer):
    """Closes the connection with a TCP RST (SO_LINGER 0), not a FIN."""
    sock = writer.get_extra_info("socket")
    try:
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    writer.transport.abort()


class _Connection:
    """One client connection and, once made, its upstream connection."""

    def __init__(self, client_writer, task):
        self.client = client_writer
        self.upstream = None
        self.task = task
        self.closed = False

    def reset(self):
        if self.closed:
            return
        self.closed = True
        _reset(self.client)
        if self.upstream is not None:
            _reset(self.upstream)


class FaultProxy:
    """A proxy from 127.0.0.1:port to upstream_host:upstream_port; see the module comment."""

    def __init__(self, upstream_host, upstream_port, listen_host="127.0.0.1", listen_port=0, name=None):
        _check_loopback(listen_host, "listen host")
        _check_loopback(upstream_host, "upstream host")
        self.name = name or "proxy"
        self.upstream = (upstream_host, int(upstream_port))
        self.listen_host = listen_host
        self._mode, self._opts = "pass", {}
        self._server = None
        self._connections = set()
        self._flowing = None            # asyncio.Event, set unless in blackhole (made on the loop)
        # The reservation: bound, never listening, so the port stays ours while refusing.
        self._reservation = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._reservation.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            self._reservation.bind((listen_host, int(listen_port)))
        except OSError as e:
            self._reservation.close()
            raise FaultProxyError("cannot bind %s:%s: %s" % (listen_host, listen_port, e)) from None
        self.port = self._reservation.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="faultproxy-" + self.name,
                                        daemon=True)
        self._thread.start()
        self._closed = False
        try:
            self._call(self._start())
        except BaseException:
            self.close()
            raise

    # -- public, any thread --------------------------------------------------------------------

    def set_mode(self, mode, **opts):
        """Switches the mode (see the module comment); raises FaultProxyError on a bad mode or option."""
        opts = check_options(mode, opts)
        self._call(self._switch(mode, opts))

    @property
    def mode(self):
        """(mode, options) now in force."""
        return self._call(self._get_mode())

    def active_connections(self):
        """How many client connections are open through the proxy (blackholed ones included)."""
        return self._call(self._count())

    def close(self):
        """Resets every connection, stops listening and frees the port. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._thread.is_alive():
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(CALL_TIMEOUT)
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(CALL_TIMEOUT)
        if not self._thread.is_alive():
            self._loop.close()
        self._reservation.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<FaultProxy %s 127.0.0.1:%d -> %s:%d>" % (self.name, self.port, *self.upstream)

    def _call(self, coro):
        if self._closed:
            coro.close()
            raise FaultProxyError("proxy %s is closed" % self.name)
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(CALL_TIMEOUT)

    # -- loop thread only ----------------------------------------------------------------------

    async def _start(self):
        self._flowing = asyncio.Event()
        self._flowing.set()
        await self._listen()

    async def _listen(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            sock.bind((self.listen_host, self.port))
        except OSError as e:
            sock.close()
            raise FaultProxyError("cannot listen on %s:%d again: %s" % (self.listen_host, self.port, e)) from None
        sock.setblocking(False)
        self._server = await asyncio.start_server(self._handle, sock=sock, backlog=128)

    def _stop_listening(self):
        if self._server is not None:
            self._server.close()        # closes the listening socket; open connections stay
            self._server = None

    async def _switch(self, mode, opts):
        self._mode, self._opts = mode, opts
        if mode == "blackhole":
            self._flowing.clear()
        else:
            self._flowing.set()
        if mode == "refuse":
            self._stop_listening()
        elif self._server is None:
            await self._listen()
        if mode == "reset":
            for conn in list(self._connections):
                conn.reset()

    async def _get_mode(self):
        return self._mode, dict(self._opts)

    async def _count(self):
        return len(self._connections)

    async def _shutdown(self):
        self._stop_listening()
        tasks = [conn.task for conn in self._connections if conn.task is not None]
        for conn in list(self._connections):
            conn.reset()
        self._flowing.set()                 # wake pumps held by a blackhole: they see the reset
        if tasks:
            _, stragglers = await asyncio.wait(tasks, timeout=2.0)
            for task in stragglers:         # e.g. one still connecting upstream
                task.cancel()
            if stragglers:
                await asyncio.wait(stragglers, timeout=CALL_TIMEOUT)

    async def _handle(self, reader, writer):
        conn = _Connection(writer, asyncio.current_task())
        self._connections.add(conn)
        try:
            if self._mode == "reset":
                conn.reset()
                return
            if self._mode == "blackhole":
                while await reader.read(CHUNK):    # swallow until the client closes
                    pass
                return
            try:
                up_reader, conn.upstream = await asyncio.wait_for(
                    asyncio.open_connection(*self.upstream), UPSTREAM_CONNECT_TIMEOUT)
            except (OSError, asyncio.TimeoutError):
                conn.reset()                        # the host behind us is gone: so is the connection
                return
            await asyncio.gather(self._pump(conn, reader, conn.upstream),
                                 self._pump(conn, up_reader, conn.client))
        except (OSError, asyncio.IncompleteReadError):
            conn.reset()
        except asyncio.CancelledError:
            # Only close() cancels a handler. Ending normally keeps asyncio's stream callback,
            # which asks the finished task for its exception, from logging the cancellation.
            conn.reset()
        finally:
            self._connections.discard(conn)
            if not conn.closed:
                conn.closed = True
                for w in (conn.client, conn.upstream):
                    if w is not None:
                        w.close()

    async def _pump(self, conn, reader, writer):
        """Forwards reader to writer per the mode in force at each piece; half-closes on EOF."""
        try:
            while not conn.closed:
                data = await reader.read(CHUNK)
                if not data:
                    if not conn.closed and writer.can_write_eof():
                        writer.write_eof()
                    return
                while data:
                    while not self._flowing.is_set() and not conn.closed:
                        await self._flowing.wait()
                    if conn.closed:
                        return
                    mode, opts = self._mode, self._opts
                    if mode == "delay":
                        await asyncio.sleep(opts["ms"] / 1000)
                        if not self._flowing.is_set():
                            continue                 # went dark meanwhile: hold the chunk
                    if conn.closed:
                        return
                    if mode == "drip":
                        piece, data = data[:opts["bytes"]], data[opts["bytes"]:]
                    else:
                        piece, data = data, b""
                    writer.write(piece)
                    await writer.drain()
                    if mode == "drip":
                        await asyncio.sleep(opts["interval_ms"] / 1000)
        except (OSError, asyncio.IncompleteReadError):
            conn.reset()                             # one side reset: reset the other too


class ProxyGroup:
    """One FaultProxy per named upstream host (e.g. api, content, notify), switched by name or all."""

    def __init__(self, upstreams, listen_ports=None):
        """upstreams: {name: (host, port)}; listen_ports: {name: port} (default: free ports)."""
        self.proxies = {}
        try:
            for name, (host, port) in upstreams.items():
                self.proxies[name] = FaultProxy(host, port, listen_port=(listen_ports or {}).get(name, 0),
                                                name=name)
        except BaseException:
            self.close()
            raise

    def __getitem__(self, name):
        return self.proxies[name]

    def ports(self):
        return {name: p.port for name, p in self.proxies.items()}

    def set_mode(self, name, mode, **opts):
        """name is one proxy's name or "all"; raises FaultProxyError for an unknown name."""
        check_options(mode, opts)
        if name == "all":
            targets = list(self.proxies.values())
        elif name in self.proxies:
            targets = [self.proxies[name]]
        else:
            raise FaultProxyError("no proxy named %r (%s, or all)" % (name, ", ".join(self.proxies)))
        for p in targets:
            p.set_mode(mode, **opts)

    def state(self):
        out = {}
        for name, p in self.proxies.items():
            mode, opts = p.mode
            out[name] = {"port": p.port, "upstream": "%s:%d" % p.upstream, "mode": mode,
                         "options": opts, "connections": p.active_connections()}
        return out

    def close(self):
        for p in self.proxies.values():
            p.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
