"""Command line entry point: python3 -m faultproxy --proxy NAME=[LISTEN:]HOST:PORT ... (README.md).

Exists so a proxy can run beside a mount outside pytest (by hand, from a shell script) and be
switched with curl: it starts one FaultProxy per --proxy, serves the HTTP control port, prints one
JSON line with the ports on stdout (and writes it to --port-file atomically) once everything
listens, and runs until SIGTERM or SIGINT.

Control (HTTP on 127.0.0.1, the control thread of http.server; it only calls the proxies' public,
thread-safe methods):
  GET  /                   -> 200 {"api": {"port":..,"upstream":..,"mode":..,"options":{},"connections":..}, ...}
  POST /NAME/MODE?opt=N..  -> 200 and the new state; NAME is a --proxy name or "all";
                              400 (bad mode or option) or 404 (unknown name) with {"error": "..."}
"""

import argparse
import http.server
import json
import os
import signal
import sys
import tempfile
import threading
import urllib.parse

from .proxy import FaultProxyError, ProxyGroup


def parse_proxy(spec):
    """NAME=[LISTEN_PORT:]HOST:PORT -> (name, listen_port, host, port)."""
    name, sep, rest = spec.partition("=")
    parts = rest.split(":")
    if not sep or not name or name == "all" or len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError("expected NAME=[LISTEN_PORT:]HOST:PORT (NAME not 'all'), got %r" % spec)
    try:
        listen = int(parts[0]) if len(parts) == 3 else 0
        port = int(parts[-1])
    except ValueError:
        raise argparse.ArgumentTypeError("ports must be integers in %r" % spec) from None
    if not (0 <= listen <= 65535 and 0 < port <= 65535):
        raise argparse.ArgumentTypeError("port out of range in %r" % spec)
    return name, listen, parts[-2], port


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="faultproxy", description="Switchable TCP fault proxy (127.0.0.1 only)")
    p.add_argument("--proxy", type=parse_proxy, action="append", required=True,
                   metavar="NAME=[LISTEN_PORT:]HOST:PORT", help="one proxied host (repeatable)")
    p.add_argument("--control-port", type=int, default=0, help="HTTP control port (0 = pick a free one)")
    p.add_argument("--port-file", help="write the ports line here (atomically) once listening")
    args = p.parse_args(argv)
    names = [n for n, _, _, _ in args.proxy]
    if len(set(names)) != len(names):
        p.error("each --proxy NAME must be unique")
    return args


def make_handler(group):
    class Control(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, status, obj):
            body = (json.dumps(obj, sort_keys=True) + "\n").encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if urllib.parse.urlsplit(self.path).path != "/":
                return self.reply(404, {"error": "GET / only"})
            self.reply(200, group.state())

        def do_POST(self):
            url = urllib.parse.urlsplit(self.path)
            parts = [p for p in url.path.split("/") if p]
            if len(parts) != 2:
                return self.reply(404, {"error": "POST /NAME/MODE[?opt=N]"})
            name, mode = parts
            if name != "all" and name not in group.proxies:
                return self.reply(404, {"error": "no proxy named %r" % name})
            opts = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
            try:
                group.set_mode(name, mode, **opts)
            except FaultProxyError as e:
                return self.reply(400, {"error": str(e)})
            self.reply(200, group.state())

    return Control


def write_atomically(path, text):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".faultproxy-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv=None):
    args = parse_args(argv)
    try:
        group = ProxyGroup({n: (h, p) for n, _, h, p in args.proxy},
                           listen_ports={n: l for n, l, _, _ in args.proxy})
    except FaultProxyError as e:
        print("faultproxy: %s" % e, file=sys.stderr)
        return 2
    try:
        control = http.server.ThreadingHTTPServer(("127.0.0.1", args.control_port), make_handler(group))
    except OSError as e:
        group.close()
        print("faultproxy: cannot listen on control port %d: %s" % (args.control_port, e), file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server_thread = threading.Thread(target=control.serve_forever, name="faultproxy-control", daemon=True)
    server_thread.start()
    line = json.dumps({"control": control.server_address[1], "proxies": group.ports()}, sort_keys=True)
    if args.port_file:
        write_atomically(args.port_file, line + "\n")
    print(line, flush=True)
    stop.wait()
    control.shutdown()
    control.server_close()
    group.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
