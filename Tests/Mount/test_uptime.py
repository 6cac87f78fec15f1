"""Long uptimes: the daemon raises its open-file limit to the hard limit at start,
since it holds a descriptor per connection and per disk cache file and a mount runs for weeks."""

import os
import resource
import struct
import threading
from concurrent.futures import ThreadPoolExecutor

from helpers import run, sync_status, wait_for_fill, wait_until


def limits(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), (resource.RLIM_INFINITY if hard == "unlimited" else int(hard))
    raise AssertionError("no open-file limit in /proc/PID/limits")


def test_the_open_file_limit_is_raised_to_the_hard_limit(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/a.txt", b"a\n")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = min(soft, 256, hard)
    # The daemon starts with a low soft limit, as under a login shell's default of 1024.
    previous = (soft, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        m = mount_factory(fake)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, previous)
    assert run("cat", f"{m.path}/a.txt").stdout == b"a\n"
    got_soft, got_hard = limits(m.process.pid)
    assert got_hard == hard
    assert got_soft == min(hard, 1 << 20)


def daemon_figures(m):
    status = sync_status(m.path)
    with open(f"/proc/{m.process.pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    fds = len(os.listdir(f"/proc/{m.process.pid}/fd"))
    return {"rss_kib": rss, "fds": fds, **{k: int(status[k]) for k in ("records", "open_handles", "contents", "inode_notes", "disk_bypassed")}}


def drop_kernel_caches():
    """Makes the kernel forget cached dentries and inodes, so the daemon gets their FORGETs."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")


def test_a_long_run_of_opens_and_rewrites_comes_back_to_its_plateau(fake_factory, mount_factory):
    """10,000 distinct files opened, read and closed 10 times over, and one file rewritten 1,000
    times on Dropbox while it is read: the daemon's RSS, descriptors, tree records and the reader's
    maps come back to the plateau of the first round."""
    fake = fake_factory("--synthetic", "11000", "--folders", "200")
    m = mount_factory(fake)
    wait_for_fill(m.path, fake)
    files = [e["path_display"] for e in fake.tree(hashes=False)
             if e["tag"] == "file" and e.get("symlink_target") is None and e.get("is_downloadable", True)
             and "/ Nasty names" not in e["path_display"] and "/Unicode" not in e["path_display"]][:10000]
    assert len(files) >= 9000, len(files)

    def read_one(rel):
        try:
            with open(m.path + rel, "rb") as f:
                return len(f.read(4096))
        except FileNotFoundError:
            return 0

    figures = []
    with ThreadPoolExecutor(8) as pool:
        for round in range(10):
            assert sum(pool.map(read_one, files)) > 0
            drop_kernel_caches()
            wait_until(lambda: daemon_figures(m)["open_handles"] == 0, timeout=30, message="handles closed")
            figures.append(daemon_figures(m))

    # One file rewritten 1,000 times while a reader keeps reading it.
    target = "/rewritten.bin"
    fake.add_file(target, size=20000, seed=1)
    wait_until(lambda: os.path.exists(m.path + target), timeout=10, message="the file")
    stop = threading.Event()
    seen = []

    def reader():
        while not stop.is_set():
            try:
                with open(m.path + target, "rb") as f:
                    head = f.read(16)
                    if len(head) == 16:
                        seen.append(struct.unpack("<QQ", head))
            except FileNotFoundError:
                pass

    t = threading.Thread(target=reader)
    t.start()
    for i in range(1000):
        fake.add_file(target, size=20000, seed=2 + i)
    stop.set()
    t.join()
    assert seen and all(index == 0 for index, _ in seen), "every read saw block 0 of some revision"
    wait_until(lambda: os.path.getsize(m.path + target) == 20000 and
               open(m.path + target, "rb").read(16)[8:] == struct.pack("<Q", 1001), timeout=20,
               message="the last revision")
    drop_kernel_caches()
    wait_until(lambda: daemon_figures(m)["open_handles"] == 0, timeout=30, message="handles closed")
    after = daemon_figures(m)

    plateau = figures[0]
    for name, got in [("round 10", figures[-1]), ("after 1,000 rewrites", after)]:
        assert got["fds"] <= plateau["fds"] + 4, (name, plateau, got)
        assert got["rss_kib"] <= plateau["rss_kib"] * 1.25 + 16 * 1024, (name, plateau, got)
        assert got["records"] <= plateau["records"] + 64, (name, plateau, got)
        # A content read while the cache disk did not answer (a loaded machine) is kept in memory
        # only, within the buffer cap: one more per such file, counted by the daemon.
        bypassed = got["disk_bypassed"] - plateau["disk_bypassed"]
        assert got["contents"] <= plateau["contents"] + 16 + bypassed, (name, plateau, got)
        # Notes live as long as the kernel holds the inode; how many it keeps after drop_caches
        # is the kernel's choice, but never more than one per file, whatever the rounds.
        assert got["inode_notes"] <= len(files) + 64, (name, plateau, got)
    most_notes = max(f["inode_notes"] for f in figures)
    assert after["inode_notes"] <= most_notes + 64, ("1,000 revisions, each a new inode", figures[-1], after)
    print("plateau:", plateau, "round 10:", figures[-1], "after rewrites:", after)
