"""stat(1), readlink(1) and the errors of path resolution on the mount."""

import json
import os
import time
import urllib.request

from helpers import c_locale, expected_entries, run

CLIENT_MODIFIED = 1262304000 + 12345     # 2010-01-01 plus a bit
SERVER_MODIFIED = 1600000000


def api(fake, route, arg):
    """Calls the fake's Dropbox API directly (to read facts the control API does not show)."""
    req = urllib.request.Request(
        f"{fake.url}/2/{route}", data=json.dumps(arg).encode(), method="POST",
        headers={"Authorization": "Bearer test-token", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def to_epoch(text):
    return int(time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone)


def stat_fields(path, fmt="%F|%s|%a|%U|%h|%Y", follow=False):
    r = run("stat", *(["-L"] if follow else []), "-c", fmt, path, env=c_locale())
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r.stdout.decode().rstrip("\n").split("|")


def small_account(fake):
    fake.add_file("/docs/report.txt", b"hello world\n", client_modified=CLIENT_MODIFIED,
                  server_modified=SERVER_MODIFIED)
    fake.add_file("/docs/deeper/still/data.bin", size=70000, seed=3, client_modified=CLIENT_MODIFIED + 1,
                  server_modified=SERVER_MODIFIED)
    fake.add_file("/docs/empty", b"", client_modified=CLIENT_MODIFIED + 2, server_modified=SERVER_MODIFIED)
    fake.add_file("/docs/link", b"report.txt", symlink_target="report.txt",
                  client_modified=CLIENT_MODIFIED + 3, server_modified=SERVER_MODIFIED)
    fake.add_file("/docs/über link", symlink_target="/ünïcödé/target ☕", data="/ünïcödé/target ☕",
                  client_modified=CLIENT_MODIFIED + 4, server_modified=SERVER_MODIFIED)
    fake.mkdir("/empty folder")


def test_stat_of_files_folders_and_symlinks(fake_factory, mount_factory):
    fake = fake_factory()
    small_account(fake)
    m = mount_factory(fake)
    d = f"{m.path}/docs"

    assert stat_fields(f"{d}/report.txt") == ["regular file", "12", "444", "root", "1", str(CLIENT_MODIFIED)]
    assert stat_fields(f"{d}/deeper/still/data.bin") == [
        "regular file", "70000", "444", "root", "1", str(CLIENT_MODIFIED + 1)]
    assert stat_fields(f"{d}/empty") == ["regular empty file", "0", "444", "root", "1", str(CLIENT_MODIFIED + 2)]
    for folder in (m.path, d, f"{d}/deeper", f"{d}/deeper/still", f"{m.path}/empty folder"):
        kind, size, mode, owner, links, _ = stat_fields(folder)
        assert (kind, mode, owner, links) == ("directory", "555", "root", "1"), folder
    # Symlinks are symlinks (not followed by stat), sized by their target, dated client_modified.
    kind, size, _mode, owner, links, mtime = stat_fields(f"{d}/link")
    assert (kind, size, owner, links, mtime) == ("symbolic link", "10", "root", "1", str(CLIENT_MODIFIED + 3))
    kind, size, _mode, _owner, _links, _ = stat_fields(f"{d}/über link")
    assert (kind, size) == ("symbolic link", str(len("/ünïcödé/target ☕".encode())))
    assert run("readlink", f"{d}/link").stdout == b"report.txt\n"
    assert run("readlink", f"{d}/über link").stdout == "/ünïcödé/target ☕\n".encode()
    # A relative link inside the mount resolves (stat -L follows it to the file).
    assert stat_fields(f"{d}/link", "%F|%s", follow=True) == ["regular file", "12"]
    # The owner is the mounting user, uid and gid included.
    assert stat_fields(f"{d}/report.txt", "%u|%g") == [str(os.getuid()), str(os.getgid())]
    # st_blocks = ceil(size / 512).
    assert stat_fields(f"{d}/deeper/still/data.bin", "%b|%B") == [str((70000 + 511) // 512), "512"]
    assert stat_fields(f"{d}/empty", "%b") == ["0"]


def test_folder_times_are_stable(fake_factory, mount_factory):
    fake = fake_factory()
    small_account(fake)
    m = mount_factory(fake, "--attr-timeout", "0")
    first = [stat_fields(p, "%Y")[0] for p in (m.path, f"{m.path}/docs", f"{m.path}/docs/deeper")]
    again = [stat_fields(p, "%Y")[0] for p in (m.path, f"{m.path}/docs", f"{m.path}/docs/deeper")]
    assert first == again
    assert all(int(t) <= time.time() + 1 for t in first)


def test_mtime_is_client_modified_for_synthetic_files(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "500")
    m = mount_factory(fake)
    listing = api(fake, "files/list_folder", {"path": "/Special"})["entries"]
    files = [e for e in listing if e[".tag"] == "file"]
    assert len(files) >= 4
    for e in files:
        fields = stat_fields(f"{m.path}/Special/{e['name']}", "%Y|%s|%F")
        assert int(fields[0]) == to_epoch(e["client_modified"]), e["name"]
        if "symlink_info" in e:
            assert fields[2] == "symbolic link"
        else:
            assert fields[2] in ("regular file", "regular empty file")
            assert int(fields[1]) == e["size"]


def test_stat_every_entry_matches_tree(fake_factory, mount_factory):
    """stat of every visible entry (via find -printf, which lstat()s) gives type, mode and owner."""
    fake = fake_factory("--synthetic", "2000", "--evil-names")
    entries = expected_entries(fake.tree(hashes=False))
    m = mount_factory(fake)
    r = run("find", m.path, "-printf", r"%y %m %u %n %s %P\0", timeout=60)
    assert r.returncode == 0
    seen = 0
    for rec in r.stdout.split(b"\0")[:-1]:
        kind, mode, user, links, size, rel = rec.split(b" ", 5)
        e = entries[rel]
        assert kind.decode() == e.kind
        assert user == b"root"
        assert links == b"1"
        if e.kind == "f":
            assert mode == b"444" and int(size) == e.size
        elif e.kind == "d":
            assert mode == b"555"
        seen += 1
    assert seen == len(entries)


def test_missing_names_and_paths_through_files(fake_factory, mount_factory):
    fake = fake_factory()
    small_account(fake)
    m = mount_factory(fake)
    cases = [
        (f"{m.path}/nope", "No such file or directory"),
        (f"{m.path}/docs/nope.txt", "No such file or directory"),
        (f"{m.path}/nope/deeper", "No such file or directory"),
        (f"{m.path}/docs/REPORT.TXT", "No such file or directory"),   # names match byte for byte
        (f"{m.path}/docs/report.txt/x", "Not a directory"),
        (f"{m.path}/docs/report.txt/", "Not a directory"),
        (f"{m.path}/docs/empty/x/y", "Not a directory"),
    ]
    for path, message in cases:
        r = run("stat", path, env=c_locale())
        assert r.returncode == 1, path
        assert message in r.stderr.decode(), (path, r.stderr)
    r = run("ls", f"{m.path}/nope", env=c_locale())
    assert r.returncode == 2 and b"No such file or directory" in r.stderr
    r = run("cat", f"{m.path}/docs/report.txt/x", env=c_locale())
    assert r.returncode == 1 and b"Not a directory" in r.stderr
    r = run("ls", f"{m.path}/docs/report.txt/", env=c_locale())
    assert r.returncode == 2 and b"Not a directory" in r.stderr
    # A dangling symlink: lstat works, stat -L does not.
    fake2 = fake_factory("--synthetic", "200")
    m2 = mount_factory(fake2)
    assert stat_fields(f"{m2.path}/Special/dangling link", "%F")[0] == "symbolic link"
    r = run("stat", "-L", f"{m2.path}/Special/dangling link", env=c_locale())
    assert r.returncode == 1 and b"No such file or directory" in r.stderr
    # Names are bytes: the NFC spelling exists in one folder and the NFD one in another, and a
    # lookup with the other normalisation (or case) finds nothing.
    assert run("stat", f"{m2.path}/Unicode/NFC/caf\u00e9.txt").returncode == 0
    assert run("stat", f"{m2.path}/Unicode/NFD/cafe\u0301.txt").returncode == 0
    for path in ("Unicode/NFC/cafe\u0301.txt", "Unicode/NFD/caf\u00e9.txt", "Unicode/NFC/CAF\u00c9.txt",
                 "special/notes.txt"):
        r = run("stat", f"{m2.path}/{path}", env=c_locale())
        assert r.returncode == 1 and b"No such file or directory" in r.stderr, path


def test_a_name_that_is_not_utf8_is_not_found(fake_factory, mount_factory):
    """The kernel hands lookups raw bytes. A name that is not UTF-8 cannot be a Dropbox name, so it
    is ENOENT; decoding it with repair (U+FFFD for the bad bytes) used to find the entry whose name
    has U+FFFD there, and give that file a second name in the kernel."""
    import errno

    import pytest
    fake = fake_factory()
    fake.add_file("/a\ufffdb.txt", b"replacement character\n")
    m = mount_factory(fake)
    base = os.fsencode(m.path)
    assert b"a\xef\xbf\xbdb.txt" in os.listdir(base)
    for name in (b"a\xffb.txt", b"a\xc3b.txt", b"a\xed\xa0\x80b.txt"):
        with pytest.raises(OSError) as e:
            os.stat(base + b"/" + name)
        assert e.value.errno == errno.ENOENT, name
    assert os.stat(base + b"/a\xef\xbf\xbdb.txt").st_size == len(b"replacement character\n")


def test_a_name_longer_than_255_bytes_is_too_long(fake_factory, mount_factory):
    """A looked-up name over 255 bytes is ENAMETOOLONG, as ext4 and tmpfs answer (the kernel passes
    FUSE names of up to 1024 bytes), not ENOENT after listing the folder."""
    import errno

    import pytest
    m = mount_factory(fake_factory())
    with pytest.raises(OSError) as e:
        os.stat(os.path.join(m.path, "x" * 300))
    assert e.value.errno == errno.ENAMETOOLONG
    with pytest.raises(OSError) as e:
        os.stat(os.path.join(m.path, "x" * 255))
    assert e.value.errno == errno.ENOENT
