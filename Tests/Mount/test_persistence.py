"""The stored tree (docs/SEMANTICS.md "Stored tree and offline"): a remount serves the tree stored
by the last mount at once, without listing, and catches up with what changed meanwhile (through the
cursor, or after a cursor reset by listing again while the stored tree is served); a mount comes up
offline from its stored tree when Dropbox cannot be reached, answers uncached reads at once with
ENETUNREACH, and catches up by itself when Dropbox is back; `kill -9` at any moment leaves a store
that remounts to the account's state; a damaged, foreign or old database is set aside and rebuilt.
"""

import errno
import os
import random
import sqlite3
import stat
import subprocess
import threading
import time

import pytest

from helpers import (
    SwitchableProxy, compare_records, expected_entries, find_records, is_mounted, poll_assert, run,
    sync_status, wait_for_fill, wait_until,
)

LISTING_ROUTES = ("files/list_folder", "files/list_folder/get_latest_cursor")


def populate(fake, n=300):
    fake.mkdir("/Photos/2024")
    for i in range(n):
        folder = ["/Photos/2024", "/Docs", "/docs-lower", "/Mixed Case/Sub"][i % 4]
        fake.add_file(f"{folder}/File {i:04d}.txt", f"content {i}\n".encode())
    fake.add_file("/Caf\u00e9/nfc.txt", b"nfc")
    fake.add_file("/Cafe\u0301-nfd/nfd.txt", b"nfd")
    fake.add_file("/link-target.txt", b"target")
    fake.add_file("/a-link", symlink_target="link-target.txt")


def trees_folder(tmp_path):
    return tmp_path / "xdg-cache" / "dropboxfs" / "trees"


def database(tmp_path):
    dbs = sorted(trees_folder(tmp_path).glob("tree-*.db"))
    assert len(dbs) == 1, dbs
    return dbs[0]


def assert_tree_equals_account(m, fake):
    compare_records(find_records(m.path), expected_entries(fake.tree(hashes=False)))


def eventually_equals_account(m, fake, timeout=20):
    poll_assert(lambda: assert_tree_equals_account(m, fake), timeout=timeout, interval=0.3,
                what="the mount matching the account")


def first_mount(fake, mount_factory, *args):
    m = mount_factory(fake, *args)
    wait_for_fill(m.path, fake)
    assert_tree_equals_account(m, fake)
    return m


def remount(m, fake, mount_factory, *args, **kw):
    m.unmount()
    return mount_factory(fake, *args, **kw)


