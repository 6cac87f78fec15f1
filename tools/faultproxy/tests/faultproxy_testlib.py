"""Helpers for the fault proxy's own tests: a tiny echo upstream on 127.0.0.1 that records what it
got, and bounded waits (no bare sleeps). A module of its own name, not conftest, so that the
test files can import it beside other folders' conftest modules in one pytest run."""

import socket
import threading
import time

import pytest

class EchoServer:
    """Echoes every byte back; counts the connections it accepted and keeps the bytes it received.
    Its own thread per connection; `lock` guards `accepted` and `received`."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Lock()
        self.accepted = 0
        self.received = bytearray()
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
                self.conns.append(c)
            threading.Thread(target=self._echo, args=(c,), daemon=True).start()

    def _echo(self, c):
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    break
                with self.lock:
                    self.received += data
                c.sendall(data)
        except OSError:
            pass
        finally:
            c.close()

    def snapshot(self):
        with self.lock:
            return self.accepted, bytes(self.received)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)     # wakes the accept; close alone leaves it listening
        except OSError:
            pass
        self.sock.close()
        with self.lock:
            for c in self.conns:
                try:
                    c.close()
                except OSError:
                    pass


def wait_until(cond, timeout=5.0, what="condition"):
    """Polls cond() until true; fails the test after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(0.01)


def recv_exactly(sock, n, timeout=5.0):
    sock.settimeout(timeout)
    out = bytearray()
    while len(out) < n:
        data = sock.recv(n - len(out))
        if not data:
            raise EOFError("closed after %d of %d bytes" % (len(out), n))
        out += data
    return bytes(out)


