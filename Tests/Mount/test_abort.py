"""The kernel connection aborted from outside: an
administrator, or a tool that frees a hung FUSE mount, writes to
/sys/fs/fuse/connections/N/abort. Every call waiting in the mount ends at once with an error, the
daemon notices, leaves no mount behind and exits 0 within 5 s, and the next mount on the same folder
serves exact bytes at once."""

import os
import signal
import subprocess
import time

import pytest

from helpers import faults_fired, is_mounted, run, start_blocked_reader, wait_until

MiB = 1 << 20
CONNECTIONS = "/sys/fs/fuse/connections"


@pytest.fixture
def fusectl():
    """The fusectl folder, mounted for the test when it is not (CI runs as root; desktops mount it
    at boot)."""
    mounted_here = False
    if not is_mounted(CONNECTIONS):
        r = run("mount", "-t", "fusectl", "fusectl", CONNECTIONS)
        assert r.returncode == 0, f"fusectl could not be mounted on {CONNECTIONS}: {r.stderr}"
        mounted_here = True
    yield CONNECTIONS
    if mounted_here:
        run("umount", CONNECTIONS)


def connection_of(path):
    """The fusectl connection number of the FUSE mount at `path` (its device's minor number)."""
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == path:
                return int(fields[2].split(":")[1])
    raise AssertionError(f"{path} is not mounted")


def test_an_aborted_connection_ends_the_daemon_cleanly(fusectl, fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    for i in range(4):
        fake.add_file(f"/abort/f{i}.bin", size=4 * MiB + i, seed=70 + i)
    fake.add_file("/abort/check.bin", size=MiB + 3, seed=3)
    check = fake.content("/abort/check.bin")
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    m = mount_factory(fake, mountpoint=mountpoint)
    fake.add_fault("files/download", "stall", stall_seconds=60, count=0)
    readers = [start_blocked_reader(f"{m.path}/abort/f{i}.bin") for i in range(4)]
    wait_until(lambda: faults_fired(fake, "files/download") >= 4, timeout=15, message="the readers' downloads")

    connection = connection_of(m.path)
    started = time.monotonic()
    with open(f"{fusectl}/{connection}/abort", "w") as f:
        f.write("1")
    for r in readers:
        out, err = r.communicate(timeout=5)
        assert r.returncode == 4 and out.startswith(b"error "), (out, err)  # ENOTCONN
    try:
        code = m.process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        m.process.send_signal(signal.SIGKILL)
        raise AssertionError(f"the daemon was still running 5 s after the abort:\n{m.log_text()[-3000:]}")
    assert code == 0, (code, m.log_text()[-3000:])
    assert time.monotonic() - started < 5
    assert not is_mounted(m.path), "the aborted mount was left behind:\n" + m.log_text()[-3000:]
    assert "was aborted (/sys/fs/fuse/connections)" in m.log_text(), m.log_text()[-2000:]

    fake.clear_faults()
    again = mount_factory(fake, mountpoint=mountpoint)
    with open(f"{again.path}/abort/check.bin", "rb") as f:
        assert f.read() == check
