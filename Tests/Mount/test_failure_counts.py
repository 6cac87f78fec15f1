"""Failed requests are counted per FUSE operation: the root's status attribute carries the counts
(`failed=N failed_<op>=N`), `dropboxfs status` prints them (plain and --json), and an expected
failure is logged at debug only (docs/SEMANTICS.md, "Errors (errno)")."""

import errno
import json
import os
import re
import subprocess

import pytest

from helpers import env_for, sync_status, wait_until


def test_failed_requests_are_counted_per_operation(fake_factory, mount_factory, binary):
    fake = fake_factory()
    fake.add_file("/docs/report.txt", b"hello world\n")
    m = mount_factory(fake)
    path = f"{m.path}/docs/report.txt"
    before = sync_status(m.path)
    for _ in range(2):
        with pytest.raises(OSError) as failure:
            os.getxattr(path, "user.no.such.attribute")
        assert failure.value.errno == errno.ENODATA
    # The kernel may ask for attributes of its own meanwhile (security.*, which fail too).
    after = sync_status(m.path)
    assert int(after["failed_getxattr"]) >= int(before.get("failed_getxattr", "0")) + 2, after
    assert int(after["failed"]) >= int(before["failed"]) + 2, after
    assert "getxattr of inode" not in m.log_text(), "an expected failure is logged at debug only"

    r = subprocess.run([binary, "status", m.path], capture_output=True, timeout=60, env=env_for(fake))
    assert r.returncode == 0, r
    lines = [line.strip() for line in r.stdout.decode().splitlines() if "failed requests:" in line]
    shown = re.search(r"\bgetxattr (\d+)", lines[0] if lines else "")
    assert shown and int(shown.group(1)) >= int(after["failed_getxattr"]), r.stdout.decode()
    r = subprocess.run([binary, "status", "--json", m.path], capture_output=True, timeout=60, env=env_for(fake))
    assert r.returncode == 0, r
    mount = json.loads(r.stdout)["mounts"][0]
    assert mount["failures"]["getxattr"] >= int(after["failed_getxattr"]), mount
    assert mount["status"]["failed_getxattr"] == mount["failures"]["getxattr"], mount


def test_requests_waiting_for_dropbox_are_counted(fake_factory, mount_factory, binary):
    """`waiting=N` in the status attribute counts the requests waiting for an answer from Dropbox;
    `dropboxfs status` says so, and the count goes back to 0 once they are answered."""
    fake = fake_factory()
    fake.add_file("/slow/a.txt", b"a\n")
    m = mount_factory(fake, "--no-prefetch")
    assert sync_status(m.path)["waiting"] == "0"
    fake.add_fault("files/list_folder", "stall", stall_seconds=30, count=1)
    ls = subprocess.Popen(["ls", f"{m.path}/slow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: sync_status(m.path)["waiting"] == "1", timeout=10, message="the ls to wait")
        r = subprocess.run([binary, "status", m.path], capture_output=True, timeout=60, env=env_for(fake))
        assert "1 request waiting for Dropbox" in r.stdout.decode(), r.stdout.decode()
    finally:
        ls.kill()
        ls.wait()
    wait_until(lambda: sync_status(m.path)["waiting"] == "0", timeout=10, message="the interrupted ls to be answered")
