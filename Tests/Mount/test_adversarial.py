"""The mount against a fake Dropbox as unkind as the contract allows (fakedropbox --adversarial):
shuffled pages, children before their parents, irregular and empty pages, repeated entries,
re-cased ancestors in path_display, another path_lower folding, deleted entries for paths that never
existed, and bogus entries of the other kind replaced later (tools/fakedropbox/README.md).

Whatever the order, page sizes and folding, the mount must show exactly the fake's tree: every
path (byte for byte), every file's size, and the bytes of a sample of files.

Note: even the default fake folds `ΕΛΛΑΣ` to `ελλας` (Python's str.lower(), final sigma), while a
client that lower-cases scalar by scalar computes `ελλασ`; a client that takes its keys from
path_lower is right either way. The single-mode tests leave the Greek names out (except for `fold`)
so that each one shows what its own mode breaks.
"""

import hashlib
import os
import random

import pytest

from helpers import (
    compare_records, expected_entries, find_records, poll_assert, run, sync_status, wait_for_fill,
)

MODES = ("shuffle", "late-parents", "pages", "repeat", "case-drift", "fold", "ghost-deletes", "replace")
UNICODE_FILES = {
    "/ΕΛΛΑΣ/Σ.txt": b"final sigma\n",
    "/ΕΛΛΑΣ/ΟΔΟΣ/χάρτης.txt": b"map\n",
    "/Straße/Hauptstraße 1.txt": b"strasse\n",
    "/Straße/ß/inner.txt": b"sharp s\n",
    "/İstanbul/Boğaziçi.txt": b"istanbul\n",
    "/ﬁles/ﬁle.txt": b"ligature\n",
    "/ﬁles/ﬂow.txt": b"fl ligature\n",
}
SETTLE = 60  # seconds the mount may take to show the tree after changes


def add_unicode(fake, greek=True):
    for path, data in UNICODE_FILES.items():
        if greek or not path.startswith("/ΕΛΛΑΣ"):
            fake.add_file(path, data)


def check_tree(m, fake, timeout):
    """Poll until the mount shows exactly the fake's tree (paths and sizes)."""
    tree = fake.tree(hashes=False)
    entries = expected_entries(tree)
    poll_assert(lambda: compare_records(find_records(m.path), entries), timeout=timeout, interval=1.0,
                what="the mount to show the fake's tree")
    return entries


