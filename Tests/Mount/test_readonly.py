"""Every mutating operation fails with EROFS ("Read-only file system"), on existing and new names."""

import os

import pytest

from helpers import c_locale, mount_info, run, sh

EROFS = "Read-only file system"


@pytest.fixture
def ro_mount(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/docs/report.txt", b"hello world\n")
    fake.add_file("/docs/sub/inner.txt", b"inner\n")
    fake.add_file("/docs/link", b"report.txt", symlink_target="report.txt")
    fake.mkdir("/empty")
    m = mount_factory(fake)
    return m


def snapshot(m):
    r = run("find", m.path, "-printf", r"%y %s %m %P\0")
    assert r.returncode == 0
    return r.stdout


CASES = [
    # (description, argv with {m} for the mount point)
    ("touch existing file", ["touch", "{m}/docs/report.txt"]),
    ("touch new file", ["touch", "{m}/docs/new.txt"]),
    ("touch new file at root", ["touch", "{m}/new.txt"]),
    ("touch existing folder", ["touch", "{m}/docs"]),
    ("mkdir new", ["mkdir", "{m}/newdir"]),
    ("mkdir nested new", ["mkdir", "{m}/docs/sub/newdir"]),
    ("rm file", ["rm", "-f", "{m}/docs/report.txt"]),
    ("rm symlink", ["rm", "-f", "{m}/docs/link"]),
    ("rmdir empty folder", ["rmdir", "{m}/empty"]),
    ("rm -r folder", ["rm", "-rf", "{m}/docs/sub"]),
    ("mv file", ["mv", "{m}/docs/report.txt", "{m}/docs/renamed.txt"]),
    ("mv file over file", ["mv", "-f", "{m}/docs/report.txt", "{m}/docs/sub/inner.txt"]),
    ("mv folder", ["mv", "{m}/docs/sub", "{m}/sub2"]),
    ("chmod file", ["chmod", "644", "{m}/docs/report.txt"]),
    ("chmod folder", ["chmod", "755", "{m}/docs"]),
    ("ln -s new name", ["ln", "-s", "target", "{m}/docs/newlink"]),
    ("ln -sf over existing", ["ln", "-sf", "target", "{m}/docs/report.txt"]),
    ("ln -s over existing symlink", ["ln", "-sfn", "target", "{m}/docs/link"]),
    ("hard link", ["ln", "{m}/docs/report.txt", "{m}/docs/hard"]),
    ("truncate existing", ["truncate", "-s", "0", "{m}/docs/report.txt"]),
    ("touch -d existing", ["touch", "-d", "2001-01-01", "{m}/docs/report.txt"]),
]


@pytest.mark.parametrize("description,argv", CASES, ids=[c[0] for c in CASES])
def test_mutating_commands_fail_with_erofs(ro_mount, description, argv):
    m = ro_mount
    before = snapshot(m)
    r = run(*[a.format(m=m.path) for a in argv], env=c_locale())
    assert r.returncode != 0, description
    assert EROFS in r.stderr.decode(errors="replace"), (description, r.stderr)
    assert snapshot(m) == before


def test_mkdir_of_an_existing_name_is_eexist(ro_mount):
    """The kernel checks for an existing name before the read-only check (as on any ro filesystem),
    so mkdir of an existing name says "File exists", never creating anything."""
    m = ro_mount
    for name in ("docs", "docs/report.txt"):
        r = run("mkdir", f"{m.path}/{name}", env=c_locale())
        assert r.returncode == 1 and b"File exists" in r.stderr, r.stderr
    r = run("mkdir", "-p", f"{m.path}/docs/sub", env=c_locale())
    assert r.returncode == 0, "mkdir -p of an existing folder is a no-op"
    r = run("mkdir", "-p", f"{m.path}/docs/sub/new/deeper", env=c_locale())
    assert r.returncode == 1 and EROFS.encode() in r.stderr


@pytest.mark.parametrize("target", ["docs/report.txt", "docs/new.txt", "new.txt"])
@pytest.mark.parametrize("op", [">", ">>"])
def test_shell_redirects_fail_with_erofs(ro_mount, target, op):
    m = ro_mount
    r = sh(f"echo data {op} '{m.path}/{target}'", env=c_locale())
    assert r.returncode != 0
    assert EROFS in r.stderr.decode(errors="replace"), r.stderr
    assert run("cat", f"{m.path}/docs/report.txt").stdout == b"hello world\n"


def test_system_calls_report_erofs(ro_mount):
    """The errno itself, through Python's os module (open for writing, create, unlink, rename...)."""
    import errno

    m = ro_mount.path
    calls = [
        lambda: os.open(f"{m}/docs/report.txt", os.O_WRONLY),
        lambda: os.open(f"{m}/docs/report.txt", os.O_RDWR),
        lambda: os.open(f"{m}/docs/fresh", os.O_WRONLY | os.O_CREAT, 0o644),
        lambda: os.mkdir(f"{m}/fresh"),
        lambda: os.unlink(f"{m}/docs/report.txt"),
        lambda: os.rmdir(f"{m}/empty"),
        lambda: os.rename(f"{m}/docs/report.txt", f"{m}/docs/x"),
        lambda: os.symlink("x", f"{m}/docs/sym"),
        lambda: os.link(f"{m}/docs/report.txt", f"{m}/docs/hard"),
        lambda: os.chmod(f"{m}/docs/report.txt", 0o600),
        lambda: os.chown(f"{m}/docs/report.txt", 1, 1),
        lambda: os.utime(f"{m}/docs/report.txt", (0, 0)),
        lambda: os.truncate(f"{m}/docs/report.txt", 0),
        lambda: os.mknod(f"{m}/docs/fifo", 0o600 | 0o010000),
        lambda: os.setxattr(f"{m}/docs/report.txt", "user.test", b"x"),
    ]
    for i, call in enumerate(calls):
        with pytest.raises(OSError) as info:
            call()
        assert info.value.errno == errno.EROFS, (i, info.value)


def test_mount_is_read_only_and_reads_still_work(ro_mount):
    m = ro_mount
    fstype, options, super_options = mount_info(m.path)
    assert fstype == "fuse.dropboxfs"
    assert "ro" in options
    assert run("cat", f"{m.path}/docs/sub/inner.txt").stdout == b"inner\n"
    # Access checks agree: nothing is writable, files are readable, folders searchable.
    assert not os.access(f"{m.path}/docs/report.txt", os.W_OK)
    assert not os.access(f"{m.path}/docs", os.W_OK)
    assert os.access(f"{m.path}/docs/report.txt", os.R_OK)
    assert os.access(f"{m.path}/docs", os.R_OK | os.X_OK)
