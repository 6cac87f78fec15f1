"""Listings in flight (docs/SEMANTICS.md "Listings in flight"): a listing of a folder that started
before a newer one was applied to it never lands over it, so the tree never goes back in time, and
the older state is not stored either.

The user's repro, through the HTTP fake: during the first fill, `ls race` lists the folder by itself
while the fill waits for its cursor (a held `get_latest_cursor`); the second page of that listing is
held too; a file is created and another deleted on Dropbox, then the cursor is released (it comes
after both changes) and the fill lists `race` afresh. Only then is the old listing's page released.
Every step waits for a condition (the fake's fault counters, the status attribute, the `ls` process
ending), with bounds; the holds end when the test releases them, not after a time.
"""

import errno
import os
import subprocess

from helpers import (
    compare_records, expected_entries, faults_fired, find_records, wait_for_fill, wait_until,
)

CURSOR = "files/list_folder/get_latest_cursor"
CONTINUE = "files/list_folder/continue"


def test_an_older_listing_never_lands_after_the_fills_newer_one(fake_factory, mount_factory):
    # Pages of 2: the folder's own listing is `b-gone c-keep` then `d-zz`; the file created while
    # its second page is held (`a-new`) sorts before the first page's end, so that listing never
    # has it, and the file deleted (`b-gone`) was on its first page.
    fake = fake_factory("--max-page", "2")
    for name in ("b-gone", "c-keep", "d-zz"):
        fake.add_file(f"/race/{name}", name.encode())
    # The first get_latest_cursor is the mount's permission check; the second is the fill's.
    fake.add_fault(CURSOR, "hold", hold_seconds=120, after=1)
    m = mount_factory(fake)
    race = os.path.join(m.path, "race")
    wait_until(lambda: faults_fired(fake, CURSOR) >= 1, timeout=30, message="the fill asking for its cursor")

    assert os.listdir(m.path) == ["race"]  # the root, listed by itself
    fake.add_fault(CONTINUE, "hold", hold_seconds=120)
    ls = subprocess.Popen(["ls", "-1", race], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: faults_fired(fake, CONTINUE) >= 1, timeout=30,
                   message="the second page of the listing of race to be asked")
        assert ls.poll() is None, "ls must wait for its listing"
        fake.add_file("/race/a-new", b"new")
        fake.delete("/race/b-gone")
        fake.release_holds(CURSOR)
        status = wait_for_fill(m.path, fake)
        assert status.get("phase") == "watching", status
        assert ls.poll() is None, "the older listing is still held"
        fake.release_holds(CONTINUE)
        out, err = ls.communicate(timeout=60)
    finally:
        fake.release_holds()
        if ls.poll() is None:
            ls.kill()
            ls.wait()
    assert ls.returncode == 0, err
    assert out.decode().split() == ["a-new", "c-keep", "d-zz"], "the user is answered with the newer state"

    want = ["a-new", "c-keep", "d-zz"]
    assert sorted(os.listdir(race)) == want
    try:
        os.stat(os.path.join(race, "b-gone"))
        raise AssertionError("the deleted file came back")
    except OSError as e:
        assert e.errno == errno.ENOENT
    with open(os.path.join(race, "a-new"), "rb") as f:
        assert f.read() == b"new"

    # What is stored is the newer state too: a remount serves it (and catches up with nothing).
    m.unmount()
    m2 = mount_factory(fake)
    assert sorted(os.listdir(os.path.join(m2.path, "race"))) == want
    compare_records(find_records(m2.path), expected_entries(fake.tree(hashes=False)))
