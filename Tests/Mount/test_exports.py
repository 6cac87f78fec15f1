"""Export-only documents shared and bounded (docs/SEMANTICS.md, "Export-only documents"): any number
of opens of one document at one revision make one files/export request, at once or one after
another; the handles share one copy of the bytes, held within --read-buffer-memory, and an export
that does not fit is read from an unnamed file in the disk cache folder, which leaves nothing
behind."""

import hashlib
import os

MiB = 1 << 20


def exports(fake):
    return fake.stats()["routes"].get("files/export", 0)


def exported(fake, path):
    r = fake.download(path, route="files/export")
    assert r.status == 200, r.text()
    return r.body


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def read_whole(fd):
    parts = []
    offset = 0
    while True:
        block = os.pread(fd, MiB, offset)
        if not block:
            return b"".join(parts)
        parts.append(block)
        offset += len(block)


def test_a_thousand_opens_of_one_document_export_it_once(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/Notes/Plan.paper", export_as="markdown", export_size=300_000)
    m = mount_factory(fake)
    want = exported(fake, "/Notes/Plan.paper")
    assert len(want) == 300_000
    before = exports(fake)
    for i in range(1000):
        fd = os.open(f"{m.path}/Notes/Plan.paper", os.O_RDONLY)
        try:
            at = (i * 997) % len(want)
            assert os.pread(fd, 64, at) == want[at:at + 64]
        finally:
            os.close(fd)
    assert exports(fake) - before == 1, "one export for 1000 opens one after another"


def test_handles_open_at_once_share_one_copy_within_the_memory_cap(fake_factory, mount_factory):
    """200 handles on a 4 MiB export: one request, and the daemon grows by one copy, not 200
    (each handle kept its own copy before: 800 MiB)."""
    fake = fake_factory()
    fake.add_file("/Notes/Big.paper", export_as="markdown", export_size=4 * MiB)
    m = mount_factory(fake, "--read-buffer-memory", "32M")
    want = exported(fake, "/Notes/Big.paper")
    pid = m.process.pid
    os.listdir(f"{m.path}/Notes")
    base = rss_bytes(pid)
    before = exports(fake)
    fds = [os.open(f"{m.path}/Notes/Big.paper", os.O_RDONLY) for _ in range(200)]
    try:
        for fd in fds[:5] + fds[-5:]:
            assert hashlib.sha256(read_whole(fd)).digest() == hashlib.sha256(want).digest()
        for fd in fds:
            assert os.pread(fd, 16, 4 * MiB - 16) == want[-16:]
        grown = rss_bytes(pid) - base
        assert exports(fake) - before == 1
        # The cap is 32 MiB; the export is 4 MiB. Allow the cap plus slack for the allocator and
        # the transfer's own buffers, far below 200 copies.
        assert grown < 32 * MiB + 32 * MiB, f"the daemon grew by {grown / MiB:.0f} MiB"
    finally:
        for fd in fds:
            os.close(fd)


def test_an_export_larger_than_the_cap_reads_from_an_unnamed_file(fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    fake.add_file("/Notes/Huge.paper", export_as="markdown", export_size=24 * MiB + 5)
    m = mount_factory(fake, "--read-buffer-memory", "8M")
    want = exported(fake, "/Notes/Huge.paper")
    before = exports(fake)
    fds = [os.open(f"{m.path}/Notes/Huge.paper", os.O_RDONLY) for _ in range(3)]
    try:
        for fd in fds:
            assert hashlib.sha256(read_whole(fd)).digest() == hashlib.sha256(want).digest()
        assert exports(fake) - before == 1
        cache = tmp_path / "xdg-cache"
        named = [p for p in cache.rglob("*") if p.is_file() and ".export" in p.name]
        assert named == [], "a spilled export has no name in the cache folder"
    finally:
        for fd in fds:
            os.close(fd)
    # Closed, the spilled export is gone: the next open exports again, and reads the same bytes.
    fd = os.open(f"{m.path}/Notes/Huge.paper", os.O_RDONLY)
    try:
        assert os.pread(fd, 100, 24 * MiB - 95) == want[-100:]
    finally:
        os.close(fd)
    assert exports(fake) - before == 2, "a spilled export lives while a handle is open"
