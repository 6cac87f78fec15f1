"""Version and logs: `--version` with the commit baked in at build and the
libfuse and libcurl versions, also in `status` and the daemon's first log line; log lines that
start with an ISO-8601 time (none, but a syslog priority, when stderr is the journal); the default
log in $XDG_STATE_HOME, rotated at its size cap; -v / -q; durations such as 30s, 5m, 1h."""

import datetime
import os
import re
import subprocess
import time

import pytest

from helpers import ROOT, env_for, is_mounted, pids_of_daemon, process_gone, run, unmount, wait_until

TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d"
LOG_LINE = re.compile(rf"^({TIME}) dropboxfs\[(debug|info|warning|error)\]: ")
VERSION_LINE = re.compile(r"^dropboxfs (\d+\.\d+\.\d+) \(commit ([0-9a-f]{12}(-modified)?|unknown)\)$")


@pytest.fixture
def fake(fake_factory):
    fake = fake_factory()
    fake.add_file("/hello.txt", b"hello\n")
    return fake


def version_lines(binary):
    r = run(binary, "--version")
    assert r.returncode == 0 and r.stderr == b"", r
    return r.stdout.decode().splitlines()


def pkg_version(name):
    r = run("pkg-config", "--modversion", name)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode().strip()


def test_version_names_the_build_and_the_libraries(binary):
    first, second = version_lines(binary)
    m = VERSION_LINE.match(first)
    assert m, first
    head = run("git", "-C", ROOT, "rev-parse", "--short=12", "HEAD")
    if head.returncode == 0 and m.group(2) != "unknown":
        # Built from this checkout: its commit (the tests run on the build of the tree they are in).
        assert m.group(2).startswith(head.stdout.decode().strip()[:7]) or "-modified" in m.group(2), (first, head.stdout)
    assert second.startswith(f"libfuse {pkg_version('fuse3')}, libcurl {pkg_version('libcurl')}"), second


def test_status_and_the_first_log_line_carry_the_version(binary, fake, mount_factory):
    wanted = "; ".join(version_lines(binary))
    r = run(binary, "status", env=env_for(fake))
    assert r.returncode == 0, r
    assert f"version:     {wanted}" in r.stdout.decode().splitlines(), r.stdout
    m = mount_factory(fake)
    m.unmount()
    first = m.log_text().splitlines()[0]
    assert LOG_LINE.match(first) and first.split("]: ", 1)[1].startswith(wanted), first


def test_log_lines_start_with_an_iso_8601_time(fake, mount_factory):
    before = datetime.datetime.now(datetime.timezone.utc)
    m = mount_factory(fake, "--debug")
    assert os.listdir(m.path) == ["hello.txt"]
    m.unmount()
    after = datetime.datetime.now(datetime.timezone.utc)
    lines = m.log_text().splitlines()
    assert len(lines) > 3
    for line in lines:
        match = LOG_LINE.match(line)
        assert match, f"log line without its time: {line!r}"
        stamp = datetime.datetime.fromisoformat(match.group(1))
        assert before - datetime.timedelta(seconds=2) <= stamp <= after + datetime.timedelta(seconds=2), line


