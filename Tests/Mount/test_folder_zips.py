"""Folders read ahead as one zip (docs/READS.md, "Folders as one zip"): a walk over folders of small
files costs one files/download_zip per folder instead of one download per file; every member is
checked against the listing before it is served, so a damaged zip, a failed one, or a file changed
since the listing costs only downloads of single files, never a wrong byte. Requests are counted
at the fake; the zip of a folder is asked for inside the open that decided its read-ahead, so the
walk's next open already waits for it instead of downloading."""

import hashlib
import os

import pytest

from helpers import run, sync_status, wait_for_fill, wait_until

KiB = 1 << 10


def routes(fake):
    return fake.stats()["routes"]


def downloads(fake):
    return routes(fake).get("files/download", 0)


def zips(fake):
    return routes(fake).get("files/download_zip", 0)


def counted_zips(fake, n):
    """The fake's count of zips, once it reached `n` (it counts a reply once sent, a moment after
    the daemon has it)."""
    wait_until(lambda: zips(fake) >= n, timeout=10, message="the fake to count the zips")
    return zips(fake)


def status(m, key):
    return int(sync_status(m.path)[key])


def add_tree(fake, folders, count, size=4 * KiB):
    data = {}
    for folder in folders:
        for i in range(count):
            name = f"/tree/{folder}/f{i:03}.txt"
            data[name] = os.urandom(size + i)
            fake.add_file(name, data[name])
    return data


def mount_at_link_speed(fake, mount_factory, *args):
    """A mount whose listing is done, then 100 ms per request: a zip is measured against single
    downloads (FolderZips.slower), and at 100 ms a zip made at once never looks slow, however
    loaded the machine."""
    m = mount_factory(fake, *args)
    wait_for_fill(m.path, fake)
    fake.config(latency_ms=100)
    return m


def walk(m, data):
    """One process reads every file in listing order (as grep -r or tar would); its output must be
    the files' bytes, in order."""
    names = sorted(data)
    r = run("cat", *[m.path + n for n in names], timeout=120)
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256(r.stdout).hexdigest() == hashlib.sha256(b"".join(data[n] for n in names)).hexdigest()


def test_a_walk_reads_each_folder_as_one_zip(fake_factory, mount_factory):
    fake = fake_factory()
    folders = ["a", "b", "c", "d", "e", "f"]
    data = add_tree(fake, folders, 30)
    m = mount_at_link_speed(fake, mount_factory)
    fake.reset_stats()
    walk(m, data)
    # The walk's first two files are its own downloads; its second open asks for /tree/a as a zip
    # (of the files after it), and each folder's zip is asked for before the walk enters it.
    assert counted_zips(fake, len(folders)) == len(folders)
    wait_until(lambda: downloads(fake) >= 2, timeout=10, message="the fake to count the downloads")
    assert downloads(fake) == 2
    assert status(m, "zip_files") == len(data) - 2
    assert status(m, "zip_failures") == 0
    # A second walk reads the disk cache: no request at all.
    fake.reset_stats()
    walk(m, data)
    assert zips(fake) == 0 and downloads(fake) == 0


def test_no_folder_zips_reads_file_by_file(fake_factory, mount_factory):
    fake = fake_factory()
    data = add_tree(fake, ["a", "b"], 20)
    m = mount_factory(fake, "--no-folder-zips")
    wait_for_fill(m.path, fake)
    fake.reset_stats()
    walk(m, data)
    assert zips(fake) == 0
    wait_until(lambda: downloads(fake) >= len(data), timeout=30, message="the fake to count the downloads")
    assert downloads(fake) == len(data)
    assert "zip_folders" not in sync_status(m.path)


def test_a_damaged_member_is_downloaded_by_itself(fake_factory, mount_factory):
    """One byte of the first zip inverted on the way (its middle: some member's data): that
    member fails its check and is downloaded alone; the rest of the zip is served."""
    fake = fake_factory()
    data = add_tree(fake, ["a", "b"], 20)
    m = mount_at_link_speed(fake, mount_factory)
    fake.reset_stats()
    fake.add_fault("files/download_zip", "flip", count=1)
    walk(m, data)
    assert counted_zips(fake, 2) == 2
    wait_until(lambda: downloads(fake) >= 3, timeout=10, message="the fake to count the downloads")
    assert downloads(fake) == 2 + 1
    assert status(m, "zip_files") == len(data) - 3


