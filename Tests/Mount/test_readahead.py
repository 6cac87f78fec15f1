"""Read-ahead across files (docs/READS.md, "Read-ahead across files"): a program reading the files
of a folder one after another gets the next small files fetched before it opens them; a single
read, or reads of single files in different folders, cost no extra request; and a file changed on
Dropbox after its read-ahead is read at its new revision. These tests read ahead file by file
(`--no-folder-zips`; folders as one zip: test_folder_zips.py). Requests are counted at the fake; the
read-ahead is decided inside each open, so the daemon's status (`read_ahead_queued`, files queued
for read-ahead so far) is exact as soon as the program's open returned."""

import os

from helpers import poll_assert, run, sync_status, wait_for_fill, wait_until

KiB = 1 << 10


def downloads(fake):
    """Downloads the fake answered so far (it counts each once its answer is sent)."""
    return fake.stats()["routes"].get("files/download", 0)


def queued(mountpoint):
    return int(sync_status(mountpoint)["read_ahead_queued"])


def fetched(mountpoint):
    return int(sync_status(mountpoint)["read_ahead_files"])


def add_folder(fake, folder, count, size=4 * KiB):
    data = {}
    for i in range(count):
        name = f"{folder}/f{i:03}.txt"
        data[name] = os.urandom(size)
        fake.add_file(name, data[name])
    return data


def test_a_walk_over_a_folder_reads_its_next_files_ahead(fake_factory, mount_factory):
    fake = fake_factory()
    data = add_folder(fake, "/walk", 40)
    m = mount_factory(fake, "--no-folder-zips")
    wait_for_fill(m.path, fake)
    fake.reset_stats()
    # One process reads three files in listing order: from the second open on, the rest of the
    # folder is read ahead.
    names = sorted(data)
    r = run("cat", *[m.path + n for n in names[:3]])
    assert r.returncode == 0 and r.stdout == b"".join(data[n] for n in names[:3])
    assert queued(m.path) == len(names) - 2
    wait_until(lambda: fetched(m.path) == len(names) - 2, timeout=30, message="the read-ahead to finish")
    # Each file was downloaded once: the read-ahead's downloads are the ones the reads use. (The
    # fake counts a request once its answer is sent, a moment after the daemon has it.)
    wait_until(lambda: downloads(fake) >= len(names), timeout=30, message="the fake to count the downloads")
    assert downloads(fake) == len(names)
    # The rest of the walk is served without another request, and its bytes are right.
    r = run("cat", *[m.path + n for n in names[3:]])
    assert r.returncode == 0 and r.stdout == b"".join(data[n] for n in names[3:])
    assert downloads(fake) == len(names)


def test_a_walk_reads_the_next_folder_ahead_at_the_end_of_one(fake_factory, mount_factory):
    """A walk goes on in listing order: once the window reaches the end of /tree/a (no
    subfolders), the first files of /tree/b are read ahead too, so the walk's first open there
    does not wait a round trip."""
    fake = fake_factory()
    a = add_folder(fake, "/tree/a", 10)
    b = add_folder(fake, "/tree/b", 10)
    m = mount_factory(fake, "--no-folder-zips")
    wait_for_fill(m.path, fake)
    fake.reset_stats()
    names_a, names_b = sorted(a), sorted(b)
    assert run("cat", *[m.path + n for n in names_a[:2]]).returncode == 0
    assert queued(m.path) == 8 + 10
    wait_until(lambda: fetched(m.path) == 18, timeout=30, message="the read-ahead to finish")
    wait_until(lambda: downloads(fake) >= 20, timeout=30, message="the fake to count the downloads")
    r = run("cat", *[m.path + n for n in names_a[2:] + names_b])
    assert r.returncode == 0 and r.stdout == b"".join([a[n] for n in names_a[2:]] + [b[n] for n in names_b])
    assert downloads(fake) == 20


