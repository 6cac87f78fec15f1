"""Fixtures for mount tests: a fake Dropbox server and a real FUSE mount of the built binary.

Every test gets its own temporary mount point; the mount is always unmounted at teardown, even when
the test fails, and the daemon's log is scanned: an unexpected `[error]` line fails the test.
Where FUSE cannot be used (no /dev/fuse, no fusermount3, not root) the tests FAIL with a clear
message; set DROPBOXFS_ALLOW_NO_FUSE=1 to turn that into loud skips on a machine known to lack FUSE.
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "fakedropbox"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fakedropbox.client import FakeDropbox  # noqa: E402
from helpers import TOKEN, env_for, is_mounted, pids_of_daemon, process_gone, unmount, wait_until  # noqa: E402

BINARY = Path(os.environ.get("DROPBOXFS_BIN", ROOT / ".build" / "debug" / "dropboxfs"))


def fuse_problem():
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse does not exist"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is not readable and writable by this user"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (apt-get install fuse3)"
    return None


@pytest.fixture(scope="session", autouse=True)
def require_fuse():
    problem = fuse_problem()
    if problem is None:
        return
    message = f"FUSE IS NOT AVAILABLE, MOUNT TESTS CANNOT RUN: {problem}"
    if os.environ.get("DROPBOXFS_ALLOW_NO_FUSE") == "1":
        print("\n" + "!" * 80 + "\n" + message + "\n" + "!" * 80, file=sys.stderr)
        pytest.skip(message)
    pytest.fail(message)


@pytest.fixture(scope="session")
def binary():
    if not BINARY.exists():
        pytest.fail(f"dropboxfs binary not found at {BINARY}: run swift build first")
    return str(BINARY)


class Mount:
    """A running `dropboxfs mount --foreground` process and its mount point."""

    def __init__(self, binary, fake, mountpoint, args=(), env_extra=None, log_path=None, token=TOKEN):
        self.fake = fake
        self.path = str(mountpoint)
        self.log_path = log_path
        self.log = open(log_path, "wb")
        self.process = subprocess.Popen(
            [binary, "mount", self.path, "--foreground", *args],
            env=env_for(fake, token=token, extra=env_extra),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.time() + 20
        while not is_mounted(self.path):
            if self.process.poll() is not None:
                raise AssertionError(f"dropboxfs exited with {self.process.returncode}:\n{self.log_text()}")
            if time.time() > deadline:
                self.process.kill()
                raise AssertionError(f"mount did not appear within 20 s:\n{self.log_text()}")
            time.sleep(0.05)

    def log_text(self):
        if not self.log.closed:
            self.log.flush()
        return Path(self.log_path).read_text(errors="replace")

    def unmount(self, timeout=15):
        if is_mounted(self.path):
            unmount(self.path, timeout=timeout)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            subprocess.run(["fusermount3", "-uz", self.path], check=False, capture_output=True, timeout=timeout)
            raise AssertionError(f"dropboxfs did not exit within {timeout} s after unmount")
        finally:
            self.log.close()

    def run(self, *cmd, check=True, **kw):
        return subprocess.run(cmd, check=check, capture_output=True, timeout=kw.pop("timeout", 120), **kw)


@pytest.fixture
def fake_factory():
    fakes = []

    def start(*args):
        fake = FakeDropbox.start("--quiet", *args)
        fakes.append(fake)
        return fake

    yield start
    for fake in fakes:
        fake.stop()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the test item, so a fixture's teardown can tell that the test
    failed (mount_factory then shows the daemons' logs)."""
    report = yield
    setattr(item, "report_" + report.when, report)
    return report


def show_daemon_logs(mounts, lines=80):
    """Prints the end of each daemon's log; pytest shows it with the failure ("Captured stdout
    teardown"), so a failure seen once in CI can be read without running it again."""
    for m in mounts:
        text = m.log_text().splitlines()
        print(f"---- {m.log_path} (last {min(lines, len(text))} of {len(text)} lines) ----")
        print("\n".join(text[-lines:]))


@pytest.fixture
def mount_factory(binary, tmp_path, request):
    mounts = []

    def start(fake, *args, env_extra=None, allowed_log=(), mountpoint=None):
        """Mounts `fake` on a fresh empty folder (or on `mountpoint`, which must exist)."""
        index = len(mounts)
        if mountpoint is None:
            mountpoint = tmp_path / f"mnt{index}"
            mountpoint.mkdir()
        # The disk content cache of a test's mounts is its own (shared by its remounts), never ~/.cache.
        env_extra = {"XDG_CACHE_HOME": str(tmp_path / "xdg-cache"), **(env_extra or {})}
        m = Mount(binary, fake, mountpoint, args, env_extra, tmp_path / f"daemon{index}.log")
        m.allowed_log = allowed_log
        mounts.append(m)
        return m

    yield start
    call = getattr(request.node, "report_call", None)
    if call is not None and call.failed:
        show_daemon_logs(mounts)
    unmount_all(mounts)


@pytest.fixture
def background_mounts():
    """Mount points used by background (daemonised) mounts: at teardown each is unmounted (a test
    that failed half-way may leave one mounted), and a daemon that does not exit after the unmount
    is killed (by its pid) and reported."""
    paths = []
    yield paths
    problems = []
    for path in paths:
        if is_mounted(path):
            unmount(str(path))
        for pid in pids_of_daemon(path):
            try:
                wait_until(lambda: process_gone(pid), timeout=10, message=f"daemon {pid} to exit")
            except AssertionError:
                os.kill(pid, 9)
                problems.append(f"daemon {pid} for {path} did not exit after unmount")
        if is_mounted(path):
            subprocess.run(["fusermount3", "-uz", str(path)], check=False, capture_output=True, timeout=15)
    if problems:
        pytest.fail("\n".join(problems))


def unmount_all(mounts):
    """Teardown of mount fixtures: unmount every mount even after failures, then fail the test if a
    daemon did not exit, a mount stayed, or a daemon logged an unexpected `[error]` line."""
    problems = []
    for m in mounts:
        try:
            m.unmount()
        except AssertionError as e:
            problems.append(str(e))
        if is_mounted(m.path):
            subprocess.run(["fusermount3", "-uz", m.path], check=False, capture_output=True, timeout=15)
            problems.append(f"{m.path} was still mounted after the daemon exited")
        for line in m.log_text().splitlines():
            if "[error]" in line and not any(a in line for a in m.allowed_log):
                problems.append(f"unexpected error in daemon log: {line}")
    if problems:
        pytest.fail("\n".join(problems))