@pytest.mark.parametrize("kind", ["409json", "503"])
def test_a_failed_zip_falls_back_to_single_downloads(fake_factory, mount_factory, kind):
    """Dropbox refuses the folder (too_large) or keeps failing (a zip is tried once, not retried:
    the walk waits for it): its files are downloaded one by one, with the same bytes; the next
    folder is asked for as a zip again."""
    fake = fake_factory()
    data = add_tree(fake, ["a", "b", "c"], 20)
    m = mount_at_link_speed(fake, mount_factory)
    fake.reset_stats()
    fake.add_fault("files/download_zip", kind, count=1 if kind == "409json" else 0, after=0,
                   **({"error_summary": "too_large/"} if kind == "409json" else {}))
    if kind == "503":
        # Every zip fails, after the pacer's retries; the walk still reads every file.
        walk(m, data)
        assert status(m, "zip_files") == 0
        assert status(m, "zip_failures") >= 1
        wait_until(lambda: downloads(fake) >= len(data), timeout=30, message="the fake to count the downloads")
        assert downloads(fake) == len(data)
        return
    walk(m, data)
    assert status(m, "zip_failures") == 1
    assert counted_zips(fake, 3) == 3
    # The first zip to arrive failed (/tree/a's or /tree/b's, asked for together): its files came
    # one by one; the other zips served theirs. Each file was fetched once, one way or the other.
    wait_until(lambda: downloads(fake) + status(m, "zip_files") >= len(data), timeout=30,
               message="the fake to count the downloads")
    assert downloads(fake) + status(m, "zip_files") == len(data)
    assert downloads(fake) in (20, 22), downloads(fake)


def test_a_file_changed_since_the_listing_is_never_served_from_the_zip(fake_factory, mount_factory):
    """The mount has not seen a change yet (its longpoll is held), and the zip holds the new bytes:
    they differ from the listing's content_hash, so that file is downloaded at the revision the
    mount shows, whole and unmixed; when the change arrives, the new bytes are read."""
    fake = fake_factory()
    data = add_tree(fake, ["a"], 20)
    fake.add_fault("files/list_folder/longpoll", "hold", count=0)  # from the first longpoll on
    m = mount_at_link_speed(fake, mount_factory)
    changed = "/tree/a/f010.txt"
    new = os.urandom(3 * KiB)
    fake.add_file(changed, new)
    fake.reset_stats()
    walk(m, data)  # the old bytes, as the mount's listing says
    assert counted_zips(fake, 1) == 1
    wait_until(lambda: downloads(fake) >= 3, timeout=10, message="the fake to count the downloads")
    assert downloads(fake) == 2 + 1
    assert status(m, "zip_files") == len(data) - 3
    fake.clear_faults()
    fake.release_holds()
    wait_until(lambda: run("cat", m.path + changed).stdout == new, timeout=15, message="the new revision")


def test_zips_slower_than_single_downloads_pause(fake_factory, mount_factory):
    """Dropbox takes 600 ms to make each zip while a file answers at once: the walk would wait for
    every folder's zip, so after the first zip it reads ahead file by file (one log line), and
    every byte is still right."""
    fake = fake_factory()
    data = add_tree(fake, ["a", "b", "c", "d", "e", "f"], 30)
    m = mount_at_link_speed(fake, mount_factory)
    fake.config(zip_delay_ms=600)
    fake.reset_stats()
    walk(m, data)
    assert status(m, "zip_pauses") == 1
    # /tree/a's and /tree/b's zips were asked for together, before the first one answered.
    assert zips(fake) <= 2, zips(fake)
    assert "reading ahead file by file for 5 minutes" in m.log_text()


def test_zips_stop_when_the_pattern_stops(fake_factory, mount_factory):
    """Reads of single files in several folders start no read-ahead, so no zip; a walk of two files
    that turns into single reads asks for at most one window's zips more, then none."""
    fake = fake_factory()
    data = add_tree(fake, ["a", "b", "c", "d", "e"], 20)
    m = mount_at_link_speed(fake, mount_factory)
    fake.reset_stats()
    picks = ["/tree/a/f003.txt", "/tree/b/f011.txt", "/tree/c/f000.txt", "/tree/d/f019.txt"]
    r = run("cat", *[m.path + p for p in picks])
    assert r.returncode == 0 and r.stdout == b"".join(data[p] for p in picks)
    assert status(m, "zip_folders") == 0
    walk_then_single = ["/tree/e/f001.txt", "/tree/e/f002.txt", "/tree/a/f010.txt", "/tree/c/f015.txt",
                        "/tree/b/f004.txt"]
    r = run("cat", *[m.path + p for p in walk_then_single])
    assert r.returncode == 0 and r.stdout == b"".join(data[p] for p in walk_then_single)
    # /tree/e's walk asks for its zip (the last folder: no next one); the open in /tree/a right
    # after looks like the walk going on into another folder, so one more window is read ahead,
    # /tree/a's zip and its next folder's; then nothing more, as file by file (test_readahead.py).
    # (The daemon counts a zip when it asks for it, inside the open; the fake once it answered.)
    after_walk = status(m, "zip_folders")
    assert 1 <= after_walk <= 3, after_walk
    more = ["/tree/d/f010.txt", "/tree/e/f015.txt", "/tree/c/f004.txt"]
    r = run("cat", *[m.path + p for p in more])
    assert r.returncode == 0 and r.stdout == b"".join(data[p] for p in more)
    assert status(m, "zip_folders") == after_walk
    assert counted_zips(fake, after_walk) == after_walk
