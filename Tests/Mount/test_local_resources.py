"""Local resources never stop or break the mount: a disk cache entry that would make an open wait
(a FIFO put at its name) or a cache folder on a disk that stopped answering (a FUSE folder of the
test's own that never answers, as NFS does when its server is gone) holds up neither the requests of
other processes nor the daemon's stop; a cache folder on a full disk still serves the stored tree;
cache and store folders that are not the daemon's user's own are refused (docs/SEMANTICS.md,
"Running as root")."""

import errno
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import time

import pytest

from helpers import (
    SwitchableProxy, c_locale, compare_records, env_for, expected_entries, find_records, is_mounted, process_gone,
    run, sync_status, wait_for_fill, wait_until,
)
from stalled_folder import StalledFolder

MiB = 1 << 20
STOP_BOUND = 5  # docs/SEMANTICS.md, "Unmounting with requests in flight"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def account(fake):
    fake.add_file("/cached.bin", size=3 * MiB + 5, seed=31)
    for i in range(3):
        fake.add_file(f"/docs/other{i}.bin", size=200_000 + i, seed=40 + i)
    return {e["path_display"]: e["content_hash"] for e in fake.tree()}


def cache_the_file(fake, mount_factory, cache):
    """Mounts once, reads /cached.bin (its disk entry is written) and unmounts."""
    m = mount_factory(fake, "--cache-dir", str(cache))
    r = run("cat", f"{m.path}/cached.bin", timeout=120)
    assert r.returncode == 0, r.stderr
    m.unmount()


def timed(*cmd, bound):
    """Runs `cmd`, which must succeed within `bound` seconds; returns its output."""
    started = time.monotonic()
    r = run(*cmd, timeout=bound + 10, env=c_locale())
    elapsed = time.monotonic() - started
    assert r.returncode == 0, (cmd, r.stderr)
    assert elapsed < bound, f"{cmd} took {elapsed:.2f} s"
    return r.stdout


def others_answer_at_once(fake, m):
    """While the open of /cached.bin may be waiting for the disk: other processes' requests, a
    listing and reads of other files, are answered within 1 s each."""
    listing = timed("ls", "-l", m.path, f"{m.path}/docs", bound=1)
    assert b"cached.bin" in listing and b"other0.bin" in listing
    for i in range(3):
        assert timed("cat", f"{m.path}/docs/other{i}.bin", bound=1) == fake.content(f"/docs/other{i}.bin")


def stop_within_bound(m, then=None):
    """SIGTERM ends the daemon within the stop bound, with code 0. A thread of it still waiting in
    a FUSE folder of the test's own cannot be reaped until that folder answers (the kernel waits
    out a request its server has read), so the bound is on the process being gone or a zombie;
    `then` (making the folder answer) runs before the exit code is read."""
    started = time.monotonic()
    m.process.send_signal(signal.SIGTERM)
    wait_until(lambda: process_gone(m.process.pid), timeout=STOP_BOUND + 5, interval=0.05,
               message="SIGTERM to end the daemon")
    elapsed = time.monotonic() - started
    assert elapsed < STOP_BOUND, f"the daemon took {elapsed:.2f} s to stop"
    if then is not None:
        then()
    assert m.process.wait(timeout=10) == 0, m.log_text()


