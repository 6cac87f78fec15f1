"""Reads through the real mount under download faults, and the disk content cache across remounts:
a fault during a download gives the right bytes after a retry or EIO, never wrong
bytes; a file read once is read again after a remount without any download; the cache folder is
private and its entries are named by content_hash."""

import hashlib
import os
import stat

import pytest

from helpers import c_locale, poll_assert, run

MiB = 1 << 20


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def downloads(fake):
    return fake.stats()["routes"].get("files/download", 0)


FAULTS = [
    ("reset", {}),
    ("truncate", {}),
    ("503", {}),
    ("stall", {"stall_seconds": 1}),
    ("500", {}),
]


@pytest.mark.parametrize("size", [3 * MiB, 40 * MiB])
@pytest.mark.parametrize("kind,params", FAULTS, ids=[f[0] for f in FAULTS])
def test_a_fault_during_a_download_is_retried(fake_factory, mount_factory, tmp_path, kind, params, size):
    fake = fake_factory()
    fake.add_file("/f.bin", size=size, seed=size % 97)
    expected = sha256(fake.content("/f.bin"))
    m = mount_factory(fake, "--no-disk-cache")
    fake.add_fault("files/download", kind, count=2, after=1, **params)
    r = run("sha256sum", f"{m.path}/f.bin", timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0].decode() == expected
    assert sum(rule["fired"] for rule in fake.faults()) >= 1


def test_a_download_that_keeps_failing_is_an_io_error(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/broken.bin", size=2 * MiB, seed=8)
    m = mount_factory(fake, "--no-disk-cache")
    fake.add_fault("files/download", "503", count=0)
    r = run("cat", f"{m.path}/broken.bin", env=c_locale(), timeout=300)
    assert r.returncode != 0
    assert b"Input/output error" in r.stderr
    assert r.stdout == b""  # small files are fetched whole: no byte before the failure
    fake.clear_faults()
    assert hashlib.sha256(open(f"{m.path}/broken.bin", "rb").read()).hexdigest() == sha256(
        fake.content("/broken.bin"))


def test_a_second_read_after_a_remount_comes_from_the_disk_cache(fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    fake.add_file("/docs/photo.jpg", size=6 * MiB + 5, seed=1)
    fake.add_file("/docs/video.mp4", size=50 * MiB + 7, seed=2)
    names = ["/docs/photo.jpg", "/docs/video.mp4"]
    expected = {name: sha256(fake.content(name)) for name in names}
    cache = tmp_path / "cache"
    m = mount_factory(fake, "--cache-dir", str(cache))
    r = run("sha256sum", *[m.path + name for name in names], timeout=300)
    assert r.returncode == 0, r.stderr
    assert downloads(fake) > 0
    m.unmount()

    content = cache / "content"
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(content).st_mode) == 0o700
    hashes = {e["path_display"]: e["content_hash"] for e in fake.tree()}
    assert sorted(os.listdir(content)) == sorted(hashes[name] for name in names)
    for entry in os.listdir(content):
        assert stat.S_IMODE(os.stat(content / entry).st_mode) == 0o600

    fake.reset_stats()
    again = mount_factory(fake, "--cache-dir", str(cache))
    r = run("sha256sum", *[again.path + name for name in names], timeout=300)
    assert r.returncode == 0, r.stderr
    got = {line.split()[1].decode()[len(again.path):]: line.split()[0].decode() for line in r.stdout.splitlines()}
    assert got == expected
    assert downloads(fake) == 0


def test_no_disk_cache_downloads_again_after_a_remount(fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    fake.add_file("/a.bin", size=2 * MiB, seed=4)
    cache = tmp_path / "cache"
    m = mount_factory(fake, "--no-disk-cache", "--cache-dir", str(cache))
    assert run("cat", f"{m.path}/a.bin").returncode == 0
    m.unmount()
    assert not (cache / "content").exists()
    fake.reset_stats()
    again = mount_factory(fake, "--no-disk-cache", "--cache-dir", str(cache))
    assert run("cat", f"{again.path}/a.bin").returncode == 0
    assert downloads(fake) >= 1


def test_the_cache_size_cap_keeps_the_most_recently_used_files(fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    for name in "abcd":
        fake.add_file(f"/{name}.bin", size=3 * MiB, seed=ord(name))
    hashes = {e["path_display"]: e["content_hash"] for e in fake.tree()}
    cache = tmp_path / "cache"
    m = mount_factory(fake, "--cache-dir", str(cache), "--cache-size", "10M")
    # cat returns once its bytes are read; the file's cache entry is committed just after. Each
    # read waits for the entry before the next: while a, b and c are all still being written, their
    # reservations fill the cap and d is (rightly) not cached, which is not what this test is about.
    for name in "abcad":
        assert run("cat", f"{m.path}/{name}.bin").returncode == 0
        entry = hashes[f"/{name}.bin"]

        def committed():
            assert entry in os.listdir(cache / "content")

        poll_assert(committed, what=f"the cache entry of {name}.bin")
    expected = sorted(hashes[f"/{n}.bin"] for n in "acd")
    assert sorted(os.listdir(cache / "content")) == expected
