"""The command line form: the ports line, the HTTP control port, clear refusals, SIGTERM."""

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from faultproxy_testlib import recv_exactly

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args):
    return subprocess.Popen([sys.executable, "-m", "faultproxy", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def control(port, method, path):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method,
                                 data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture
def cli(echo, tmp_path):
    port_file = tmp_path / "ports.json"
    proc = run("--proxy", "api=127.0.0.1:%d" % echo.port, "--proxy", "notify=127.0.0.1:%d" % echo.port,
               "--port-file", str(port_file))
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        info = json.loads(line)
        assert json.loads(port_file.read_text()) == info
        yield proc, info
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def test_cli_switches_by_http_and_stops_on_sigterm(cli):
    proc, info = cli
    api, notify, ctl = info["proxies"]["api"], info["proxies"]["notify"], info["control"]
    with socket.create_connection(("127.0.0.1", api), timeout=5) as s:
        s.sendall(b"hi")
        assert recv_exactly(s, 2) == b"hi"
    status, state = control(ctl, "POST", "/notify/delay?ms=20")
    assert status == 200 and state["notify"]["mode"] == "delay" and state["notify"]["options"] == {"ms": 20}
    status, state = control(ctl, "POST", "/all/refuse")
    assert status == 200 and {s["mode"] for s in state.values()} == {"refuse"}
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", notify), timeout=5)
    status, state = control(ctl, "GET", "/")
    assert status == 200 and state["api"]["port"] == api
    assert control(ctl, "POST", "/api/drop") == (400, {"error": "unknown mode 'drop' (one of pass, refuse, reset, blackhole, delay, drip)"})
    assert control(ctl, "POST", "/api/delay")[0] == 400
    assert control(ctl, "POST", "/content/pass")[0] == 404
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0


def test_cli_refuses_bad_arguments():
    for bad in (["--proxy", "api"], ["--proxy", "api=127.0.0.1:notaport"], ["--proxy", "all=127.0.0.1:1"],
                ["--proxy", "api=127.0.0.1:1", "--proxy", "api=127.0.0.1:2"]):
        proc = run(*bad)
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 2, bad
        assert "--proxy" in err or "NAME" in err, err
    proc = run("--proxy", "api=10.0.0.1:443")
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 2 and "not a loopback address" in err