def test_a_fifo_at_a_cache_entry_holds_up_nothing(fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    hashes = account(fake)
    cache = tmp_path / "cache"
    cache_the_file(fake, mount_factory, cache)
    entry = cache / "content" / hashes["/cached.bin"]
    assert entry.is_file()

    m = mount_factory(fake, "--cache-dir", str(cache))
    entry.unlink()
    os.mkfifo(entry, 0o600)  # an open of it for reading waits for a writer, forever
    reader = subprocess.Popen(["cat", f"{m.path}/cached.bin"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        others_answer_at_once(fake, m)
        out, err = reader.communicate(timeout=30)
    finally:
        reader.kill()
    assert reader.returncode == 0, err
    assert sha256(out) == sha256(fake.content("/cached.bin")), "read from Dropbox in place of the FIFO"
    stop_within_bound(m)
    # The FIFO was a bad entry: dropped (the download may have written a real one since).
    assert not os.path.lexists(entry) or stat.S_ISREG(os.lstat(entry).st_mode), "the FIFO was kept"


@pytest.fixture
def stalled_content(tmp_path):
    """A StalledFolder factory; every folder it made is closed (its held requests failed) at the end."""
    made = []

    def make(path, files):
        folder = StalledFolder(path, files)
        made.append(folder)
        return folder

    yield make
    for folder in made:
        folder.close()


def test_a_cache_folder_that_stops_answering_holds_up_nothing(binary, fake_factory, mount_factory, stalled_content, tmp_path):
    fake = fake_factory()
    hashes = account(fake)
    cache = tmp_path / "cache"
    cache_the_file(fake, mount_factory, cache)
    content = cache / "content"
    entries = {name: (content / name).read_bytes() for name in os.listdir(content)}
    assert hashes["/cached.bin"] in entries
    shutil.rmtree(content)
    content.mkdir(mode=0o700)
    folder = stalled_content(content, entries)

    m = mount_factory(fake, "--cache-dir", str(cache))  # the daemon lists the folder: it still answers
    folder.stall()
    reader = subprocess.Popen(["cat", f"{m.path}/cached.bin"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        others_answer_at_once(fake, m)
        out, err = reader.communicate(timeout=30)
    finally:
        reader.kill()
    assert reader.returncode == 0, err
    assert sha256(out) == sha256(fake.content("/cached.bin")), "read from Dropbox, the disk not answering"
    # Counted, once per file: /cached.bin surely, the other files when the stall began before
    # their reads (they would have been written to the cache). The status command says so.
    bypassed = int(sync_status(m.path)["disk_bypassed"])
    assert 1 <= bypassed <= 4, bypassed
    shown = run(binary, "status", m.path, env=env_for(fake))
    assert shown.returncode == 0, shown.stderr
    files = "file" if bypassed == 1 else "files"
    assert f"{bypassed} {files} read from Dropbox because the cache disk did not answer" in shown.stdout.decode()
    stop_within_bound(m, then=folder.close)
    assert folder.asked > 0, "the daemon never asked the stalled folder: nothing was tested"


@pytest.fixture
def small_disk(tmp_path):
    """A small tmpfs of the test's own, for the cache folder (root only, as every mount test)."""
    path = tmp_path / "small"
    path.mkdir()
    r = run("mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", path)
    assert r.returncode == 0, r.stderr
    yield path
    run("umount", "-l", path)


def make_unwritable(disk, how):
    if how == "read-only":
        r = run("mount", "-o", "remount,ro", disk)
        assert r.returncode == 0, r.stderr
        return
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, bytes(1 << 16))
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)


@pytest.mark.parametrize("online", [False, True], ids=["offline", "online"])
@pytest.mark.parametrize("how", ["full", "read-only"])
def test_a_cache_disk_that_refuses_writes_still_serves_the_stored_tree(fake_factory, mount_factory, small_disk, how, online):
    fake = fake_factory()
    for i in range(40):
        fake.add_file(f"/{['Docs', 'Photos/2024', 'Mixed Case'][i % 3]}/File {i:03d}.txt", f"content {i}\n".encode())
    proxy = SwitchableProxy(fake.url)
    try:
        cache = small_disk / "cache"
        m = mount_factory(proxy.url, "--cache-dir", str(cache))
        wait_for_fill(m.path, fake)
        compare_records(find_records(m.path), expected_entries(fake.tree(hashes=False)))
        m.unmount()

        make_unwritable(small_disk, how)
        if not online:
            proxy.down()
        fake.reset_stats()
        m2 = mount_factory(proxy.url, "--cache-dir", str(cache), mountpoint=m.path)
        # At once, from the stored tree: not listed again from scratch.
        compare_records(find_records(m2.path), expected_entries(fake.tree(hashes=False)))
        routes = fake.stats()["routes"]
        assert routes.get("files/list_folder", 0) == 0, routes
        if online:
            assert routes.get("users/get_current_account", 0) >= 1, "the mount was not online"
            # A change is served (in memory) though it cannot be stored.
            fake.add_file("/Docs/new.txt", b"new\n")
            wait_until(lambda: os.path.exists(f"{m2.path}/Docs/new.txt"), timeout=30, interval=0.2,
                       message="the change to appear")
            # Files read from Dropbox, not cached: the disk cache says so once.
            for i in (0, 3, 6, 9):
                assert run("cat", f"{m2.path}/Docs/File {i:03d}.txt").stdout == f"content {i}\n".encode()
        m2.unmount()
        warnings = [line for line in m2.log_text().splitlines()
                    if "[warning]" in line and "stored tree" in line and "cannot reach Dropbox" not in line]
        # One warning at most: the store opened read-only, or (a full disk that still let SQLite
        # open the file) its first write failing.
        assert len(warnings) <= 1, warnings
        if how == "read-only":
            assert len(warnings) == 1 and "read-only" in warnings[0], m2.log_text()
        cache_warnings = [line for line in m2.log_text().splitlines() if "[warning]: disk cache" in line]
        assert len(cache_warnings) <= 1, cache_warnings
        if online:
            assert len(cache_warnings) == 1 and "no new contents are cached" in cache_warnings[0], m2.log_text()
    finally:
        proxy.down()


def refused_mount(binary, fake, tmp_path, cache, env_extra=None):
    """`mount` with `cache` as CACHE_DIR (None: the default, from XDG_CACHE_HOME): refused."""
    mountpoint = tmp_path / "mnt-refused"
    mountpoint.mkdir(exist_ok=True)
    args = [binary, "mount", str(mountpoint), "--foreground"] + ([] if cache is None else ["--cache-dir", str(cache)])
    r = subprocess.run(args, env=env_for(fake, extra=env_extra), capture_output=True, timeout=60)
    assert not is_mounted(str(mountpoint))
    return r


NOBODY = 65534


@pytest.mark.parametrize("case", ["owner", "mode", "trees-owner", "content-mode"])
def test_a_cache_folder_not_the_users_own_is_refused(binary, fake_factory, tmp_path, case):
    fake = fake_factory()
    fake.add_file("/a.txt", b"a\n")
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    target = {"owner": cache, "mode": cache, "trees-owner": cache / "trees", "content-mode": cache / "content"}[case]
    target.mkdir(mode=0o700, exist_ok=True)
    if case.endswith("owner"):
        os.chown(target, NOBODY, NOBODY)
    else:
        target.chmod(0o777)
    r = refused_mount(binary, fake, tmp_path, cache)
    assert r.returncode == 7, r
    message = r.stderr.decode()
    assert str(target) in message, message
    assert ("not to root" in message) if case.endswith("owner") else ("may be written by other users" in message)
    assert sorted(os.listdir(cache)) == sorted(p.name for p in [cache / "trees", cache / "content"] if p.exists())
    assert not any(cache.glob("trees/tree-*")), "a store was made"


def test_a_root_daemon_does_not_make_folders_in_another_users_home(binary, fake_factory, tmp_path):
    """`sudo -E`: root with a user's XDG_CACHE_HOME, the cache folder not made yet."""
    assert os.geteuid() == 0, "run as root (as CI does): this test is about a root daemon"
    fake = fake_factory()
    fake.add_file("/a.txt", b"a\n")
    home = tmp_path / "home-of-nobody"
    (home / ".cache").mkdir(parents=True)
    for folder in (home, home / ".cache"):
        os.chown(folder, NOBODY, NOBODY)
    r = refused_mount(binary, fake, tmp_path, None, env_extra={"XDG_CACHE_HOME": str(home / ".cache")})
    assert r.returncode == 7, r
    message = r.stderr.decode()
    assert f"would be made in {home / '.cache'}" in message and "setuid=" in message, message
    assert os.listdir(home / ".cache") == [], "root made a folder in the other user's home"
