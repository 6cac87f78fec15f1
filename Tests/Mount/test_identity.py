"""A stored tree belongs to one identity (docs/SEMANTICS.md "Stored tree and offline"): with a bare
access token, an offline mount serves only a tree some mount with that very token stored (the
token's keyed tag is kept with the tree), never the tree last mounted at the mount point; an
account's database is never used or written by a mount of another account. Against the fake's two
accounts (--second-account), Dropbox taken away by the fault proxy (tools/faultproxy)."""

import hashlib
import os
import stat
import subprocess
import sys
import time

import pytest

from helpers import (
    TOKEN, compare_records, env_for, expected_entries, find_records, is_mounted, poll_assert, run, sync_status,
    wait_for_fill, wait_until,
)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "tools", "faultproxy"))
from faultproxy import FaultProxy  # noqa: E402

TOKEN_B = "test-token-b"


@pytest.fixture
def accounts(fake_factory):
    """The fake with two accounts, each with a tree of its own, and a fault proxy in front of it."""
    fake = fake_factory("--second-account")
    b = fake.as_account("b")
    fake.add_file("/A only/a.txt", b"bytes of account a\n")
    fake.add_file("/Shared name.txt", b"a's version\n")
    b.add_file("/B only/b.txt", b"bytes of account b\n")
    b.add_file("/Shared name.txt", b"b's version, longer\n")
    with FaultProxy("127.0.0.1", fake.port, name="dropbox") as proxy:
        yield fake, b, proxy, "http://127.0.0.1:%d" % proxy.port


def trees(tmp_path):
    return tmp_path / "xdg-cache" / "dropboxfs" / "trees"


def databases(tmp_path):
    return sorted(trees(tmp_path).glob("tree-*.db"))


def fingerprint(path):
    """The database file's bytes and its journal's, as one digest (a clean unmount checkpoints)."""
    h = hashlib.sha256()
    for suffix in ("", "-wal"):
        p = str(path) + suffix
        if os.path.exists(p):
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def assert_shows(m, account):
    compare_records(find_records(m.path), expected_entries(account.tree(hashes=False)))


def mount_a_online(accounts, mount_factory):
    """Mounts account a with its bare token through the proxy, fills, reads a file (into the disk
    cache), unmounts; returns the mount point and a's database."""
    fake, _, _, url = accounts
    m = mount_factory(url)
    wait_for_fill(m.path, fake)
    assert run("cat", m.path + "/A only/a.txt").stdout == b"bytes of account a\n"
    m.unmount()
    return m.path


