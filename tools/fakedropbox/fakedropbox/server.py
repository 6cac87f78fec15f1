"""HTTP(S) server: request parsing, auth, argument decoding, faults, replies.

Exists to put the routes behind a faithful HTTP front: HTTP/1.1 keep-alive,
TCP_NODELAY, each small reply sent in ONE write (docs/DROPBOX-API.md, "Clients
against a local server"),
Date and X-Dropbox-Request-Id on every reply, plain-text 400s, 401/422 JSON,
injected faults, latency and per-connection bandwidth limits.
"""

import email.utils
import http.server
import json
import math
import re
import secrets
import socket
import socketserver
import ssl
import struct
import sys
import time
import urllib.parse

from . import control, links, revisions, routes_files, routes_users, sharedfolders, zips
from .httpio import (Reply, auth_error, bad_request, error_reply, json_reply,
                     rate_limited_json, rate_limited_text, text_reply)
from .routes_files import ArgError
from .team import HOME_PATH

ROUTES = dict(routes_files.ROUTES)
ROUTES.update(routes_users.ROUTES)
ROUTES.update(revisions.ROUTES)
ROUTES.update(links.ROUTES)
ROUTES.update(sharedfolders.ROUTES)
ROUTES.update(zips.ROUTES)
VOID_ROUTES = {"users/get_current_account", "users/get_space_usage", "auth/token/revoke"}
RPC_CTS = ("application/json", "application/json; charset=utf-8",
           "text/plain; charset=dropbox-cors-hack")
DOWNLOAD_CTS = ("", "application/octet-stream", "text/plain; charset=dropbox-cors-hack")
MAX_BODY = 64 * 1024 * 1024


def listing_arg(route, body):
    """For the request log: a list_folder request's path and recursive flag (None otherwise, or
    when the body is not the JSON object it should be)."""
    if route != "files/list_folder" or not body:
        return None
    try:
        arg = json.loads(body)
        return {"path": arg.get("path"), "recursive": arg.get("recursive") is True}
    except (ValueError, AttributeError):
        return None


class Req:
    __slots__ = ("route", "method", "headers", "query", "token", "has_auth", "view")


class Abort(Exception):
    """The connection was dropped on purpose (fault) or by the client."""


