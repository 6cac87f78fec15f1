"""The server exits with the process that started it (--exit-with-parent, which FakeDropbox.start
always passes): a test run killed by its timeout (SIGKILL, no cleanup) leaves no server behind."""

import os
import shutil
import signal
import subprocess
import sys
import time

PKG_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A stand-in for a test run: starts a server through the client, prints its pid, then sleeps.
RUNNER = """
import sys, time
sys.path.insert(0, %r)
from fakedropbox.client import FakeDropbox
f = FakeDropbox.start("--quiet")
print(f.proc.pid, f.workdir, flush=True)
time.sleep(600)
""" % PKG_PARENT


def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0): read its state.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_the_server_exits_when_its_starter_is_killed():
    runner = subprocess.Popen([sys.executable, "-c", RUNNER], stdout=subprocess.PIPE, text=True)
    try:
        line = runner.stdout.readline()
        assert line, "the starter printed nothing (it failed to start a server)"
        pid, workdir = line.split(maxsplit=1)
        server = int(pid)
        assert not gone(server), "the server runs while its starter does"
        time.sleep(1.2)
        assert not gone(server), "the server keeps running while its starter lives"
        runner.send_signal(signal.SIGKILL)
        runner.wait(10)
        deadline = time.monotonic() + 10
        while not gone(server) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert gone(server), "the server outlived the process that started it"
    finally:
        runner.kill()
        runner.wait()
        if "server" in locals():
            if not gone(server):  # only a server this test failed to see exit
                os.kill(server, signal.SIGKILL)
            shutil.rmtree(workdir.strip(), ignore_errors=True)