def mount_offline(binary, url, mountpoint, tmp_path, token):
    return subprocess.run([binary, "mount", mountpoint, "--foreground"], capture_output=True, timeout=60,
                          env=env_for(url, token=token, extra={"XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}))


def test_another_accounts_token_offline_gets_no_tree(binary, accounts, mount_factory, tmp_path):
    """Account b's bare token, offline, on the mount point where account a's tree was stored: the
    mount is refused as with no stored tree (exit 5, one clear line), and a's database is untouched."""
    fake, b, proxy, url = accounts
    mountpoint = mount_a_online(accounts, mount_factory)
    [db_a] = databases(tmp_path)
    before = fingerprint(db_a)
    proxy.set_mode("refuse")
    r = mount_offline(binary, url, mountpoint, tmp_path, TOKEN_B)
    assert r.returncode == 5, r
    assert (b"there is no stored tree of this account to browse offline (mount it once online; an access token "
            b"is served only a tree stored with that same token)") in r.stderr, r.stderr
    assert not is_mounted(mountpoint)
    assert databases(tmp_path) == [db_a] and fingerprint(db_a) == before
    # A token of account a that no mount stored a tree with cannot be tied to it either.
    fake.add_token("another-token-of-a")
    r = mount_offline(binary, url, mountpoint, tmp_path, "another-token-of-a")
    assert r.returncode == 5 and not is_mounted(mountpoint), r
    assert fingerprint(db_a) == before


def test_the_same_token_offline_serves_its_tree(accounts, mount_factory, tmp_path):
    fake, _, proxy, url = accounts
    mountpoint = mount_a_online(accounts, mount_factory)
    proxy.set_mode("refuse")
    m = mount_factory(url, mountpoint=mountpoint)
    assert "offline_since" in sync_status(m.path)
    assert_shows(m, fake)
    assert run("cat", m.path + "/A only/a.txt").stdout == b"bytes of account a\n"   # the disk cache


def test_another_account_online_gets_its_own_tree(accounts, mount_factory, tmp_path):
    """Online, account b at a's mount point: b's tree from b's own database; a's never opened."""
    fake, b, proxy, url = accounts
    mountpoint = mount_a_online(accounts, mount_factory)
    [db_a] = databases(tmp_path)
    before = fingerprint(db_a)
    m = mount_factory(url, mountpoint=mountpoint, env_extra={"DROPBOXFS_ACCESS_TOKEN": TOKEN_B})
    wait_for_fill(m.path, fake)
    assert_shows(m, b)
    assert run("cat", m.path + "/Shared name.txt").stdout == b"b's version, longer\n"
    m.unmount()
    assert fingerprint(db_a) == before
    assert len(databases(tmp_path)) == 2
    # And now b's token offline finds b's tree, a's token a's.
    proxy.set_mode("refuse")
    mb = mount_factory(url, mountpoint=mountpoint, env_extra={"DROPBOXFS_ACCESS_TOKEN": TOKEN_B})
    assert_shows(mb, b)
    mb.unmount()
    ma = mount_factory(url, mountpoint=mountpoint)
    assert_shows(ma, fake)


def test_the_tag_key_is_private_and_no_token_is_stored(accounts, mount_factory, tmp_path):
    mount_a_online(accounts, mount_factory)
    key = tmp_path / "xdg-cache" / "dropboxfs" / "credential-key"
    info = key.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_size == 32
    for db in databases(tmp_path):
        assert b"test-token" not in db.read_bytes()


def rows_and_meta(db):
    """A database's rows and meta, read without writing (to show it was not written)."""
    import sqlite3
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return (con.execute("SELECT * FROM entries ORDER BY idx").fetchall(),
                sorted(con.execute("SELECT key, value FROM meta").fetchall()))
    finally:
        con.close()


def test_online_the_account_is_confirmed_before_the_tree_is_caught_up(accounts, mount_factory, tmp_path):
    """A tree served offline is tied to the token by its tag; once Dropbox answers, it is asked
    whose the token is before any catch-up. Here the token has come to sign in to account b (the
    fake moves it): a's tree is dropped with one log line, b's is listed into b's own database,
    and a's database is not written."""
    fake, b, proxy, url = accounts
    mountpoint = mount_a_online(accounts, mount_factory)
    [db_a] = databases(tmp_path)
    before = rows_and_meta(db_a)
    b.add_token("test-token")                   # the token now signs in to account b
    proxy.set_mode("refuse")
    m = mount_factory(url, mountpoint=mountpoint)
    assert_shows(m, fake)                        # offline: the tree stored with this token
    proxy.set_mode("pass")
    poll_assert(lambda: assert_shows(m, b), timeout=30, interval=0.3, what="account b's tree")
    assert "offline_since" not in sync_status(m.path)
    assert run("cat", m.path + "/Shared name.txt").stdout == b"b's version, longer\n"
    assert not os.path.exists(m.path + "/A only")
    log = m.log_text()
    assert log.count("not of the stored tree's") == 1, log
    assert "sophie@example.com" in log
    m.unmount()
    assert rows_and_meta(db_a) == before
    [db_b] = [db for db in databases(tmp_path) if db != db_a]
    assert len(rows_and_meta(db_b)[0]) == len(b.tree(hashes=False))


def test_a_key_that_is_not_private_ties_nothing(binary, accounts, mount_factory, tmp_path):
    """A tag key others could read is not used: one clear line, and no tree is served offline with
    a bare token (never one that cannot be tied to it)."""
    _, _, proxy, url = accounts
    mountpoint = mount_a_online(accounts, mount_factory)
    key = tmp_path / "xdg-cache" / "dropboxfs" / "credential-key"
    os.chmod(key, 0o644)
    proxy.set_mode("refuse")
    r = mount_offline(binary, url, mountpoint, tmp_path, "test-token")
    assert r.returncode == 5 and not is_mounted(mountpoint), r
    assert b"is not a private file of 32 bytes: not used" in r.stderr, r.stderr
    assert b"test-token" not in r.stderr


def test_a_token_replaced_by_another_accounts_is_not_used_while_mounted(accounts, mount_factory, tmp_path):
    """--access-token-file is read again when it changes (a fixed sign-in without a remount), but
    a token of another account is not taken: the mount keeps showing its account's tree with the
    token in use, says why once, and writes nothing of the other account; a new token of the same
    account is taken."""
    fake, b, proxy, url = accounts
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    m = mount_factory(url, "--access-token-file", str(token_file))
    wait_for_fill(m.path, fake)
    assert_shows(m, fake)

    def replace(token):
        fresh = tmp_path / "token.new"
        fresh.write_text(token + "\n")
        os.rename(fresh, token_file)

    replace(TOKEN_B)
    time.sleep(1.1)  # the file is looked at once a second at most: this change must be seen
    # A change on a's side: the catch-up that follows asks for a token, which finds the file changed.
    fake.add_file("/A only/while-b.txt", b"a's change\n")
    wait_until(lambda: os.path.exists(f"{m.path}/A only/while-b.txt") and
               "not of the mounted one" in m.log_text(), timeout=15, interval=0.3,
               message="the other account's token judged and refused, a's changes still shown")
    log = m.log_text()
    assert log.count("not of the mounted one") == 1, log[-2000:]
    assert TOKEN_B not in log
    assert open(f"{m.path}/Shared name.txt", "rb").read() == b"a's version\n"
    assert_shows(m, fake)

    fake.add_token("test-token-a2")
    replace("test-token-a2")
    time.sleep(1.1)
    fake.add_file("/A only/later.txt", b"later\n")
    wait_until(lambda: "using the new credentials" in m.log_text(), timeout=15, interval=0.3,
               message="a new token of the same account taken")
    wait_until(lambda: os.path.exists(f"{m.path}/A only/later.txt"), timeout=20, interval=0.3,
               message="changes still followed")
    assert open(f"{m.path}/A only/later.txt", "rb").read() == b"later\n"