def _norm_ct(v):
    return ";".join(p.strip() for p in (v or "").lower().split(";")).replace(";", "; ")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakedropbox"
    sys_version = ""
    timeout = 600  # idle keep-alive connections are dropped after 10 min

    # ---- plumbing ----------------------------------------------------------
    def setup(self):
        try:
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        super().setup()

    def log_message(self, fmt, *args):
        if not self.server.state.quiet:
            sys.stderr.write("fakedropbox: %s\n" % (fmt % args))

    def log_request(self, code="-", size="-"):
        pass  # we log ourselves, once per request, in dispatch()

    def do_GET(self):
        self.dispatch()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts = []
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)
            return b"".join(parts)
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(n) if n > 0 else b""

    def _head(self, reply, length):
        st = reply.status
        phrase = self.responses.get(st, ("",))[0]
        lines = ["HTTP/1.1 %d %s" % (st, phrase)]
        for k, v in reply.headers:
            lines.append("%s: %s" % (k, v))
        lines.append("Date: " + email.utils.formatdate(usegmt=True))
        lines.append("X-Dropbox-Request-Id: " + secrets.token_hex(16))
        if st != 304 and length is not None:
            lines.append("Content-Length: %d" % length)
        if self.close_connection:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _write(self, data):
        try:
            self.wfile.write(data)
        except (OSError, ValueError):
            self.close_connection = True
            raise Abort()

    def send_reply(self, reply, truncate_at=None, throttle_bw=0, account=None):
        """Send a Reply.  Returns body bytes sent. ``account(n)`` is called with each piece's size
        just before the piece is written, so that stats read by a client right after its reply
        arrived already count the reply's bytes."""
        account = account or (lambda n: None)
        length = reply.length
        head = self._head(reply, length)
        if self.command == "HEAD" or reply.status == 304:
            self._write(head)
            return 0
        if reply.stream is None and truncate_at is None:
            account(len(reply.body))
            self._write(head + reply.body)  # one write: no Nagle/delayed-ACK stall
            return len(reply.body)
        stream = [reply.body] if reply.stream is None else reply.stream
        sent = 0
        pending = head
        bw = throttle_bw if reply.throttle else 0
        piece = max(1024, min(65536, bw // 20)) if bw else 0
        t0 = time.monotonic()
        for chunk in stream:
            mv = memoryview(chunk)
            if truncate_at is not None and sent + len(mv) > truncate_at:
                mv = mv[:max(0, truncate_at - sent)]
            pieces = [mv] if not piece else [mv[i:i + piece] for i in range(0, len(mv), piece)]
            for p in pieces:
                account(len(p))
                if pending:
                    self._write(pending + bytes(p))
                    pending = b""
                elif len(p):
                    self._write(p)
                sent += len(p)
                if bw:
                    ahead = sent / bw - (time.monotonic() - t0)
                    if ahead > 0:
                        time.sleep(ahead)
            if truncate_at is not None and sent >= truncate_at:
                break
        if pending:
            self._write(pending)
        if truncate_at is not None:
            self.close_connection = True
            try:
                self.wfile.flush()
                self.request.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return sent

    def rst(self):
        """Close the TCP connection with a RST (SO_LINGER 0)."""
        self.close_connection = True
        try:
            self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        try:
            self.request.close()
        except OSError:
            pass

    # ---- dispatch ------------------------------------------------------------
    def dispatch(self):
        st = self.server.state
        st.use_account("a")     # a kept-alive connection's thread serves request after request
        t0 = time.monotonic()
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        try:
            body = self.read_body()
        except (ValueError, OSError):
            self.close_connection = True
            self.send_reply(text_reply(400, "Bad request body"))
            return
        try:
            if path.startswith("/2/"):
                status, n = self.api(st, path[3:], url, body)
            elif path.startswith("/_control/"):
                reply = control.handle(st, self.command, path, url.query, body)
                status, n = reply.status, self.send_reply(reply)
            elif path == "/oauth2/authorize" and self.command == "GET":
                reply = st.tokens.authorize(url.query)
                status, n = reply.status, self.send_reply(reply)
            elif path == "/oauth2/token" and self.command == "POST":
                # Faults apply here too (route "oauth2/token"), outside the /2/ stats and log.
                rule = st.faults.match("oauth2/token")
                reply, truncate_at = self.faulted(st, "oauth2/token", rule, body,
                                                  lambda: self.oauth_token(st, url, body), lambda: None)
                status, n = reply.status, self.send_reply(reply, truncate_at=truncate_at)
            else:
                reply = text_reply(404, "Not Found")
                status, n = 404, self.send_reply(reply)
        except Abort:
            status, n = "aborted", 0
        except Exception:  # a bug in the fake: answer 500 and log it
            import traceback
            traceback.print_exc()
            self.close_connection = True
            try:
                status, n = 500, self.send_reply(text_reply(500, "fakedropbox internal error"))
            except Abort:
                status, n = "aborted", 0
        if not st.quiet:
            sys.stderr.write("fakedropbox: %s %s -> %s %sB %.1fms\n" % (
                self.command, path, status, n, (time.monotonic() - t0) * 1000))

    def oauth_token(self, st, url, body):
        form = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
        ct = _norm_ct(self.headers.get("Content-Type"))
        if body:
            if not ct.startswith("application/x-www-form-urlencoded"):
                return text_reply(400, "Bad HTTP \"Content-Type\" header: expecting application/x-www-form-urlencoded")
            form.update({k: v[-1] for k, v in urllib.parse.parse_qs(body.decode("utf-8", "replace")).items()})
        basic = None
        auth = self.headers.get("Authorization") or ""
        if auth.startswith("Basic "):
            try:
                import base64
                basic = base64.b64decode(auth[6:]).decode().split(":", 1)[0]
            except Exception:
                basic = None
        return st.tokens.token(form, basic)

    # ---- API requests -----------------------------------------------------------
    def api(self, st, route, url, body):
        """Handle /2/<route>.  Returns (status, body bytes sent)."""
        st.count(route)
        req = Req()
        req.route, req.method, req.headers = route, self.command, self.headers
        req.query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
        req.has_auth = "Authorization" in self.headers or "authorization" in req.query
        req.token = None
        req.view = st.home_view
        rng = self.headers.get("Range")
        rule = st.faults.match(route)
        kind = rule.kind if rule else None

        def produce():
            return self.api_reply(st, req, route, url, body)

        def on_abort():
            st.record(route, self.command, None, rng, req.has_auth, kind, listing_arg(route, body))

        reply, truncate_at = self.faulted(st, route, rule, body, produce, on_abort)
        # Recorded before the reply goes out: a client that reads the log or the stats right
        # after its reply arrived must find its request there.
        st.record(route, self.command, reply.status, rng, req.has_auth, kind, listing_arg(route, body))
        n = self.send_reply(reply, truncate_at=truncate_at, throttle_bw=st.bandwidth, account=st.add_bytes)
        return reply.status, n

    def faulted(self, st, route, rule, body, produce, on_abort):
        """The reply to send under fault ``rule`` (None: no fault), from ``produce()`` when the
        fault needs the real reply; returns (reply, truncate_at). Raises Abort for faults that
        end the connection (after calling ``on_abort``)."""
        kind = rule.kind if rule else None
        truncate_at = None
        if kind == "reset":
            on_abort()
            self.rst()
            raise Abort()
        if kind == "hold":
            rule.released.wait(float(rule.params.get("hold_seconds", 60)))
        if kind == "stall":
            time.sleep(float(rule.params.get("stall_seconds", 5)))
            if rule.params.get("close"):
                on_abort()
                self.close_connection = True
                try:
                    self.request.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                raise Abort()
        if st.latency_ms and route != "oauth2/token":
            time.sleep(st.latency_ms / 1000.0)
        retry_after = rule.params.get("retry_after", 1) if rule else 1
        retry = int(math.ceil(retry_after)) if retry_after < 1e15 else retry_after
        if kind == "429json":
            reply = rate_limited_json(retry)
        elif kind == "429text":
            reply = rate_limited_text(retry)
        elif kind == "500":
            reply = text_reply(500, "Internal Server Error")
        elif kind == "503":
            reply = text_reply(503, "Service Unavailable",
                               [("Retry-After", str(retry))] if "retry_after" in rule.params else [])
        elif kind == "expired_token":
            reply = auth_error("expired_access_token")
        elif kind == "409json":
            reply = error_reply(409, {".tag": "other"}, summary=rule.params.get("error_summary", "other/.."))
        elif kind in ("502html", "504html"):
            status = 502 if kind == "502html" else 504
            reply = Reply(status, [("Content-Type", "text/html; charset=utf-8")],
                          b"<html><body><h1>%d Bad Gateway</h1></body></html>" % status)
        else:
            if kind == "whole_200" and "Range" in self.headers:
                del self.headers["Range"]  # answer a ranged request with the whole file
            reply = produce()
            if kind == "malformed_json":
                reply = _break_json(reply)
            elif kind == "truncate":
                truncate_at = int(rule.params.get("truncate_at", reply.length // 2 if reply.length else 0))
            elif kind == "flip":
                reply = _flip_byte(reply, rule.params.get("flip_at"))
            elif kind == "huge_size":
                reply = _huge_size(reply)
            elif kind == "stuck_cursor" and route == "files/list_folder/continue":
                cursor = json.loads(body or b"{}").get("cursor", "")
                reply = json_reply({"entries": [], "cursor": cursor, "has_more": True})
            elif kind in ("stall_body", "drip"):
                reply = _slow_body(reply, kind, rule.params)
        return reply, truncate_at

    def api_reply(self, st, req, route, url, body):
        spec = ROUTES.get(route)
        if spec is None:
            return text_reply(404, 'Unknown API function: "%s"' % route)
        style, scope, handler = spec
        # This thread may have served another request on the same connection: nothing of its
        # account or namespace carries over (a longpoll has no token to name one).
        st.use_account(None)
        if self.command != "POST" and not (style == "download" and self.command == "GET"):
            return Reply(405, [("Content-Type", "text/plain; charset=utf-8"), ("Allow", "POST")],
                         ('Error in call to API function "%s": Expected POST' % route).encode())
        # -- authentication
        auth = self.headers.get("Authorization")
        if auth is None and "authorization" in req.query:
            auth = req.query["authorization"]
        if scope is None:
            if auth is not None:
                return bad_request(route, "Your request includes an Authorization header, "
                                          "but this function does not use it.")
        else:
            if auth is None:
                return bad_request(route, 'Must provide HTTP header "Authorization" or URL '
                                          'parameter "authorization".')
            m = re.fullmatch(r"Bearer ([^\s]+)", auth.strip())
            if not m:
                return bad_request(route, 'Invalid authorization value in HTTP header "Authorization": '
                                          '"%s...".  Expecting "Bearer <oauth2-access-token>".'
                                   % auth[:6])
            req.token = m.group(1)
            bad = st.tokens.check(req.token, scope)
            if bad is not None:
                return auth_error(bad[0], **bad[1])
            st.use_account(st.tokens.account_of(req.token))
            req.view = st.home_view
        # -- path root: which namespace view the request's paths are in
        pr = self.headers.get("Dropbox-API-Path-Root")
        if pr is not None:
            r = _path_root_view(st, route, pr)
            if isinstance(r, Reply):
                return r
            if isinstance(r, sharedfolders.Namespace):
                st.use_namespace(r)      # a shared folder's own tree (sharedfolders.py)
                r = r.root_view
            req.view = r
        # -- argument
        if style == "rpc":
            ct = _norm_ct(self.headers.get("Content-Type"))
            if route in VOID_ROUTES and not ct and not body:
                arg = None
            else:
                if ct not in RPC_CTS:
                    return bad_request(route, 'Bad HTTP "Content-Type" header: "%s".  Expecting one of '
                                              '"application/json", "application/json; charset=utf-8", '
                                              '"text/plain; charset=dropbox-cors-hack".'
                                       % (self.headers.get("Content-Type") or ""))
                try:
                    arg = json.loads(body.decode("utf-8"))
                except (ValueError, UnicodeDecodeError):
                    return bad_request(route, "request body: could not decode input as JSON")
            where = "request body"
        else:
            ct = _norm_ct(self.headers.get("Content-Type"))
            if ct not in DOWNLOAD_CTS:
                return bad_request(route, 'Bad HTTP "Content-Type" header: "%s".  Expecting one of '
                                          '"application/octet-stream", "text/plain; charset=dropbox-cors-hack".'
                                   % self.headers.get("Content-Type"))
            raw = self.headers.get("Dropbox-API-Arg")
            where = 'HTTP header "Dropbox-API-Arg"'
            if raw is None and "arg" in req.query:
                raw, where = req.query["arg"], 'URL parameter "arg"'
            if raw is None:
                return bad_request(route, 'Must provide HTTP header "Dropbox-API-Arg" or URL parameter "arg".')
            if where.startswith("HTTP") and any(ord(c) >= 0x80 for c in raw):
                return bad_request(route, where + ": could not decode input as JSON")
            try:
                arg = json.loads(raw)
            except ValueError:
                return bad_request(route, where + ": could not decode input as JSON")
        if route in VOID_ROUTES:
            if arg is not None:
                return bad_request(route, "%s: expected null, got %s" % (where, type(arg).__name__))
        elif not isinstance(arg, dict):
            return bad_request(route, "%s: expected object, got %s" % (where, type(arg).__name__))
        try:
            return handler(st, req, arg)
        except ArgError as e:
            return bad_request(route, "%s: %s" % (where, e))


def _path_root_view(st, route, raw):
    """Dropbox-API-Path-Root -> the request's View, or an error Reply."""
    try:
        pr = json.loads(raw)
    except ValueError:
        return bad_request(route, 'HTTP header "Dropbox-API-Path-Root": could not decode input as JSON')
    tag = pr if isinstance(pr, str) else (pr.get(".tag") if isinstance(pr, dict) else None)
    if tag == "home":
        return st.home_view
    if tag == "root" and isinstance(pr, dict) and pr.get("root") == st.root_ns:
        return st.root_view
    if tag == "namespace_id" and isinstance(pr, dict):
        ns = pr.get("namespace_id")
        if ns == st.root_ns:
            return st.root_view
        if ns == st.home_ns:
            return st.home_view
        shared = sharedfolders.path_root_namespace(st, ns)
        if shared is not None and shared != "no_permission":
            return shared
    if tag not in ("root", "namespace_id"):
        return bad_request(route, 'HTTP header "Dropbox-API-Path-Root": unknown tag "%s"' % tag)
    if tag == "namespace_id":
        return error_reply(422, {".tag": "no_permission"})
    info = {".tag": "team" if st.team else "user", "root_namespace_id": st.root_ns,
            "home_namespace_id": st.home_ns}
    if st.team:
        info["home_path"] = HOME_PATH
    return error_reply(422, {".tag": "invalid_root", "invalid_root": info})


def _break_json(reply):
    """malformed_json fault: cut a JSON body (or Dropbox-API-Result) in half."""
    hdrs = dict((k.lower(), v) for k, v in reply.headers)
    if "dropbox-api-result" in hdrs:
        v = hdrs["dropbox-api-result"]
        reply.headers = [(k, (v[:len(v) // 2] if k.lower() == "dropbox-api-result" else x))
                         for k, x in reply.headers]
        return reply
    body = reply.body if reply.stream is None else b""
    broken = body[:max(1, len(body) // 2)] if len(body) > 1 else b"{"
    r = Reply(reply.status, reply.headers, broken)
    return r


def _body_bytes(reply):
    return reply.body if reply.stream is None else b"".join(bytes(c) for c in reply.stream)


def _flip_byte(reply, at):
    """flip fault: one byte of the body inverted, the length unchanged (bytes damaged on the way)."""
    body = bytearray(_body_bytes(reply))
    if body:
        i = int(at) if at is not None and 0 <= int(at) < len(body) else len(body) // 2
        body[i] ^= 0xFF
    return Reply(reply.status, reply.headers, bytes(body))


def _huge_size(reply):
    """huge_size fault: every file entry's "size" in a JSON reply becomes 2^64 - 1."""
    body = _body_bytes(reply)
    return Reply(reply.status, reply.headers,
                 re.sub(rb'"size": ?[0-9]+', b'"size": 18446744073709551615', body))


def _slow_body(reply, kind, params):
    """stall_body: half the body (or truncate_at bytes), a pause of stall_seconds, the rest;
    drip: drip_bytes every drip_seconds (default 1 byte a second), below any sane speed."""
    body = _body_bytes(reply)

    def stream():
        if kind == "stall_body":
            cut = int(params.get("truncate_at", len(body) // 2))
            yield body[:cut]
            time.sleep(float(params.get("stall_seconds", 5)))
            yield body[cut:]
        else:
            step = max(1, int(params.get("drip_bytes", 1)))
            pause = float(params.get("drip_seconds", 1))
            for i in range(0, len(body), step):
                yield body[i:i + step]
                time.sleep(pause)

    r = Reply(reply.status, reply.headers, b"")
    r.stream = stream()
    r.length = len(body)
    return r


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 256
    ssl_context = None
    state = None

    def server_bind(self):
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = host, port  # no reverse DNS

    def finish_request(self, request, client_address):
        try:
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        if self.ssl_context is None:
            self.RequestHandlerClass(request, client_address, self)
            return
        try:
            request.settimeout(30)
            tls = self.ssl_context.wrap_socket(request, server_side=True)
            tls.settimeout(None)
        except (ssl.SSLError, OSError):
            return
        try:
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, ssl.SSLError, TimeoutError, Abort)):
            return
        super().handle_error(request, client_address)


def make_server(state, host, port, tls_cert=None, tls_key=None):
    srv = Server((host, port), Handler)
    srv.state = state
    if tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls_cert, tls_key)
        srv.ssl_context = ctx
    return srv