def test_a_remount_serves_the_stored_tree_without_listing(fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    populate(fake)
    m = first_mount(fake, mount_factory)
    m.unmount()
    fake.reset_stats()
    m2 = mount_factory(fake)
    # At once, before any listing could have run.
    assert_tree_equals_account(m2, fake)
    routes = fake.stats()["routes"]
    assert all(routes.get(r, 0) == 0 for r in LISTING_ROUTES), routes
    assert routes.get("files/list_folder/continue", 0) <= 1, routes
    requests = sum(n for r, n in routes.items() if r != "files/list_folder/longpoll")
    assert requests <= 2, routes  # get_current_account, one continue
    status = sync_status(m2.path)
    assert int(status["restored"]) == len(expected_entries(fake.tree(hashes=False))) - 1
    assert "served the stored tree" in m2.log_text() or "serving the stored tree" in m2.log_text()


def test_store_files_are_private_and_hold_no_token(fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    populate(fake, n=20)
    m = first_mount(fake, mount_factory)
    m.unmount()
    folder = trees_folder(tmp_path)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    db = database(tmp_path)
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    for path in folder.iterdir():
        assert b"test-token" not in path.read_bytes(), path


def mutate_while_unmounted(fake):
    fake.add_file("/Docs/new while away.txt", b"new\n")
    fake.add_file("/Docs/File 0001.txt", b"changed, longer than before\n")
    fake.delete("/docs-lower")
    fake.move("/Photos/2024", "/Archive/2024")
    fake.mkdir("/Empty new folder")
    fake.delete("/a-link")


def test_changes_while_unmounted_appear_after_remount(fake_factory, mount_factory):
    fake = fake_factory()
    populate(fake)
    m = first_mount(fake, mount_factory)
    m.unmount()
    mutate_while_unmounted(fake)
    fake.reset_stats()
    m2 = mount_factory(fake)
    # The catch-up runs before the mount appears (within 2 s): current at once.
    assert_tree_equals_account(m2, fake)
    assert run("cat", m2.path + "/Docs/File 0001.txt").stdout == b"changed, longer than before\n"
    routes = fake.stats()["routes"]
    assert routes.get("files/list_folder", 0) == 0, routes


def test_a_reset_while_unmounted_refills_behind_the_stored_tree(fake_factory, mount_factory):
    fake = fake_factory()
    populate(fake)
    m = first_mount(fake, mount_factory)
    m.unmount()
    mutate_while_unmounted(fake)
    # A case-only rename is not a change Dropbox reports; it shows after a reset's refill.
    fake.move("/Mixed Case", "/MIXED case")
    fake.reset_cursors()
    m2 = mount_factory(fake)
    # Never an empty or half tree: the stored tree is served while the refill runs.
    names = os.listdir(m2.path)
    assert "Docs" in names and len(names) >= 5, names
    eventually_equals_account(m2, fake)
    assert "MIXED case" in os.listdir(m2.path)
    assert int(sync_status(m2.path)["resets"]) == 1
    # The refilled tree was stored: the next remount serves it without listing.
    m2.unmount()
    fake.reset_stats()
    m3 = mount_factory(fake)
    assert_tree_equals_account(m3, fake)
    assert fake.stats()["routes"].get("files/list_folder", 0) == 0


def test_a_reset_while_remounted(fake_factory, mount_factory):
    fake = fake_factory()
    populate(fake)
    m = first_mount(fake, mount_factory)
    m2 = remount(m, fake, mount_factory)
    fake.reset_cursors()
    fake.add_file("/after reset.txt", b"x")
    fake.delete("/Docs")
    eventually_equals_account(m2, fake)
    assert int(sync_status(m2.path)["resets"]) == 1


def test_offline_mount_serves_the_stored_tree_and_reconnects(binary, fake_factory, mount_factory, tmp_path):
    from helpers import env_for
    fake = fake_factory()
    populate(fake, n=40)
    proxy = SwitchableProxy(fake.url)
    try:
        m = mount_factory(proxy.url)
        wait_for_fill(m.path, fake)
        assert run("cat", m.path + "/Docs/File 0001.txt").stdout == b"content 1\n"  # now in the disk cache
        m.unmount()

        proxy.down()
        started = time.monotonic()
        # A bare access token names no account: the stored tree last mounted here is the one.
        m2 = mount_factory(proxy.url, mountpoint=m.path)
        assert time.monotonic() - started < 20
        assert_tree_equals_account(m2, fake)
        status = sync_status(m2.path)
        assert "offline_since" in status, status
        # In the disk cache: readable. Not: fails at once with ENETUNREACH.
        assert run("cat", m2.path + "/Docs/File 0001.txt").stdout == b"content 1\n"
        t = time.monotonic()
        with pytest.raises(OSError) as failure:
            with open(m2.path + "/Docs/File 0005.txt", "rb") as f:
                f.read()
        assert failure.value.errno == errno.ENETUNREACH
        assert time.monotonic() - t < 1.0
        r = subprocess.run([binary, "status"], capture_output=True, timeout=60,
                           env=env_for(proxy.url, extra={"XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}))
        assert b"offline since" in r.stdout, r

        # Dropbox comes back, with a change made meanwhile: caught up without a remount.
        fake.add_file("/Docs/made while offline.txt", b"hello\n")
        proxy.up()
        wait_until(lambda: "offline_since" not in sync_status(m2.path), timeout=25, interval=0.3,
                   message="the mount back online")
        eventually_equals_account(m2, fake)
        assert run("cat", m2.path + "/Docs/File 0005.txt").stdout == b"content 5\n"
        assert "offline" in m2.log_text()
    finally:
        proxy.down()


def test_going_offline_while_mounted(fake_factory, mount_factory):
    fake = fake_factory()
    populate(fake, n=20)
    proxy = SwitchableProxy(fake.url)
    try:
        m = mount_factory(proxy.url)
        wait_for_fill(m.path, fake)
        proxy.down()
        # The watcher's longpoll is cut; its next try cannot connect.
        wait_until(lambda: "offline_since" in sync_status(m.path), timeout=20, interval=0.2, message="offline")
        assert_tree_equals_account(m, fake)
        t = time.monotonic()
        r = run("cat", m.path + "/Docs/File 0001.txt")
        assert r.returncode != 0 and b"Network is unreachable" in r.stderr, r
        assert time.monotonic() - t < 1.0
        proxy.up()
        wait_until(lambda: "offline_since" not in sync_status(m.path), timeout=25, interval=0.3, message="online")
        assert run("cat", m.path + "/Docs/File 0001.txt").stdout == b"content 1\n"
    finally:
        proxy.down()


def test_offline_without_a_stored_tree_fails_clearly(binary, fake_factory, tmp_path):
    from helpers import env_for
    fake = fake_factory()
    proxy = SwitchableProxy(fake.url)
    proxy.down()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run([binary, "mount", str(mnt), "--foreground"], capture_output=True, timeout=60,
                       env=env_for(proxy.url, extra={"XDG_CACHE_HOME": str(tmp_path / "c")}))
    assert r.returncode != 0
    assert b"no stored tree of this account to browse offline" in r.stderr, r.stderr
    assert not is_mounted(str(mnt))


def test_fresh_refuses_a_stale_tree_offline(binary, fake_factory, mount_factory, tmp_path):
    from helpers import env_for
    fake = fake_factory()
    populate(fake, n=10)
    proxy = SwitchableProxy(fake.url)
    try:
        m = mount_factory(proxy.url)
        wait_for_fill(m.path, fake)
        m.unmount()
        proxy.down()
        r = subprocess.run([binary, "mount", m.path, "--foreground", "--fresh"], capture_output=True, timeout=60,
                           env=env_for(proxy.url, extra={"XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}))
        assert r.returncode != 0
        assert b"cannot reach Dropbox" in r.stderr, r.stderr
        assert not is_mounted(m.path)
    finally:
        proxy.down()


class Mutator(threading.Thread):
    """Changes the account without pause until stopped: adds, modifies, deletes and moves."""

    def __init__(self, fake, seed):
        super().__init__(daemon=True)
        self.fake = fake
        self.random = random.Random(seed)
        self.stopped = threading.Event()
        self.count = 0

    def run(self):
        while not self.stopped.is_set():
            r = self.random.random()
            name = f"/churn/d{self.random.randrange(6)}/f{self.random.randrange(40)}"
            try:
                if r < 0.5:
                    self.fake.add_file(name, os.urandom(self.random.randrange(1, 64)))
                elif r < 0.75:
                    self.fake.delete(name)
                else:
                    self.fake.move(name, f"/churn/d{self.random.randrange(6)}/m{self.count}")
            except Exception:
                pass  # a path that does not exist (the fake answers 409): fine
            self.count += 1


def test_kill_9_during_batches_leaves_a_consistent_store(fake_factory, mount_factory):
    fake = fake_factory()
    populate(fake, n=40)
    for i in range(40):
        fake.add_file(f"/churn/d{i % 6}/f{i}", b"x")
    m = first_mount(fake, mount_factory)
    rng = random.Random(7)
    for round in range(8):
        mutator = Mutator(fake, seed=round)
        mutator.start()
        time.sleep(rng.uniform(0.3, 1.2))
        m.process.kill()
        m.process.wait()
        mutator.stopped.set()
        mutator.join()
        subprocess.run(["fusermount3", "-uz", m.path], capture_output=True)
        wait_until(lambda: not is_mounted(m.path), timeout=10, message="the killed mount to go")
        m.unmount()
        m = mount_factory(fake, mountpoint=m.path)
        eventually_equals_account(m, fake)
        assert "set aside" not in m.log_text()
    assert "cannot be read" not in m.log_text()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "schema", "foreign", "cycle"])
def test_a_damaged_foreign_or_old_database_is_rebuilt(fake_factory, mount_factory, tmp_path, damage):
    fake = fake_factory()
    populate(fake, n=40)
    m = first_mount(fake, mount_factory)
    m.unmount()
    db = database(tmp_path)
    if damage == "garbage":
        db.write_bytes(os.urandom(65536))
    elif damage == "truncated":
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 3])
    else:
        c = sqlite3.connect(db)
        if damage == "schema":
            c.execute("PRAGMA user_version = 99")
        elif damage == "foreign":
            c.execute("UPDATE meta SET value = 'dbid:somebody-else' WHERE key = 'account_id'")
        else:
            c.execute("UPDATE entries SET parent = (SELECT idx FROM entries WHERE name = '2024') "
                      "WHERE name = 'Photos'")
        c.commit()
        c.close()
    m2 = mount_factory(fake)
    wait_for_fill(m2.path, fake)
    assert_tree_equals_account(m2, fake)
    log = m2.log_text()
    assert "set aside" in log or "cannot be read" in log, log
    # Rebuilt: the next remount serves the new store without listing.
    m2.unmount()
    fake.reset_stats()
    m3 = mount_factory(fake)
    assert_tree_equals_account(m3, fake)
    assert fake.stats()["routes"].get("files/list_folder", 0) == 0


def test_two_mounts_of_one_account_never_share_the_store(fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    populate(fake, n=20)
    m1 = first_mount(fake, mount_factory)
    m2 = mount_factory(fake)
    wait_for_fill(m2.path, fake)
    assert_tree_equals_account(m2, fake)
    assert "keeps its tree in memory only" in m2.log_text()
    fake.add_file("/Docs/seen by both.txt", b"1")
    for m in (m1, m2):
        wait_until(lambda: os.path.exists(m.path + "/Docs/seen by both.txt"), timeout=10, message="the change")


def test_no_persist_keeps_nothing(fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    populate(fake, n=10)
    m = mount_factory(fake, "--no-persist")
    wait_for_fill(m.path, fake)
    m.unmount()
    assert not trees_folder(tmp_path).exists() or not list(trees_folder(tmp_path).glob("tree-*.db"))
