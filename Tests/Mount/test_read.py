"""File reads through the real mount: sha256sum of every interesting size equals the
source, reads at random offsets (dd and os.pread) equal the source, eight parallel readers agree,
a file changed on Dropbox while it is open never yields mixed bytes, export-only documents read as
Dropbox's export of them, opening for writing fails with EROFS, and the user.dropbox.* extended attributes
equal the fake's tree."""

import errno
import hashlib
import os
import random
import shutil
import threading

import pytest

from helpers import c_locale, run, wait_until

MiB = 1 << 20
SIZES = [0, 1, 4 * MiB - 1, 4 * MiB, 4 * MiB + 1, 100 * MiB]


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def read_file(path, chunk=MiB):
    with open(path, "rb", buffering=0) as f:
        parts = []
        while True:
            block = f.read(chunk)
            if not block:
                return b"".join(parts)
            parts.append(block)


@pytest.fixture
def sized(fake_factory, mount_factory):
    fake = fake_factory()
    for index, size in enumerate(SIZES):
        fake.add_file(f"/sizes/f{size}.bin", size=size, seed=index + 1)
    return fake, mount_factory(fake)


def test_sha256sum_through_the_mount_equals_the_source(sized):
    fake, m = sized
    paths = [f"{m.path}/sizes/f{size}.bin" for size in SIZES]
    r = run("sha256sum", *paths, timeout=300)
    assert r.returncode == 0, r.stderr
    got = dict(reversed(line.split(None, 1)) for line in r.stdout.decode().splitlines())
    for size, path in zip(SIZES, paths):
        source = fake.content(f"/sizes/f{size}.bin")
        assert len(source) == size
        assert got[path] == sha256(source), f"size {size}"
        assert os.stat(path).st_size == size


