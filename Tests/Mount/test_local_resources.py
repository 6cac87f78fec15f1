"""Local resources never stop or break the mount: a disk cache entry that would make an open wait
(a FIFO put at its name) or a cache folder on a disk that stopped answering (a FUSE folder of the
test's own that never answers, as NFS does when its server is gone) holds up neither the requests of
other processes nor the daemon's stop."""

import hashlib
import os
import shutil
import signal
import stat
import subprocess
import time

import pytest

from helpers import c_locale, process_gone, run, wait_until
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


def test_a_cache_folder_that_stops_answering_holds_up_nothing(fake_factory, mount_factory, stalled_content, tmp_path):
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
    stop_within_bound(m, then=folder.close)
    assert folder.asked > 0, "the daemon never asked the stalled folder: nothing was tested"
