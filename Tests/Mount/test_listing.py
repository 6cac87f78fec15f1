"""Whole-account listings through real tools: find, ls -la, du, compared with the fake's own tree."""

from helpers import (
    c_locale, compare_records, expected_entries, expected_find_lines, find_records, ls_la,
    normalise_find_lines, sh,
)


def find_sorted_lines(path):
    """The pipeline that compares a mount with its source: find MNT -printf '%y %s %P\\n' | sort (byte order)."""
    r = sh(f"find '{path}' -printf '%y %s %P\\n' | sort", timeout=120, env=c_locale())
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert r.stderr == b"", r.stderr.decode(errors="replace")
    return normalise_find_lines(r.stdout.split(b"\n")[:-1])


def test_find_lists_the_whole_synthetic_account(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "20000", "--big-folder", "5000")
    tree = fake.tree(hashes=False)
    assert len(tree) >= 20000
    entries = expected_entries(tree)
    m = mount_factory(fake)

    got = find_sorted_lines(m.path)
    want = expected_find_lines(entries)
    assert len(got) == len(want)
    assert got == want

    # The same again, NUL-separated so names with newlines compare exactly.
    compare_records(find_records(m.path), entries)

    # The big folder really is there in full (several list_folder pages).
    big = [rel for rel in entries if rel.startswith(b"big/")]
    assert len(big) == 5000
    r = m.run("ls", "-f", f"{m.path}/big", env=c_locale())
    names = set(r.stdout.split(b"\n")[:-1]) - {b".", b".."}
    assert names == {rel[len(b"big/"):] for rel in big}

    # Unicode and hostile names are among them, byte for byte.
    for rel in (b"Unicode/NFC/caf\xc3\xa9.txt", b"Unicode/NFD/cafe\xcc\x81.txt",
                b" Nasty names /name with\nnewline.txt", b" Nasty names /trailing space.txt ",
                b" Nasty names /emoji \xf0\x9f\x98\x80\xf0\x9f\x8e\x89.txt",
                b" Nasty names /" + b"x" * 251 + b".txt", b" Nasty names /back\\slash.txt",
                "Café ☕ notes".encode()):
        assert rel in entries, rel
    # ... and the over-long ones are hidden (200 x 'ü' is 400 bytes; 80 x '日本語' is 720).
    nasty = {rel for rel in entries if rel.startswith(b" Nasty names /")}
    assert not any(rel.startswith(" Nasty names /ü".encode()) for rel in nasty)
    assert len(nasty) == 29 - 2
    # Symlinks show as 'l' with the target's byte length as size.
    assert entries[b"Special/link to notes"].kind == "l"
    assert entries[b"Special/link to notes"].size == len(b"/Special/notes.txt")
    assert m.fake.stats()["routes"].get("files/list_folder", 0) >= 1


def test_find_with_evil_names_hides_only_the_evil_entries(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "2000", "--evil-names")
    tree = fake.tree(hashes=False)
    entries = expected_entries(tree)
    m = mount_factory(fake, allowed_log=())

    got = find_sorted_lines(m.path)
    assert got == expected_find_lines(entries)
    compare_records(find_records(m.path), entries)

    # The evil folder itself lists fine: exactly the one legal survivor of the 'Dup.txt'/'dup.txt'
    # pair (same path_lower: the later entry of the listing wins), nothing else.
    r = m.run("ls", "-a", f"{m.path}/evil", env=c_locale())
    assert r.returncode == 0
    listed = r.stdout.split(b"\n")[:-1]
    evil = sorted(rel[len(b"evil/"):] for rel in entries if rel.startswith(b"evil/"))
    assert evil == [b"Dup.txt"]
    assert listed == [b".", b"..", b"Dup.txt"]
    # Siblings of the evil folder (the rest of the account) still show.
    assert len([rel for rel in entries if rel and not rel.startswith(b"evil")]) > 1500
    # Walk again: hidden entries are reported once each as warnings, never as errors.
    assert find_sorted_lines(m.path) == expected_find_lines(entries)
    log = m.log_text()
    assert "[error]" not in log
    warnings = [line for line in log.splitlines() if "[warning]: hiding " in line]
    assert len(warnings) == len(set(warnings)), "a hidden entry was reported more than once"
    for fragment in ('"/evil/": ', '"/evil/.": ', '"/evil/..": ', '"/evil/nul\\x00', '"/evil/yyyyyyyy'):
        assert sum(fragment in w for w in warnings) == 1, (fragment, warnings)
    # Names go into the log escaped: a NUL (or newline) byte from Dropbox must not reach the log
    # file raw (it turns the log into "binary" for grep and lets a name forge log lines).
    assert "\0" not in log, "a raw NUL byte was written to the daemon log"


def parse_entries_for(entries, folder):
    prefix = b"" if folder == b"" else folder + b"/"
    return {rel[len(prefix):]: e for rel, e in entries.items()
            if rel.startswith(prefix) and rel != folder and b"/" not in rel[len(prefix):]}


def test_ls_la_shows_names_types_and_sizes(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "3000")
    entries = expected_entries(fake.tree(hashes=False))
    m = mount_factory(fake)
    folders = [b"", b"Special", b"Unicode", b"Unicode/NFC", b"Unicode/NFD", b" Nasty names "]
    # And a few ordinary nested folders, the deepest ones first.
    nested = sorted((rel for rel, e in entries.items() if e.kind == "d" and rel.count(b"/") >= 2),
                    key=lambda r: -r.count(b"/"))
    folders += nested[:3]
    for folder in folders:
        want = parse_entries_for(entries, folder)
        got = ls_la(f"{m.path}/{folder.decode()}" if folder else m.path)
        assert got.pop(b".")[0].startswith("d")
        assert got.pop(b"..")[0].startswith("d")
        assert set(got) == set(want), folder
        for name, (mode, links, owner, group, size, mtime, target) in got.items():
            e = want[name]
            assert owner == "root" and group == "root", (folder, name)
            if e.kind == "d":
                assert mode == "dr-xr-xr-x", (folder, name, mode)
            elif e.kind == "l":
                assert mode[0] == "l", (folder, name, mode)
                assert size == e.size
                assert target == e.tree["symlink_target"].encode()
            else:
                assert mode == "-r--r--r--", (folder, name, mode)
                assert size == e.size, (folder, name)


def test_du_sums_sizes_and_blocks(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "5000", "--big-folder", "2500", "--evil-names")
    entries = expected_entries(fake.tree(hashes=False))
    m = mount_factory(fake)
    leaves = [e for e in entries.values() if e.kind in ("f", "l")]
    apparent = sum(e.size for e in leaves)   # folders report st_size 0
    blocks = sum((e.size + 511) // 512 for e in leaves)   # st_blocks = ceil(size / 512)

    r = m.run("du", "-s", "--apparent-size", "--block-size=1", m.path, env=c_locale())
    assert r.stderr == b""
    assert int(r.stdout.split()[0]) == apparent
    r = m.run("du", "-s", "--block-size=512", m.path, env=c_locale())
    assert int(r.stdout.split()[0]) == blocks

    # A subfolder on its own.
    big = [e for rel, e in entries.items() if rel.startswith(b"big/")]
    r = m.run("du", "-s", "--apparent-size", "--block-size=1", f"{m.path}/big", env=c_locale())
    assert int(r.stdout.split()[0]) == sum(e.size for e in big)
    # st_size and st_blocks of the folders themselves are 0.
    r = m.run("stat", "-c", "%s %b", m.path, f"{m.path}/big")
    assert r.stdout.split(b"\n")[:-1] == [b"0 0", b"0 0"]