def check_sample_bytes(m, fake, entries, n=20, seed=7):
    files = sorted(rel for rel, e in entries.items()
                   if e.kind == "f" and e.tree["is_downloadable"] and e.tree["symlink_target"] is None)
    sample = random.Random(seed).sample(files, min(n, len(files)))
    paths = [os.fsdecode(os.path.join(os.fsencode(m.path), rel)) for rel in sample]
    r = run("sha256sum", "-z", "--", *paths, timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    got = {}
    for record in r.stdout.split(b"\0")[:-1]:
        digest, path = record.split(b"  ", 1)
        got[path] = digest.decode()
    for rel, path in zip(sample, paths):
        want = hashlib.sha256(fake.content(entries[rel].tree["path_display"])).hexdigest()
        assert got.get(os.fsencode(path)) == want, f"bytes of {rel!r} differ"


def make_changes(fake, rng, greek=True):
    """About 100 remote changes of every kind: adds, deletes, folder moves (with subtrees),
    file -> folder and folder -> file replacements."""
    tree = fake.tree(hashes=False)
    files = [e["path_display"] for e in tree if e["tag"] == "file" and e["path_display"].count("/") >= 2
             and "\n" not in e["path_display"]]
    folders = [e["path_display"] for e in tree if e["tag"] == "folder" and e["path_display"].count("/") >= 2]
    rng.shuffle(files)
    rng.shuffle(folders)
    done = 0

    def attempt(fn, *a):
        nonlocal done
        try:
            fn(*a)
            done += 1
            return True
        except Exception:
            return False

    for i in range(30):
        attempt(fake.add_file, f"{rng.choice(folders)}/added during fill {i}.txt", f"added {i}\n".encode())
    for i in range(5):
        attempt(fake.add_file, f"/New tree {i}/level a/level b/leaf {i}.txt", b"leaf\n")
    if greek:
        attempt(fake.add_file, "/ΕΛΛΑΣ/ΝΕΟΣ ΦΑΚΕΛΟΣ/Σ.txt", b"new sigma\n")
    attempt(fake.add_file, "/Straße/neue Straße.txt", b"new strasse\n")
    for p in files[:25]:
        attempt(fake.delete, p)
    for p in folders[:5]:
        attempt(fake.delete, p)
    for i, p in enumerate(folders[5:13]):
        attempt(fake.move, p, f"/Moved {i}/{p.rsplit('/', 1)[1]}")
    for p in files[25:35]:
        attempt(fake.add_file, p, b"overwritten\n")
    for p in files[35:41]:  # file -> folder
        if attempt(fake.delete, p):
            attempt(fake.add_file, p + "/now a folder.txt", b"was a file\n")
    for p in folders[13:19]:  # folder -> file
        attempt(fake.add_file, p, b"was a folder\n")
    return done


def account(fake_factory, *extra):
    fake = fake_factory("--synthetic", "20000", *extra)
    add_unicode(fake)
    tree = fake.tree()  # computes every content hash: listings are then fast
    assert len(tree) >= 20000
    return fake


@pytest.mark.parametrize("case", ["prefetch", "no-prefetch", "changes-during-fill"])
@pytest.mark.parametrize("adversarial", ["all", ""], ids=["adversarial-all", "default"])
def test_whole_account(fake_factory, mount_factory, case, adversarial):
    extra = ("--adversarial", adversarial, "--adversarial-seed", "11") if adversarial else ()
    fake = account(fake_factory, *extra)
    if case == "changes-during-fill":
        fake.config(latency_ms=25)  # the fill takes a few seconds: the changes land during it
    m = mount_factory(fake, *(("--no-prefetch",) if case == "no-prefetch" else ()))
    if case == "changes-during-fill":
        phase = sync_status(m.path).get("phase")
        done = make_changes(fake, random.Random(5))
        print(f"{done} changes, starting in phase {phase}")
        assert done >= 90
        fake.config(latency_ms=0)
        timeout = SETTLE
    else:
        if case == "prefetch":
            wait_for_fill(m.path, fake, timeout=120)
        timeout = 10
    entries = check_tree(m, fake, timeout)
    check_sample_bytes(m, fake, entries)


@pytest.mark.parametrize("mode", MODES)
def test_single_mode(fake_factory, mount_factory, mode):
    fake = fake_factory("--synthetic", "3000", "--adversarial", mode, "--adversarial-seed", "3")
    greek = mode == "fold"
    add_unicode(fake, greek)
    fake.tree()
    m = mount_factory(fake)
    wait_for_fill(m.path, fake, timeout=60)
    entries = check_tree(m, fake, 5)
    make_changes(fake, random.Random(9), greek)
    entries = check_tree(m, fake, 20)
    check_sample_bytes(m, fake, entries, n=10)


@pytest.mark.parametrize("adversarial", ["fold", ""], ids=["fold", "default"])
def test_folding_names(fake_factory, mount_factory, adversarial):
    fake = fake_factory(*(("--adversarial", adversarial) if adversarial else ()))
    add_unicode(fake)
    m = mount_factory(fake)
    folders = {}
    for path in UNICODE_FILES:
        folder, _, name = path.rpartition("/")
        folders.setdefault(folder, set()).add(name)
    for path in UNICODE_FILES:  # sub-folders show in their parents' listings too
        parts = path.split("/")
        for i in range(2, len(parts) - 1):
            folders.setdefault("/".join(parts[:i]), set()).add(parts[i])
    folders.setdefault("", set()).update(p.split("/")[1] for p in UNICODE_FILES)
    for folder, names in sorted(folders.items()):
        got = set(os.listdir(m.path + folder))
        assert got == names, f"ls {folder or '/'}: {sorted(got)} != {sorted(names)}"
    for path, data in UNICODE_FILES.items():
        r = run("cat", m.path + path)
        assert r.returncode == 0, (path, r.stderr.decode(errors="replace"))
        assert r.stdout == data, path
