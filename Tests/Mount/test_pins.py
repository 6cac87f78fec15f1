"""Available offline through the real mount (docs/SEMANTICS.md "Available offline"): `dropboxfs pin`
keeps a folder's files in the disk cache (the daemon downloads them in the background), `pinned`
shows them present, the xattr and `status` say so; after a remount with Dropbox gone the pinned
files read with the fake's bytes; a pinned file changed on the server is fetched again by itself; a
pinned folder moved on Dropbox stays pinned under its new path, also when it moved while unmounted;
eviction under a small cache cap never drops a pinned file, and does once it is unpinned; a pin that
does not fit (in the cache's cap, or in the free space of its disk: a small tmpfs), or one on a mount
without a disk cache, is refused with a clear message; a pin made offline is downloaded once Dropbox
is back; without the background listing the keeper lists the pinned folders itself."""

import errno
import hashlib
import json
import os

import pytest

from helpers import SwitchableProxy, run, wait_for_fill, wait_until

KiB = 1 << 10


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def content_folder(tmp_path):
    return tmp_path / "xdg-cache" / "dropboxfs" / "content"


def cached(tmp_path):
    folder = content_folder(tmp_path)
    return {name for name in os.listdir(folder) if not name.startswith(".")} if folder.exists() else set()


def hashes(fake):
    return {e["path_display"]: e.get("content_hash") for e in fake.tree()}


def pins(binary, *mountpoints):
    r = run(binary, "pinned", "--json", *mountpoints)
    assert r.returncode == 0, r.stderr
    return {m["path"]: m["pins"] for m in json.loads(r.stdout)["mounts"]}


def wait_present(binary, m, path, timeout=30):
    def present():
        listed = pins(binary, m.path)[m.path]
        return any(p["path"] == path and p["state"] == "present" for p in listed) and listed
    return wait_until(present, timeout=timeout, interval=0.1, message=f"{path} present on disk")


def keep_files(fake):
    fake.add_file("/Keep/a.bin", size=300 * KiB, seed=1)
    fake.add_file("/Keep/sub/b.txt", b"pinned text\n")
    fake.add_file("/Keep/sub/deeper/c.bin", size=100 * KiB, seed=2)
    return ["/Keep/a.bin", "/Keep/sub/b.txt", "/Keep/sub/deeper/c.bin"]


def test_a_pinned_folder_reads_offline_after_a_remount(binary, fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    names = keep_files(fake)
    fake.add_file("/Other/not-pinned.txt", b"only online\n")
    proxy = SwitchableProxy(fake.url)
    try:
        m = mount_factory(proxy.url)
        wait_for_fill(m.path, fake)
        r = run(binary, "pin", f"{m.path}/Keep")
        assert r.returncode == 0, r.stderr
        assert r.stdout.decode().startswith("pinned /Keep: 3 files,"), r.stdout
        listed = wait_present(binary, m, "/Keep")
        assert listed == [{"path": "/Keep", "state": "present", "files": 3, "present_files": 3,
                           "bytes": 400 * KiB + 12, "present_bytes": 400 * KiB + 12, "unavailable": 0}]
        known = hashes(fake)
        assert {known[n] for n in names} <= cached(tmp_path)
        # Nothing was read through the mount: the keeper downloaded them.
        assert os.getxattr(f"{m.path}/Keep/a.bin", "user.dropboxfs.offline") == b"present"
        assert os.getxattr(f"{m.path}/Keep/sub", "user.dropboxfs.offline") == b"present 2/2 files"
        assert "user.dropboxfs.offline" in os.listxattr(f"{m.path}/Keep/a.bin")
        assert "user.dropboxfs.offline" not in os.listxattr(f"{m.path}/Other/not-pinned.txt")
        r = run(binary, "pinned", m.path)
        assert r.returncode == 0 and "/Keep: present, 3/3 files" in r.stdout.decode(), r
        m.unmount()

        proxy.down()
        m2 = mount_factory(proxy.url, mountpoint=m.path)
        wait_until(lambda: "offline_since" in os.getxattr(m2.path, "user.dropboxfs.status").decode(),
                   timeout=20, interval=0.1, message="the remount offline")
        assert pins(binary, m2.path)[m2.path][0]["state"] == "present"
        r = run("sha256sum", *[m2.path + n for n in names])
        assert r.returncode == 0, r.stderr
        got = {line.split()[1][len(m2.path):]: line.split()[0] for line in r.stdout.decode().splitlines()}
        assert got == {n: sha256(fake.content(n)) for n in names}
        with pytest.raises(OSError) as failure:
            with open(f"{m2.path}/Other/not-pinned.txt", "rb") as f:
                f.read()
        assert failure.value.errno == errno.ENETUNREACH
        r = run(binary, "status", m2.path, env={**os.environ, "DROPBOXFS_API_URL": proxy.url,
                                                "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")})
        assert "available offline: 1 pin, 3/3 files" in r.stdout.decode(), r
        r = run(binary, "status", "--json", m2.path, env={**os.environ, "DROPBOXFS_API_URL": proxy.url,
                                                          "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")})
        status = json.loads(r.stdout)["mounts"][0]["status"]
        assert (status["pins"], status["pinned_files"], status["pinned_present_files"]) == (1, 3, 3), status
        assert status["pinned_bytes"] == status["pinned_present_bytes"] == 400 * KiB + 12, status
    finally:
        proxy.down()