def test_journal_lines_carry_a_priority_instead_of_a_time(binary, fake, tmp_path):
    """JOURNAL_STREAM names the journal's stream as DEVICE:INODE; when it is stderr, lines start with
    "<N>" (the syslog priority journald reads) and no time. A stream it does not name (the variable
    inherited by a process whose stderr went elsewhere) keeps the times."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    log = tmp_path / "journal.log"
    with open(log, "wb") as stream:
        st = os.fstat(stream.fileno())
        env = env_for(fake, extra={"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}",
                                   "XDG_CACHE_HOME": str(tmp_path / "cache")})
        p = subprocess.Popen([binary, "mount", mnt, "--foreground", "-v"], env=env, stdout=stream, stderr=stream,
                             stdin=subprocess.DEVNULL)
        try:
            wait_until(lambda: is_mounted(mnt), timeout=20, message="the mount")
        finally:
            unmount(mnt)
            assert p.wait(timeout=15) == 0
    lines = log.read_text().splitlines()
    assert lines
    for line in lines:
        assert re.match(r"^<[3467]>dropboxfs\[(debug|info|warning|error)\]: ", line), line
    assert any(line.startswith("<6>dropboxfs[info]: mounted") for line in lines)
    assert any(line.startswith("<7>dropboxfs[debug]: ") for line in lines)
    # The variable alone (stderr elsewhere): times as usual.
    r = run(binary, "status", env=env_for(fake, extra={"JOURNAL_STREAM": "1:1"}))
    warnings = [line for line in r.stderr.decode().splitlines() if "dropboxfs[" in line]
    assert warnings and all(LOG_LINE.match(line) for line in warnings), r.stderr


@pytest.mark.parametrize("flag,present,absent", [
    ("-v", ["[debug]", "[info]"], []),
    ("--verbose", ["[debug]"], []),
    ("-q", [], ["[debug]", "[info]"]),
    ("--quiet", [], ["[debug]", "[info]"]),
])
def test_verbose_and_quiet(fake, mount_factory, flag, present, absent):
    m = mount_factory(fake, flag)
    assert os.listdir(m.path) == ["hello.txt"]
    m.unmount()
    text = m.log_text()
    for level in present:
        assert level in text, (flag, text)
    for level in absent:
        assert level not in text, (flag, text)


@pytest.mark.parametrize("args", [["-v", "-q"], ["-q", "--log-level", "debug"], ["--debug", "--quiet"]])
def test_conflicting_log_levels_are_usage_errors(binary, fake, tmp_path, args):
    r = run(binary, "mount", tmp_path, "--foreground", *args, env=env_for(fake))
    assert r.returncode == 2 and b"log levels" in r.stderr, r
    assert fake.stats()["total"] == 0


@pytest.mark.parametrize("args", [
    ["--attr-timeout", "5m"], ["--attr-timeout", "90s"], ["--attr-timeout", "1h"], ["--attr-timeout", "2.5"],
    ["--no-watch", "--dir-cache-time", "30s"], ["--timeouts", "rpc=2m,download=90s,stall=30s,low-speed=1024/30s"],
    ["--timeouts", "connect=500ms:max-pause=10m"],
])
def test_durations_with_units_are_accepted(fake, mount_factory, args):
    m = mount_factory(fake, *args)
    assert os.listdir(m.path) == ["hello.txt"]


@pytest.mark.parametrize("args", [
    ["--attr-timeout", "5x"], ["--attr-timeout", "m"], ["--attr-timeout", "-5s"], ["--attr-timeout", "1e3"],
    ["--dir-cache-time", "inf"], ["--timeouts", "rpc=5y"], ["--timeouts", "stall=ms"],
])
def test_bad_durations_are_usage_errors(binary, fake, tmp_path, args):
    r = run(binary, "mount", tmp_path, "--foreground", *args, env=env_for(fake))
    assert r.returncode == 2, r
    assert fake.stats()["total"] == 0


def test_the_background_log_is_rotated_at_its_cap(binary, fake_factory, background_mounts, tmp_path):
    """The background daemon's log (default $XDG_STATE_HOME/dropboxfs/dropboxfs.log) past 10 MiB
    becomes dropboxfs.log.1 and a new file takes its place, which the daemon (and libfuse, on the
    same descriptors) then writes to."""
    fake = fake_factory()
    fake.add_file("/hello.txt", b"hello\n")
    mnt = tmp_path / "bg"
    mnt.mkdir()
    background_mounts.append(mnt)
    state = tmp_path / "state"
    log = state / "dropboxfs" / "dropboxfs.log"
    log.parent.mkdir(parents=True, mode=0o700)
    old = b"an old line\n" * (11 * 1024 * 1024 // 12)
    log.write_bytes(old)
    os.chmod(log, 0o600)
    env = env_for(fake, extra={"XDG_STATE_HOME": str(state), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    r = run(binary, "mount", mnt, env=env, timeout=30)
    assert r.returncode == 0, r
    assert os.listdir(mnt) == ["hello.txt"]
    pids = pids_of_daemon(mnt)
    assert unmount(mnt).returncode == 0
    for pid in pids:
        wait_until(lambda: process_gone(pid), timeout=15, message="the daemon to exit")
    rotated = log.with_name("dropboxfs.log.1")
    assert rotated.exists() and rotated.read_bytes().startswith(old), "the old log was not kept as .1"
    new = log.read_text()
    assert len(new) < 1024 * 1024 and "unmounted" in new, new[-2000:]
    assert oct(os.stat(log).st_mode & 0o777) == "0o600"
