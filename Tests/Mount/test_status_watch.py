"""A watchable first listing: `dropboxfs status --watch` follows the mounts'
whole-account listing ("listing: 30,000 entries, 4,000/s", then "complete: ..."), redrawn in place
on a terminal and as plain timed lines otherwise, and ends when no mount is left; `status --json`
gives the same for scripts (with --watch: one object per line). Each test names its own mount
(`status MOUNTPOINT`): the machine may hold other dropboxfs mounts of the same user."""

import json
import os
import pty
import re
import select
import subprocess
import time

import pytest

from helpers import env_for, run, wait_until


@pytest.fixture
def slow_fake(fake_factory):
    # About 30,000 entries in pages of 2,000, each page 0.3 s late: a fill of several seconds.
    return fake_factory("--synthetic", "30000", "--latency-ms", "300")


def read_lines(p, until, timeout=60):
    """Lines of p.stdout until `until(line)` holds; all lines read so far."""
    lines = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([p.stdout], [], [], 0.5)
        if not ready:
            continue
        line = p.stdout.readline()
        if not line:
            break
        lines.append(line.decode().rstrip("\n"))
        if until(lines[-1]):
            return lines
    raise AssertionError(f"not seen within {timeout} s; lines: {lines}")


def test_watch_follows_the_first_listing_as_plain_lines(binary, slow_fake, mount_factory):
    m = mount_factory(slow_fake)
    p = subprocess.Popen([binary, "status", "--watch", m.path], env=env_for(slow_fake), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        lines = read_lines(p, lambda line: "complete:" in line)
        listing = [line for line in lines if re.search(r": listing: [\d,]+ entries, [\d,]+/s$", line)]
        assert listing, lines
        assert all(m.path in line for line in lines), lines
        # Plain lines carry their time, and a line is written only when something changed.
        assert all(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d ", line) for line in lines), lines
        bodies = [line.split(" ", 1)[1] for line in lines]
        assert all(a != b for a, b in zip(bodies, bodies[1:])), lines
        assert "\x1b" not in "".join(lines)
        counts = [int(re.search(r"listing: ([\d,]+) entries", line).group(1).replace(",", "")) for line in listing]
        assert counts == sorted(counts), counts
        m.unmount()
        out, err = p.communicate(timeout=15)
        assert p.returncode == 0, err
        # Its mount gone, the watch ends by itself.
        assert out.decode().strip().endswith("no dropboxfs mount"), out
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_watch_redraws_in_place_on_a_terminal(binary, slow_fake, mount_factory):
    m = mount_factory(slow_fake)
    primary, secondary = pty.openpty()
    p = subprocess.Popen([binary, "status", "--watch", m.path], env=env_for(slow_fake), stdout=secondary,
                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(secondary)
    screen = b""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and screen.count(b"\x1b[1F\x1b[J") < 2:
            ready, _, _ = select.select([primary], [], [], 0.5)
            if ready:
                try:
                    screen += os.read(primary, 65536)
                except OSError:
                    break
        # Each refresh goes back to the first line drawn and clears below: one mount, one line.
        assert screen.count(b"\x1b[1F\x1b[J") >= 2, screen
        assert m.path.encode() in screen and (b"listing:" in screen or b"complete:" in screen), screen
    finally:
        p.kill()
        p.wait()
        os.close(primary)


def test_json(binary, fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/a.txt", b"a\n")
    m = mount_factory(fake)
    wait_until(lambda: "phase=watching" in os.getxattr(m.path, "user.dropboxfs.status").decode(), timeout=30,
               message="the listing to complete")
    r = run(binary, "status", "--json", m.path, env=env_for(fake))
    assert r.returncode == 0, r
    report = json.loads(r.stdout)
    assert report["account"]["email"] == "franz@example.com"
    assert report["credentials"].endswith("DROPBOXFS_ACCESS_TOKEN")
    assert report["error"] is None and report["version"] and report["commit"] and report["libfuse"]
    assert isinstance(report["space"]["used"], int)
    mine = report["mounts"]
    assert len(mine) == 1 and mine[0]["path"] == m.path, report["mounts"]
    assert mine[0]["phase"] == "watching" and mine[0]["entries"] >= 1 and mine[0]["answering"] is True
    assert mine[0]["summary"].startswith("complete: ")
    assert mine[0]["status"]["phase"] == "watching"

    # Without credentials: the same object, with the error and exit code 4.
    r = run(binary, "status", "--json", m.path,
            env=env_for(fake, token=None, extra={"XDG_CONFIG_HOME": "/nonexistent"}))
    assert r.returncode == 4, r
    report = json.loads(r.stdout)
    assert report["error"]["code"] == 4 and report["account"] is None
    assert [mount["path"] for mount in report["mounts"]] == [m.path]
    # Without --json, the text form has the same summary line.
    r = run(binary, "status", m.path, env=env_for(fake))
    assert r.returncode == 0 and mine[0]["summary"] in r.stdout.decode(), r


def test_watch_json_gives_one_object_per_line(binary, fake_factory, mount_factory):
    fake = fake_factory()
    m = mount_factory(fake)
    p = subprocess.Popen([binary, "status", "--watch", "--json", m.path], env=env_for(fake), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        lines = read_lines(p, lambda line: len(line) > 0 and line.count("\n") == 0 and "watching" in line)
        for line in lines:
            obj = json.loads(line)
            assert "time" in obj and [mount["path"] for mount in obj["mounts"]] == [m.path], obj
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("args", [["--watch"], ["--json"], []])
def test_a_mountpoint_that_is_not_a_dropboxfs_mount(binary, fake_factory, tmp_path, args):
    fake = fake_factory()
    r = run(binary, "status", *args, tmp_path, env=env_for(fake), timeout=15)
    assert r.returncode == 3 and b"not a dropboxfs mount" in r.stderr, r
    assert fake.stats()["total"] == 0


def test_json_is_valid_and_safe_on_a_terminal(binary, fake_factory, mount_factory, tmp_path):
    """Text from elsewhere (here a mount point's name with a right-to-left override and a C1
    control) comes out of --json as \\u escapes: still the same JSON, nothing a terminal acts on."""
    fake = fake_factory()
    folder = tmp_path / "mnt\u202eevil\u009b"
    folder.mkdir()
    m = mount_factory(fake, mountpoint=folder)
    r = run(binary, "status", "--json", m.path, env=env_for(fake))
    assert r.returncode == 0, r
    text = r.stdout.decode()
    assert "\u202e" not in text and "\u009b" not in text and "\\u202e" in text, text
    assert [mount["path"] for mount in json.loads(text)["mounts"]] == [str(folder)]


def test_a_long_status_attribute_is_shown_whole(binary, fake_factory, mount_factory):
    """The status attribute has no fixed size: a server's long error message as `last_failure`
    (here over 6 KiB) is shown, not "(status unavailable)". `status` used to read the attribute
    into a 4 KiB buffer, and the daemon answered ERANGE."""
    fake = fake_factory()
    fake.add_file("/a.txt", b"a\n")
    summary = "other/" + "x" * 6000
    # The first request is the mount's own check (AccountCheck); the fill's ones fail.
    fake.add_fault("files/list_folder/get_latest_cursor", "409json", error_summary=summary, count=0, after=1)
    m = mount_factory(fake, allowed_log=("other/",))
    wait_until(lambda: "last_failure=" in os.getxattr(m.path, "user.dropboxfs.status").decode(), timeout=30,
               message="the fill to fail")
    r = run(binary, "status", m.path, env=env_for(fake))
    out = r.stdout.decode()
    assert r.returncode == 0 and "status unavailable" not in out and summary in out, r
    r = run(binary, "status", "--json", m.path, env=env_for(fake))
    mount = json.loads(r.stdout)["mounts"][0]
    assert mount["answering"] and mount["status"]["last_failure"].endswith(summary), mount


def test_status_of_a_mount_compares_paths_as_bytes(binary, fake_factory, mount_factory, tmp_path):
    """Linux paths are bytes: with mounts on ".../caf\u00e9" (composed) and ".../cafe\u0301"
    (decomposed, another folder), `status` of one shows that one only. Swift's String == takes the
    two spellings as equal, so status used to show both."""
    fake = fake_factory()
    nfc, nfd = tmp_path / "caf\u00e9", tmp_path / "cafe\u0301"
    nfc.mkdir()
    nfd.mkdir()
    mounts = [mount_factory(fake, mountpoint=nfc), mount_factory(fake, mountpoint=nfd)]
    for m in mounts:
        r = run(binary, "status", "--json", m.path, env=env_for(fake))
        assert r.returncode == 0, r
        shown = [os.fsencode(mount["path"]) for mount in json.loads(r.stdout)["mounts"]]
        assert shown == [os.fsencode(m.path)], shown