def test_a_pinned_file_changed_on_the_server_is_fetched_again(binary, fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    keep_files(fake)
    m = mount_factory(fake)
    wait_for_fill(m.path, fake)
    assert run(binary, "pin", f"{m.path}/Keep").returncode == 0
    wait_present(binary, m, "/Keep")
    old = hashes(fake)["/Keep/a.bin"]
    fake.add_file("/Keep/a.bin", size=200 * KiB, seed=77)
    new = hashes(fake)["/Keep/a.bin"]
    assert new != old
    # Fetched by the keeper, without any read of the file.
    wait_until(lambda: new in cached(tmp_path), timeout=30, interval=0.1, message="the new content downloaded")
    wait_present(binary, m, "/Keep")
    assert sha256(open(f"{m.path}/Keep/a.bin", "rb").read()) == sha256(fake.content("/Keep/a.bin"))


def test_a_pinned_folder_moved_on_dropbox_stays_pinned(binary, fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    names = keep_files(fake)
    m = mount_factory(fake)
    wait_for_fill(m.path, fake)
    assert run(binary, "pin", f"{m.path}/Keep").returncode == 0
    wait_present(binary, m, "/Keep")
    fake.move("/Keep", "/Projects/Keep")
    listed = wait_present(binary, m, "/Projects/Keep")
    assert [p["path"] for p in listed] == ["/Projects/Keep"], listed
    assert os.getxattr(f"{m.path}/Projects/Keep/sub", "user.dropboxfs.offline") == b"present 2/2 files"
    m.unmount()

    # Moved again while nothing is mounted: the remount's catch-up shows the move, and the pin follows.
    fake.move("/Projects/Keep", "/Kept")
    m2 = mount_factory(fake, mountpoint=m.path)
    listed = wait_present(binary, m2, "/Kept")
    assert [p["path"] for p in listed] == ["/Kept"], listed
    known = hashes(fake)
    assert {known["/Kept" + n[len("/Keep"):]] for n in names} <= cached(tmp_path)


def test_a_request_read_twice_is_carried_out_once(binary, fake_factory, mount_factory):
    """A pin request is a read of an attribute named with a nonce; reading it again (getfattr
    reads a name twice: its size, then its value) answers the same and does nothing more. A bare
    name is refused, not carried out."""
    fake = fake_factory()
    keep_files(fake)
    m = mount_factory(fake)
    wait_for_fill(m.path, fake)
    keep = f"{m.path}/Keep"
    assert os.getxattr(keep, "user.dropboxfs.pin.0123abcd").decode().startswith("pinned /Keep: 3 files")
    wait_present(binary, m, "/Keep")
    for _ in range(2):
        assert os.getxattr(keep, "user.dropboxfs.unpin.4567ef01") == b"unpinned /Keep"
    assert pins(binary, m.path)[m.path] == []
    # The first name again: already answered, so it pins nothing.
    assert os.getxattr(keep, "user.dropboxfs.pin.0123abcd").decode().startswith("pinned /Keep")
    assert pins(binary, m.path)[m.path] == []
    bare = os.getxattr(keep, "user.dropboxfs.pin").decode()
    assert bare.startswith("refused: ") and "dropboxfs pin" in bare, bare
    assert pins(binary, m.path)[m.path] == []
    r = run(binary, "pin", keep)
    assert r.returncode == 0 and r.stdout.decode().startswith("pinned /Keep"), r
    assert [p["path"] for p in pins(binary, m.path)[m.path]] == ["/Keep"]


def test_eviction_never_drops_a_pinned_file_and_does_once_unpinned(binary, fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    fake.add_file("/Keep/one.bin", size=300 * KiB, seed=1)
    fake.add_file("/Keep/two.bin", size=300 * KiB, seed=2)
    for i in range(4):
        fake.add_file(f"/Other/x{i}.bin", size=300 * KiB, seed=10 + i)
        fake.add_file(f"/More/y{i}.bin", size=300 * KiB, seed=20 + i)
    m = mount_factory(fake, "--cache-size", "1M")
    wait_for_fill(m.path, fake)
    assert run(binary, "pin", f"{m.path}/Keep").returncode == 0
    wait_present(binary, m, "/Keep")
    known = hashes(fake)
    pinned = {known["/Keep/one.bin"], known["/Keep/two.bin"]}
    others = [f"{m.path}/Other/x{i}.bin" for i in range(4)]
    r = run("sha256sum", *others)
    assert r.returncode == 0, r.stderr
    assert pinned <= cached(tmp_path)
    assert sum(os.path.getsize(content_folder(tmp_path) / n) for n in cached(tmp_path)) <= 1 << 20

    r = run(binary, "unpin", f"{m.path}/Keep")
    assert r.returncode == 0 and r.stdout.decode().strip() == "unpinned /Keep", r
    assert pins(binary, m.path)[m.path] == []
    with pytest.raises(OSError) as failure:
        os.getxattr(f"{m.path}/Keep/one.bin", "user.dropboxfs.offline")
    assert failure.value.errno == errno.ENODATA
    r = run("sha256sum", *[f"{m.path}/More/y{i}.bin" for i in range(4)])
    assert r.returncode == 0, r.stderr
    # The least recently used entries are the formerly pinned ones: they go first now.
    wait_until(lambda: not pinned <= cached(tmp_path), timeout=10, interval=0.1, message="an unpinned entry evicted")


def test_a_pin_that_does_not_fit_is_refused_with_the_numbers(binary, fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    fake.add_file("/Big/one.bin", size=700 * KiB, seed=1)
    fake.add_file("/Big/two.bin", size=700 * KiB, seed=2)
    m = mount_factory(fake, "--cache-size", "1M")
    wait_for_fill(m.path, fake)
    r = run(binary, "pin", f"{m.path}/Big")
    assert r.returncode == 1, r
    err = r.stderr.decode()
    assert "/Big does not fit: it needs 1.4 MiB (1433600 bytes)" in err, err
    assert "the disk cache holds at most 1.0 MiB (1048576 bytes)" in err, err
    assert pins(binary, m.path)[m.path] == []
    r = run(binary, "pin", str(tmp_path))
    assert r.returncode == 3 and b"is not on a dropboxfs mount of yours" in r.stderr, r


def test_without_a_disk_cache_a_pin_is_refused(binary, fake_factory, mount_factory):
    fake = fake_factory()
    keep_files(fake)
    m = mount_factory(fake, "--no-disk-cache")
    wait_for_fill(m.path, fake)
    r = run(binary, "pin", f"{m.path}/Keep")
    assert r.returncode == 1, r
    assert b"this mount has none" in r.stderr and b"--no-disk-cache" in r.stderr, r


def test_a_pin_made_offline_is_downloaded_when_dropbox_is_back(binary, fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    names = keep_files(fake)
    proxy = SwitchableProxy(fake.url)
    try:
        m = mount_factory(proxy.url)
        wait_for_fill(m.path, fake)
        proxy.down()
        wait_until(lambda: "offline_since" in os.getxattr(m.path, "user.dropboxfs.status").decode(),
                   timeout=20, interval=0.1, message="offline")
        r = run(binary, "pin", f"{m.path}/Keep")
        assert r.returncode == 0, r.stderr
        assert pins(binary, m.path)[m.path][0]["state"] == "offline"
        assert os.getxattr(f"{m.path}/Keep/a.bin", "user.dropboxfs.offline") == b"pending"
        proxy.up()
        wait_present(binary, m, "/Keep")
        known = hashes(fake)
        assert {known[n] for n in names} <= cached(tmp_path)
    finally:
        proxy.down()


def test_without_the_background_listing_the_keeper_lists_the_pinned_folders(binary, fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    names = keep_files(fake)
    m = mount_factory(fake, "--no-prefetch")
    assert os.path.isdir(f"{m.path}/Keep")  # the root is listed; nothing below /Keep is
    r = run(binary, "pin", f"{m.path}/Keep")
    assert r.returncode == 0, r.stderr
    assert "still being listed" in r.stdout.decode(), r.stdout
    wait_present(binary, m, "/Keep")
    known = hashes(fake)
    assert {known[n] for n in names} <= cached(tmp_path)


def test_a_pin_larger_than_the_free_disk_space_is_refused_with_the_numbers(binary, fake_factory, mount_factory, tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    r = run("mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", small)
    assert r.returncode == 0, r.stderr
    try:
        fake = fake_factory()
        fake.add_file("/Big/one.bin", size=1536 * KiB, seed=1)
        fake.add_file("/Big/two.bin", size=1536 * KiB, seed=2)
        m = mount_factory(fake, "--cache-dir", str(small / "cache"))
        wait_for_fill(m.path, fake)
        r = run(binary, "pin", f"{m.path}/Big")
        assert r.returncode == 1, r
        err = r.stderr.decode()
        assert "/Big does not fit: 3.0 MiB (3145728 bytes) are still to download, and the disk of the cache folder has " in err, err
        assert " free" in err and pins(binary, m.path)[m.path] == []
        m.unmount()
    finally:
        run("umount", "-l", small)
