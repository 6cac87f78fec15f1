"""Interrupted requests and stops under load (docs/SEMANTICS.md
"Interrupted requests" and "Unmounting with requests in flight").

A request that waits on the network is answered EINTR when its caller is signalled: Ctrl-C of `ls`
on a listing the server stalls, and SIGINT to a program with its own SIGINT handler blocked in
read() on a stalled download, return within about a second, and the same operation afterwards
gives the exact answer. A listing or download another caller still waits for goes on for that
caller. At SIGTERM or a lazy unmount with readers stuck on stalled downloads, the daemon answers
them with an error and exits within 5 s; an invalidation blocked in the kernel behind a stuck read
does not hold that up.

The server stalls for much longer than any bound asserted here, so a pass cannot come from the
stall ending. Tests wait for explicit signals (the fake's fault counters, a reader's "open" line, a
daemon thread in uninterruptible sleep) rather than for fixed times.
"""

import errno
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import is_mounted, run, sync_status, wait_for_fill, wait_until

MiB = 1 << 20
STALL = 60  # seconds the fake holds a stalled request: far beyond every bound below

# A reader with a SIGINT handler of its own: it prints "open" once the file is open, then blocks
# in read(), at OFFSET, of one piece or ("whole") up to the end. The handler raises, so a read()
# that fails with EINTR ends with the exception after the handler ran (Python retries a read that
# failed with EINTR only when the handler returns).
READER = r"""
import os, signal, sys
class Interrupted(Exception):
    pass
def handler(signum, frame):
    raise Interrupted()
signal.signal(signal.SIGINT, handler)
path, offset, whole = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "whole"
fd = os.open(path, os.O_RDONLY)
print("open", flush=True)
try:
    data = b""
    while True:
        piece = os.pread(fd, 1 << 20, offset + len(data))
        data += piece
        if not piece or not whole:
            break
    print("read", len(data), flush=True)
    sys.exit(0)
except Interrupted:
    print("interrupted", flush=True)
    sys.exit(3)
except OSError as e:
    print("error", e.errno, flush=True)
    sys.exit(4)
"""


def fired(fake, route):
    return sum(r.get("fired", 0) for r in fake.faults() if r["route"] == route)


def stall(fake, route, count=0, seconds=STALL):
    """Stalls the next `count` requests of `route` (0: every later one)."""
    fake.add_fault(route, "stall", stall_seconds=seconds, count=count)