def test_reads_at_random_offsets_equal_the_source(fake_factory, mount_factory):
    fake = fake_factory()
    size = 30 * MiB + 12345
    fake.add_file("/random.bin", size=size, seed=77)
    source = fake.content("/random.bin")
    m = mount_factory(fake)
    path = f"{m.path}/random.bin"
    rng = random.Random(4)
    for _ in range(8):
        skip = rng.randrange(0, size + 1000)
        count = rng.randrange(1, 3 * MiB)
        r = run("dd", f"if={path}", "of=/dev/stdout", "bs=64K", f"skip={skip}", f"count={count}",
                "iflag=skip_bytes,count_bytes", "status=none", timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout == source[skip:skip + count], f"dd skip={skip} count={count}"
    fd = os.open(path, os.O_RDONLY)
    try:
        for _ in range(300):
            offset = rng.randrange(0, size + 1000)
            length = rng.choice([1, 17, 4096, 65536, 300000, 2 * MiB])
            assert os.pread(fd, length, offset) == source[offset:offset + length], f"pread {offset}+{length}"
    finally:
        os.close(fd)


def test_eight_parallel_readers_of_one_and_of_different_files(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/shared.bin", size=40 * MiB + 3, seed=5)
    for i in range(8):
        fake.add_file(f"/own/{i}.bin", size=9 * MiB + i * 1000, seed=100 + i)
    m = mount_factory(fake)
    expected = {"/shared.bin": sha256(fake.content("/shared.bin"))}
    for i in range(8):
        expected[f"/own/{i}.bin"] = sha256(fake.content(f"/own/{i}.bin"))
    for paths in (["/shared.bin"] * 8, [f"/own/{i}.bin" for i in range(8)]):
        results, errors = {}, []

        def reader(index, name):
            try:
                results[index] = sha256(read_file(m.path + name, chunk=256 * 1024 + index))
            except OSError as e:
                errors.append(e)

        threads = [threading.Thread(target=reader, args=(i, name)) for i, name in enumerate(paths)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not errors
        assert [results[i] for i in range(8)] == [expected[name] for name in paths]


def test_a_file_changed_while_open_never_mixes_versions(fake_factory, mount_factory):
    fake = fake_factory()
    size = 24 * MiB
    fake.add_file("/changing.bin", size=size, seed=1)
    old = fake.content("/changing.bin")
    m = mount_factory(fake)
    path = f"{m.path}/changing.bin"
    with open(path, "rb", buffering=0) as f:
        first = f.read(size // 2)
        fake.add_file("/changing.bin", size=size, seed=2)
        new = fake.content("/changing.bin")
        assert new != old
        try:
            rest = b""
            while True:
                block = f.read(MiB)
                if not block:
                    break
                rest += block
        except OSError as e:
            assert e.errno in (errno.ESTALE, errno.EIO), e
        else:
            assert first + rest == old
        # A new open, once the change is seen, reads the new version even while the old one is
        # still open (the kernel's page cache must not hand it the old pages).
        wait_until(lambda: sha256(read_file(path)) == sha256(new), timeout=30,
                   message="the new version to be readable")
        assert os.pread(f.fileno(), MiB, 0) == old[:MiB]


def exported(fake, path):
    r = fake.download(path, route="files/export")
    assert r.status == 200, r.text()
    return r.body


def test_export_only_documents_read_as_their_export(fake_factory, mount_factory, tmp_path):
    """An export-only document (Paper, Google Docs) reads as Dropbox's export of it, whole and
    byte-exact with cat and cp, whatever size the listing gave; stat then shows the export's size;
    a new revision reads as its own export (docs/SEMANTICS.md, "Export-only documents")."""
    fake = fake_factory()
    fake.add_file("/Notes/Plan.paper", export_as="markdown")
    fake.add_file("/Notes/Sheet.gsheet", export_as="xlsx", size=3)
    fake.add_file("/Notes/plain.txt", b"plain\n")
    m = mount_factory(fake)
    assert sorted(os.listdir(f"{m.path}/Notes")) == ["Plan.paper", "Sheet.gsheet", "plain.txt"]
    want = exported(fake, "/Notes/Plan.paper")
    assert len(want) > 0
    r = run("cat", f"{m.path}/Notes/Plan.paper", env=c_locale())
    assert r.returncode == 0, r.stderr
    assert r.stdout == want
    assert os.stat(f"{m.path}/Notes/Plan.paper").st_size == len(want)
    # The listed size (3 bytes) must not cut the export short.
    copy = tmp_path / "Sheet.xlsx"
    assert run("cp", f"{m.path}/Notes/Sheet.gsheet", str(copy)).returncode == 0
    assert copy.read_bytes() == exported(fake, "/Notes/Sheet.gsheet")
    assert open(f"{m.path}/Notes/plain.txt", "rb").read() == b"plain\n"
    assert fake.stats()["routes"].get("files/download", 0) == 1
    assert fake.stats()["routes"].get("files/export", 0) >= 2

    # A new revision: the watcher sees it, the name leads to a new inode, read as its own export.
    fake.add_file("/Notes/Plan.paper", export_as="markdown", size=4321)
    newer = exported(fake, "/Notes/Plan.paper")
    assert newer != want
    wait_until(lambda: read_file(f"{m.path}/Notes/Plan.paper") == newer, timeout=30,
               message="the new revision's export")


def test_opening_for_writing_fails_with_erofs(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/w.txt", b"data\n")
    m = mount_factory(fake)
    for flags in (os.O_WRONLY, os.O_RDWR, os.O_RDONLY | os.O_TRUNC, os.O_WRONLY | os.O_APPEND):
        with pytest.raises(OSError) as e:
            os.close(os.open(f"{m.path}/w.txt", flags))
        assert e.value.errno == errno.EROFS, flags
    assert open(f"{m.path}/w.txt", "rb").read() == b"data\n"


def test_extended_attributes_equal_the_fake_tree(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/x/a.txt", b"alpha\n")
    fake.add_file("/x/big.bin", size=9 * MiB, seed=3)
    fake.add_file("/x/empty", b"")
    m = mount_factory(fake)
    entries = {e["path_display"]: e for e in fake.tree()}
    for name in ("/x/a.txt", "/x/big.bin", "/x/empty"):
        entry, path = entries[name], m.path + name
        assert sorted(os.listxattr(path)) == ["user.dropbox.content_hash", "user.dropbox.id", "user.dropbox.rev"]
        assert os.getxattr(path, "user.dropbox.id").decode() == entry["id"]
        assert os.getxattr(path, "user.dropbox.rev").decode() == entry["rev"]
        assert os.getxattr(path, "user.dropbox.content_hash").decode() == entry["content_hash"]
    assert os.listxattr(m.path + "/x") == ["user.dropbox.id"]
    assert os.getxattr(m.path + "/x", "user.dropbox.id").decode() == entries["/x"]["id"]
    with pytest.raises(OSError) as e:
        os.getxattr(m.path + "/x/a.txt", "user.other")
    assert e.value.errno == errno.ENODATA
    if shutil.which("getfattr"):
        r = run("getfattr", "-d", m.path + "/x/a.txt")
        assert r.returncode == 0
        assert f'user.dropbox.rev="{entries["/x/a.txt"]["rev"]}"'.encode() in r.stdout