def test_the_read_ahead_stops_when_the_pattern_stops(fake_factory, mount_factory):
    fake = fake_factory()
    folders = [f"/d{i}" for i in range(6)]
    data = {}
    for folder in folders:
        data.update(add_folder(fake, folder, 20))
    m = mount_factory(fake, "--no-folder-zips")
    wait_for_fill(m.path, fake)
    fake.reset_stats()

    # A single file: one request, nothing queued.
    assert run("cat", m.path + "/d0/f007.txt").stdout == data["/d0/f007.txt"]
    assert queued(m.path) == 0 and downloads(fake) == 1

    # One file in each of several folders, by one process: no read-ahead either.
    picks = ["/d1/f003.txt", "/d2/f011.txt", "/d3/f000.txt", "/d4/f019.txt", "/d5/f005.txt"]
    r = run("cat", *[m.path + p for p in picks])
    assert r.stdout == b"".join(data[p] for p in picks)
    assert queued(m.path) == 0 and downloads(fake) == 1 + len(picks)

    # A walk of two files in /d0 starts the read-ahead of /d0's next files and, its window reaching
    # the end of /d0, of the next folder's first ones; the same process then reading single files
    # in other folders queues at most one more window (it looked like a walk going on to the next
    # folder), then nothing more.
    walk_then_random = ["/d0/f010.txt", "/d0/f011.txt", "/d1/f015.txt", "/d2/f002.txt", "/d3/f013.txt",
                        "/d4/f001.txt"]
    r = run("cat", *[m.path + p for p in walk_then_random])
    assert r.stdout == b"".join(data[p] for p in walk_then_random)
    after_walk = queued(m.path)
    # /d0 after f011: 8 files, and /d1's 20 (its window reached /d0's end); at /d1/f015 the
    # window reaches /d1's end: /d2's 20. Never more.
    assert 0 < after_walk <= 8 + 20 + 20, after_walk
    more = ["/d5/f010.txt", "/d1/f001.txt", "/d3/f004.txt"]
    r = run("cat", *[m.path + p for p in more])
    assert r.stdout == b"".join(data[p] for p in more)
    assert queued(m.path) == after_walk
    # Every request is a file read or read ahead; the total is bounded by them.
    assert downloads(fake) <= 1 + len(picks) + len(walk_then_random) + after_walk + len(more)


def test_a_file_changed_during_its_read_ahead_is_read_at_its_new_revision(fake_factory, mount_factory):
    """The read-ahead of f010 is queued or in flight (every answer takes 300 ms) when Dropbox gets
    new bytes for it: it holds the old revision's bytes, under the old content_hash, and an open of
    the new revision must never be served them. A new open shows the new bytes as soon as the
    mount sees the change (within the 5 s of test_freshness.py), and never the old ones after."""
    fake = fake_factory()
    data = add_folder(fake, "/docs", 20)
    m = mount_factory(fake, "--no-folder-zips")
    wait_for_fill(m.path, fake)
    names = sorted(data)
    changed = names[10]
    path = m.path + changed
    fake.config(latency_ms=300)
    r = run("cat", *[m.path + n for n in names[:2]])
    assert r.returncode == 0
    new = os.urandom(len(data[changed]))
    fake.add_file(changed, new)
    fake.config(latency_ms=0)
    wait_until(lambda: fetched(m.path) == len(names) - 2, timeout=30, message="the read-ahead to finish")

    def reads_new():
        got = run("cat", path)
        assert got.returncode == 0 and got.stdout in (data[changed], new)
        assert got.stdout == new, "not yet the new revision"

    poll_assert(reads_new, timeout=10, interval=0.1, what="a new open to read the new revision")
    for _ in range(3):
        assert run("cat", path).stdout == new
    # Its neighbours are served from the read-ahead, and right.
    before = downloads(fake)
    assert run("cat", m.path + names[11]).stdout == data[names[11]]
    assert downloads(fake) == before


def test_no_read_ahead_turns_it_off(fake_factory, mount_factory):
    fake = fake_factory()
    data = add_folder(fake, "/walk", 10)
    m = mount_factory(fake, "--no-read-ahead")
    wait_for_fill(m.path, fake)
    fake.reset_stats()
    names = sorted(data)
    r = run("cat", *[m.path + n for n in names[:4]])
    assert r.stdout == b"".join(data[n] for n in names[:4])
    assert "read_ahead_queued" not in sync_status(m.path)
    assert downloads(fake) == 4
