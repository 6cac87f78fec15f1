"""Lean walks (--lean-walk-after): once a process has read N folders, its listings carry files'
names and types only. `find` sees every entry with the right type; whatever stats the files next
(`find -printf %s`, `du`, `stat`, `ls -l`) sees their true sizes; a file manager always gets full
listings; 0 turns it off. The root's status attribute counts the pieces served lean."""

import os
import shutil
import time

from helpers import c_locale, compare_records, expected_entries, find_records, run, sync_status, wait_for_fill


def lean_listings(m):
    return int(sync_status(m.path)["lean_listings"])


def file_lookups(m):
    return int(sync_status(m.path)["file_lookups"])


def find_names(path, *predicates):
    """`find PATH [predicates] -print0` as a set of paths relative to PATH (no stat needed)."""
    r = run("find", path, *predicates, "-print0", timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    prefix = path.encode() + b"/"
    out = set()
    for p in r.stdout.split(b"\0")[:-1]:
        out.add(b"" if p == path.encode() else p[len(prefix):])
    return out


def synthetic(fake_factory):
    fake = fake_factory("--synthetic", "3000", "--folders", "300")
    entries = expected_entries(fake.tree(hashes=False))
    assert sum(e.kind == "d" for e in entries.values()) > 50
    return fake, entries


def test_find_walks_lean_and_the_tools_after_it_see_full_attributes(fake_factory, mount_factory):
    fake, entries = synthetic(fake_factory)
    m = mount_factory(fake, "--lean-walk-after", "4")
    wait_for_fill(m.path, fake)
    assert lean_listings(m) == 0

    # Names and types come from the listings alone.
    assert find_names(m.path) == set(entries)
    assert lean_listings(m) > 0, "a find over many folders is served lean"
    assert find_names(m.path, "-type", "f") == {rel for rel, e in entries.items() if e.kind == "f"}
    assert find_names(m.path, "-type", "d") == {rel for rel, e in entries.items() if e.kind == "d"}
    assert find_names(m.path, "-type", "l") == {rel for rel, e in entries.items() if e.kind == "l"}

    # Tools that stat every file, after the lean walks, see every size (each file looked up, or
    # listed in full again).
    compare_records(find_records(m.path), entries)
    r = run("du", "-ab0", "--", m.path, timeout=120, env=c_locale())
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    prefix = m.path.encode() + b"/"
    sizes = {}
    for record in r.stdout.split(b"\0")[:-1]:
        size, path = record.split(b"\t", 1)
        if path.startswith(prefix):
            sizes[path[len(prefix):]] = int(size)
    for rel, e in entries.items():
        if e.kind == "f":
            assert sizes.get(rel) == e.size, rel
    deepest = max((rel for rel, e in entries.items() if e.kind == "f" and b"\n" not in rel), key=lambda r: r.count(b"/"))
    r = run("stat", "-c", "%s", "--", os.fsdecode(m.path.encode() + b"/" + deepest), env=c_locale())
    assert r.stdout.decode().strip() == str(entries[deepest].size), (deepest, r.stderr)
    r = run("ls", "-lR", m.path, timeout=120, env=c_locale())
    assert r.returncode == 0 and r.stderr == b"", r.stderr.decode(errors="replace")


def test_a_stat_walk_after_a_lean_find_gets_full_listings(fake_factory, mount_factory):
    """The kernel keeps the listings a lean `find` read, lean; the first file looked up in one of
    them makes the daemon drop them all, so a `du` after `find` lists afresh (in full, since it
    stats) instead of looking up every file: it looks up one folder's files at most."""
    fake, entries = synthetic(fake_factory)
    files = sum(e.kind != "d" for e in entries.values())
    m = mount_factory(fake, "--lean-walk-after", "4")
    wait_for_fill(m.path, fake)
    assert find_names(m.path) == set(entries)
    assert lean_listings(m) > 0
    before = file_lookups(m)
    r = run("du", "-ab0", "--", m.path, timeout=120, env=c_locale())
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    looked_up = file_lookups(m) - before
    assert 0 < looked_up <= 60, f"du looked up {looked_up} of {files} files"
    compare_records(find_records(m.path), entries)


def test_a_stat_that_relists_its_folder_after_a_lean_find_answers(fake_factory, mount_factory):
    """Without the watcher a folder past --dir-cache-time is listed again by the lookup that needs
    it, which publishes invalidations of the names that changed in it; the kernel holds that
    folder's lock until the lookup is answered. The lookup, in a folder listed lean, also waits for
    the drop of the lean listings: that must not wait behind those invalidations."""
    fake = fake_factory()
    for i in range(12):
        for j in range(5):
            fake.add_file(f"/f{i:02}/file{j}.txt", b"x" * (i + j))
    m = mount_factory(fake, "--lean-walk-after", "2", "--no-watch", "--dir-cache-time", "1s")
    r = run("find", m.path, timeout=60)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 1 + 12 + 60
    assert lean_listings(m) > 0
    fake.add_file("/f11/new.txt", b"new")
    fake.delete("/f11/file0.txt")
    time.sleep(1.5)
    # A name the daemon does not know yet: the lookup lists the folder again.
    r = run("stat", "-c", "%s", f"{m.path}/f11/new.txt", timeout=20)
    assert r.returncode == 0 and r.stdout == b"3\n", r.stderr.decode(errors="replace")
    assert run("ls", f"{m.path}/f11", timeout=20).stdout.split() == [b"file1.txt", b"file2.txt", b"file3.txt",
                                                                     b"file4.txt", b"new.txt"]


def test_without_lean_walks_du_after_find_looks_nothing_up(fake_factory, mount_factory):
    """The other side of the trade: with full listings the kernel holds every file's inode after
    `find`, so `du` asks nothing; --lean-walk-after 0 keeps that, and serves nothing lean."""
    fake, entries = synthetic(fake_factory)
    m = mount_factory(fake, "--lean-walk-after", "0")
    wait_for_fill(m.path, fake)
    assert find_names(m.path) == set(entries)
    r = run("du", "-ab0", "--", m.path, timeout=120, env=c_locale())
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert (lean_listings(m), file_lookups(m)) == (0, 0)


def test_a_file_manager_always_gets_full_listings(fake_factory, mount_factory, tmp_path):
    """A process named as a file manager (a copy of find called pcmanfm) is never served lean."""
    fake, entries = synthetic(fake_factory)
    m = mount_factory(fake, "--lean-walk-after", "2", "--no-thumbnails")
    wait_for_fill(m.path, fake)
    pcmanfm = tmp_path / "pcmanfm"
    shutil.copy(shutil.which("find"), pcmanfm)
    r = run(str(pcmanfm), m.path, "-print0", timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert len(r.stdout.split(b"\0")[:-1]) == len(entries)
    assert lean_listings(m) == 0, "the same walk by find is lean (the first test)"