def start_reader(path, offset=0, whole=False):
    args = [sys.executable, "-c", READER, str(path), str(offset), "whole" if whole else "one"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stdout.readline()
    assert line == b"open\n", (line, p.stderr.read())
    return p


def wait_exit(p, timeout):
    """Waits for p to exit; returns (returncode, seconds waited), or fails after `timeout`."""
    start = time.monotonic()
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise AssertionError(f"{p.args[:3]} still running {timeout} s after the signal")
    return p.returncode, time.monotonic() - start


def output(p):
    return p.stdout.read().decode(errors="replace") + p.stderr.read().decode(errors="replace")


def listing_names(path):
    r = run("ls", "-f", path, timeout=30)
    assert r.returncode == 0, r.stderr
    return sorted(n for n in r.stdout.split(b"\n") if n and n not in (b".", b".."))


@pytest.fixture
def folders(fake_factory, mount_factory):
    """A mount that lists each folder when first needed (--no-prefetch), root already listed."""
    fake = fake_factory()
    for i in range(20):
        fake.add_file(f"/slow/file-{i:02}.txt", b"%d\n" % i)
    fake.add_file("/top.txt", b"top\n")
    m = mount_factory(fake, "--no-prefetch")
    assert sorted(os.listdir(m.path)) == ["slow", "top.txt"]
    return fake, m


def test_ctrl_c_of_ls_on_a_stalled_listing_returns_at_once(folders):
    fake, m = folders
    stall(fake, "files/list_folder", count=1)
    ls = subprocess.Popen(["ls", f"{m.path}/slow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: fired(fake, "files/list_folder") >= 1, timeout=10, message="the listing to reach the server")
    ls.send_signal(signal.SIGINT)
    code, seconds = wait_exit(ls, timeout=10)
    assert code == -signal.SIGINT, output(ls)
    assert seconds < 1.5, f"ls took {seconds:.2f} s to end after Ctrl-C"
    # The listing nobody waits for any more was dropped: the next ls asks again and gets it all.
    start = time.monotonic()
    assert listing_names(f"{m.path}/slow") == [b"file-%02d.txt" % i for i in range(20)]
    assert time.monotonic() - start < 5
    assert fake.stats()["routes"]["files/list_folder"] >= 3  # root, the stalled one, the retry


def test_ctrl_c_of_ls_while_the_whole_account_listing_stalls(fake_factory, mount_factory):
    """The default mount: the root's own listing stalls, and the background fill (which lists the
    root by itself first, after taking the cursor) waits on the server too; `ls` of the root ends
    at Ctrl-C, and lists the root exactly once the server answers again. The stalls end after
    15 s, not 60: whether the `ls` after the Ctrl-C joins a listing already held by the server
    depends on whether the fill listed the root before or after the first `ls` (a request's
    listing older than the fill's cursor is dropped, FolderListing.swift), and a held one would
    otherwise end only at the 30 s low-speed limit, as long as the check's own timeout."""
    fake = fake_factory()
    for i in range(5):
        fake.add_file(f"/d{i}/x.txt", b"x\n")
    stall(fake, "files/list_folder", seconds=15)
    m = mount_factory(fake)
    ls = subprocess.Popen(["ls", m.path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: fired(fake, "files/list_folder") >= 1
               and fake.stats()["routes"].get("files/list_folder/get_latest_cursor", 0) >= 1,
               timeout=10, message="the root's listing to reach the server, and the fill to take its cursor")
    ls.send_signal(signal.SIGINT)
    code, seconds = wait_exit(ls, timeout=10)
    assert code == -signal.SIGINT and seconds < 1.5, (code, seconds, output(ls))
    fake.clear_faults()
    assert listing_names(m.path) == [b"d%d" % i for i in range(5)]


def test_ctrl_c_of_df_while_space_usage_stalls(folders):
    fake, m = folders
    stall(fake, "users/get_space_usage", count=1)
    df = subprocess.Popen(["df", m.path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: fired(fake, "users/get_space_usage") >= 1, timeout=10, message="space usage to be asked")
    df.send_signal(signal.SIGINT)
    code, seconds = wait_exit(df, timeout=10)
    assert code == -signal.SIGINT and seconds < 1.5, (code, seconds, output(df))
    assert run("df", m.path, timeout=30).returncode == 0


def test_an_interrupted_lookup_is_retried_with_the_exact_answer(folders):
    fake, m = folders
    stall(fake, "files/list_folder", count=1)
    stat = subprocess.Popen(["stat", f"{m.path}/slow/file-07.txt"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: fired(fake, "files/list_folder") >= 1, timeout=10, message="the listing to reach the server")
    stat.send_signal(signal.SIGINT)
    code, seconds = wait_exit(stat, timeout=10)
    assert code == -signal.SIGINT and seconds < 1.5, (code, seconds, output(stat))
    assert os.stat(f"{m.path}/slow/file-07.txt").st_size == len(b"7\n")
    assert not os.path.exists(f"{m.path}/slow/missing.txt")


def test_a_listing_another_caller_waits_for_goes_on(fake_factory, mount_factory):
    """Two `ls` share one stalled listing; Ctrl-C of one ends it at once, and the other still gets
    the whole listing when the server answers, from the same request. (With --no-watch each `ls`
    asks through opendir, which the kernel does not serialise per folder as it does lookups and
    readdir.)"""
    fake = fake_factory()
    for i in range(20):
        fake.add_file(f"/slow/file-{i:02}.txt", b"%d\n" % i)
    # A server that sends nothing for 10 s counts as unreachable (--timeouts answer=, 10 s by
    # default); this stall is a slow answer, so the bound is raised above it.
    m = mount_factory(fake, "--no-prefetch", "--no-watch", "--timeouts", "answer=60")
    assert os.listdir(m.path) == ["slow"]
    # Long enough for the steps below on a loaded machine: the listing must still be stalled when
    # the first `ls` is interrupted (the second then waits out the rest of it).
    stall(fake, "files/list_folder", count=1, seconds=10)
    first = subprocess.Popen(["ls", f"{m.path}/slow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: fired(fake, "files/list_folder") >= 1, timeout=10, message="the listing to reach the server")
    waiting = int(sync_status(m.path)["waiting"])
    second = subprocess.Popen(["ls", f"{m.path}/slow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: int(sync_status(m.path)["waiting"]) > waiting, timeout=10,
               message="the second ls to wait for the listing too")
    first.send_signal(signal.SIGINT)
    code, seconds = wait_exit(first, timeout=10)
    assert code == -signal.SIGINT and seconds < 1.5, (code, seconds)
    code, _ = wait_exit(second, timeout=30)
    assert code == 0, output(second)
    assert second.stdout.read().split() == [b"file-%02d.txt" % i for i in range(20)]
    assert fake.stats()["routes"]["files/list_folder"] == 2  # root, then the one shared listing


@pytest.fixture
def stalled_files(fake_factory, mount_factory):
    """A mount (prefetch and watcher on, filled) with eight 12 MiB files; `stall_downloads()` makes
    every later download stall."""
    fake = fake_factory()
    for i in range(8):
        fake.add_file(f"/files/f{i}.bin", size=12 * MiB + i, seed=i + 1)
    m = mount_factory(fake)
    wait_for_fill(m.path, fake)
    return fake, m


def test_sigint_to_a_reader_with_a_handler_blocked_in_read(stalled_files):
    fake, m = stalled_files
    path = f"{m.path}/files/f0.bin"
    stall(fake, "files/download")
    reader = start_reader(path)
    wait_until(lambda: fired(fake, "files/download") >= 1, timeout=10, message="a download to reach the server")
    reader.send_signal(signal.SIGINT)
    code, seconds = wait_exit(reader, timeout=10)
    out = output(reader)
    assert code == 3 and "interrupted" in out, out  # the program's own handler ran
    assert seconds < 1.5, f"read() took {seconds:.2f} s to end after SIGINT"
    fake.clear_faults()
    with open(path, "rb") as f:
        assert f.read() == fake.content("/files/f0.bin")


def test_a_download_another_reader_waits_for_goes_on(stalled_files):
    """A 6 MiB file is fetched whole at its first read: a reader at its start and one 4 MiB in wait
    for the same downloads. SIGINT ends the first at once; the second gets its bytes when the
    server answers, from those same downloads."""
    fake, m = stalled_files
    fake.add_file("/small.bin", size=6 * MiB, seed=42)
    path = f"{m.path}/small.bin"
    wait_until(lambda: os.path.exists(path), timeout=15, message="the new file to appear")
    stall(fake, "files/download", seconds=4)
    first = start_reader(path)
    wait_until(lambda: fired(fake, "files/download") >= 1, timeout=10, message="a download to reach the server")
    waiting = int(sync_status(m.path)["waiting"])
    second = start_reader(path, offset=4 * MiB, whole=True)
    wait_until(lambda: int(sync_status(m.path)["waiting"]) > waiting, timeout=10,
               message="the second reader to wait for the downloads too")
    first.send_signal(signal.SIGINT)
    code, seconds = wait_exit(first, timeout=10)
    assert code == 3 and seconds < 1.5, (code, seconds, output(first))
    # Read at the moment the stall ends: a download the daemon sent before the SIGINT may reach
    # the server only now, and is still one of the stalled ones. Any later one is not.
    stalled = sum(r["fired"] for r in fake.clear_faults() if r["route"] == "files/download")
    code, _ = wait_exit(second, timeout=60)
    assert code == 0 and f"read {2 * MiB}" in output(second)
    assert fake.stats()["routes"]["files/download"] == stalled, "the stalled downloads were not cancelled"
    with open(path, "rb") as f:
        assert f.read() == fake.content("/small.bin")


def blocked_readers(fake, m, count=8):
    stall(fake, "files/download")
    readers = [start_reader(f"{m.path}/files/f{i}.bin", whole=True) for i in range(count)]
    wait_until(lambda: fired(fake, "files/download") >= count, timeout=15,
               message=f"{count} downloads to reach the server")
    return readers


def assert_readers_failed(readers, timeout):
    deadline = time.monotonic() + timeout
    for r in readers:
        code, _ = wait_exit(r, timeout=max(0.1, deadline - time.monotonic()))
        out = output(r)
        # ENOTCONN from the daemon, or ECONNABORTED from the kernel for a request it had not
        # handed over yet when the daemon closed the connection.
        assert code == 4 and out.split()[:2] in (["error", str(errno.ENOTCONN)], ["error", str(errno.ECONNABORTED)]), out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_a_signal_with_readers_on_stalled_downloads_exits_within_5_s(stalled_files, sig):
    fake, m = stalled_files
    readers = blocked_readers(fake, m)
    m.process.send_signal(sig)
    code, seconds = wait_exit(m.process, timeout=10)
    assert code == 0, m.log_text()
    assert seconds < 5, f"the daemon took {seconds:.1f} s to exit"
    assert_readers_failed(readers, timeout=5)
    assert not is_mounted(m.path)


def test_lazy_unmount_with_readers_on_stalled_downloads(stalled_files, mount_factory):
    """After `fusermount3 -u -z` the kernel tells the daemon nothing while files are open: the
    daemon notices from the mount table, fails the stuck reads and exits. A new mount on the same
    folder, made at once, is left alone and serves exact bytes."""
    fake, m = stalled_files
    readers = blocked_readers(fake, m)
    r = run("fusermount3", "-u", "-z", m.path, timeout=10)
    assert r.returncode == 0, r.stderr
    again = mount_factory(fake, mountpoint=m.path)
    code, seconds = wait_exit(m.process, timeout=10)
    assert code == 0, m.log_text()
    assert seconds < 5, f"the daemon took {seconds:.1f} s to exit"
    assert_readers_failed(readers, timeout=5)
    assert "detached (lazy unmount)" in m.log_text()
    fake.clear_faults()
    assert is_mounted(again.path)
    with open(f"{again.path}/files/f3.bin", "rb") as f:
        assert f.read() == fake.content("/files/f3.bin")


def threads_in_uninterruptible_sleep(pid):
    states = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        except OSError:
            continue
    return states.count("D")


def test_an_invalidation_blocked_behind_a_stuck_read_does_not_hold_up_sigterm(stalled_files):
    """A file changed on Dropbox while a read of it is stuck: the kernel holds the invalidation of
    its pages until that read is answered. SIGTERM must still end the daemon within 5 s."""
    fake, m = stalled_files
    readers = blocked_readers(fake, m, count=1)
    batches = int(sync_status(m.path).get("delta_batches", 0))
    fake.add_file("/files/f0.bin", size=12 * MiB, seed=99)
    wait_until(lambda: int(sync_status(m.path).get("delta_batches", 0)) > batches, timeout=15,
               message="the change to be applied")
    wait_until(lambda: threads_in_uninterruptible_sleep(m.process.pid) >= 1, timeout=10,
               message="the invalidation to block in the kernel")
    m.process.send_signal(signal.SIGTERM)
    code, seconds = wait_exit(m.process, timeout=10)
    assert code == 0, m.log_text()
    assert seconds < 5, f"the daemon took {seconds:.1f} s to exit"
    assert_readers_failed(readers, timeout=5)
