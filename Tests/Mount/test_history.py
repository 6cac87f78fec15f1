"""History through the real mount: a file edited three times and another deleted on the HTTP fake;
every version and the deleted file read with cat, sha256sum and diff at their hidden paths and at
the paths `dropboxfs versions --json` and `dropboxfs deleted --json` give, byte for byte equal to
the fake's own history; find, du and ls -a never show the hidden names, and walks cost no request
more than without them (the fake counts); a revision Dropbox no longer keeps answers ENOENT."""

import errno
import hashlib
import json
import os

import pytest

from helpers import run, wait_for_fill

VERSIONS = ".dropboxfs-versions"
DELETED = ".dropboxfs-deleted"
EDITS = [b"first draft\n", b"second draft, a little longer\n" * 3, b"final text\n" * 50]
TIMES = [1700000000, 1700003600, 1700007200]


@pytest.fixture
def history(fake_factory, mount_factory):
    fake = fake_factory()
    for data, t in zip(EDITS, TIMES):
        fake.add_file("/docs/report.txt", data, server_modified=t)
    fake.add_file("/docs/keep.md", b"kept\n")
    fake.add_file("/docs/old notes.txt", b"deleted words\n" * 7, server_modified=1700010000)
    fake.add_file("/docs/gone/deep.bin", bytes(range(256)) * 40)
    fake.delete("/docs/old notes.txt")
    fake.delete("/docs/gone")
    m = mount_factory(fake)
    return fake, m


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def fake_versions(fake, path):
    """The fake's own record of a path's history, newest first, with each revision's bytes."""
    entries = fake.revisions(path)["entries"]
    return [(e, fake.content("rev:" + e["rev"])) for e in entries]


def test_every_version_reads_byte_for_byte_with_cat_sha256sum_and_diff(history, tmp_path):
    fake, m = history
    history_of = fake_versions(fake, "/docs/report.txt")
    assert [data for _, data in history_of] == list(reversed(EDITS))
    folder = f"{m.path}/docs/{VERSIONS}/report.txt"
    names = sorted(os.listdir(folder), reverse=True)
    assert len(names) == 3
    for name, (entry, data) in zip(names, history_of):
        assert name.endswith("_" + entry["rev"] + ".txt"), name
        path = f"{folder}/{name}"
        assert run("cat", path).stdout == data
        assert run("sha256sum", path).stdout.split()[0].decode() == sha256(data)
        copy = tmp_path / name
        copy.write_bytes(data)
        assert run("diff", path, str(copy)).returncode == 0
        st = os.stat(path)
        assert st.st_size == len(data) and st.st_mode & 0o777 == 0o444
        assert int(st.st_mtime) == TIMES[EDITS.index(data)]
        with pytest.raises(OSError) as opened:
            open(path, "r+b")
        assert opened.value.errno == errno.EROFS


def test_the_versions_command_gives_paths_that_read_each_version(history, binary, tmp_path):
    fake, m = history
    r = run(binary, "versions", f"{m.path}/docs/report.txt", "--json")
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    history_of = fake_versions(fake, "/docs/report.txt")
    assert [e["rev"] for e in listed] == [e["rev"] for e, _ in history_of]
    assert [e["current"] for e in listed] == [True, False, False]
    for entry, (want, data) in zip(listed, history_of):
        assert os.path.isabs(entry["path"]) and entry["path"].startswith(m.path + "/")
        assert entry["size"] == len(data) and entry["content_hash"] == want["content_hash"]
        assert entry["time"] == want["server_modified"]
        assert run("cat", entry["path"]).stdout == data
    # Recovering the version before the current one, as the README shows.
    r = run("sh", "-c", f'cp "$({binary} versions {m.path}/docs/report.txt --json | '
                        f'python3 -c "import json,sys; print(json.load(sys.stdin)[1][\'path\'])")" .',
            cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / listed[1]["path"].rsplit("/", 1)[1]).read_bytes() == EDITS[1]
    text = run(binary, "versions", f"{m.path}/docs/report.txt")
    assert text.returncode == 0 and text.stdout.decode().count("(current)") == 1
    outside = run(binary, "versions", str(tmp_path / "nothing.txt"))
    assert outside.returncode == 3 and b"not a folder of a dropboxfs mount" in outside.stderr


def test_deleted_files_read_at_their_hidden_paths_and_via_the_command(history, binary):
    fake, m = history
    gone_data = fake_versions(fake, "/docs/old notes.txt")[0][1]
    deep_data = fake_versions(fake, "/docs/gone/deep.bin")[0][1]
    view = f"{m.path}/docs/{DELETED}"
    assert sorted(os.listdir(view)) == ["gone", "old notes.txt"]
    assert run("cat", f"{view}/old notes.txt").stdout == gone_data == b"deleted words\n" * 7
    assert run("sha256sum", f"{view}/gone/deep.bin").stdout.split()[0].decode() == sha256(deep_data)
    assert os.path.isdir(f"{view}/gone")
    r = run(binary, "deleted", f"{m.path}/docs", "--json")
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    by_original = {e["original"]: e for e in listed}
    assert set(by_original) == {f"{m.path}/docs/old notes.txt", f"{m.path}/docs/gone/deep.bin"}
    for original, data in ((f"{m.path}/docs/old notes.txt", gone_data), (f"{m.path}/docs/gone/deep.bin", deep_data)):
        entry = by_original[original]
        assert entry["size"] == len(data)
        assert run("cat", entry["path"]).stdout == data
    deleted_at = fake.revisions("/docs/old notes.txt")["deleted_at"]
    assert by_original[f"{m.path}/docs/old notes.txt"]["deleted"] == deleted_at
    later = run(binary, "deleted", f"{m.path}/docs", "--since", "2999-01-01", "--json")
    assert later.returncode == 0 and json.loads(later.stdout) == []
    earlier = run(binary, "deleted", f"{m.path}/docs", "--since", deleted_at, "--json")
    assert earlier.returncode == 0 and f"{m.path}/docs/old notes.txt" in [e["original"] for e in json.loads(earlier.stdout)]
    text = run(binary, "deleted", f"{m.path}/docs")
    assert text.returncode == 0 and text.stdout.decode().count(f"{m.path}/docs/{DELETED}/") == 2
    bad = run(binary, "deleted", f"{m.path}/docs", "--since", "yesterday")
    assert bad.returncode == 2 and b"--since" in bad.stderr


def test_walks_never_see_the_hidden_names_and_cost_no_request(history):
    fake, m = history
    # Warm: the whole tree is listed once (the background fill), and walked once.
    wait_for_fill(m.path, fake)
    run("find", m.path)
    fake.reset_stats()
    found = run("find", m.path).stdout.decode().splitlines()
    ls = run("ls", "-aR", m.path).stdout.decode()
    du = run("du", "-a", m.path).stdout.decode()
    for text in ["\n".join(found), ls, du]:
        assert VERSIONS not in text and DELETED not in text
    assert fake.stats()["total"] == 0, fake.stats()
    # Entering them is asked for by name only, and the walk beside them still sees nothing more.
    assert os.path.isdir(f"{m.path}/docs/{VERSIONS}") and os.path.isdir(f"{m.path}/{DELETED}")
    assert run("find", m.path).stdout.decode().splitlines() == found
    assert fake.stats()["routes"].get("files/list_revisions", 0) == 0


def test_a_revision_dropbox_no_longer_keeps_is_enoent(history):
    fake, m = history
    oldest = fake_versions(fake, "/docs/report.txt")[-1][0]
    name = f"{oldest['server_modified'].replace(':', '')}_{oldest['rev']}.txt"
    assert fake.expire_revision(oldest["rev"])
    path = f"{m.path}/docs/{VERSIONS}/report.txt/{name}"
    with pytest.raises(FileNotFoundError):
        os.stat(path)
    assert len(os.listdir(f"{m.path}/docs/{VERSIONS}/report.txt")) == 2
    with pytest.raises(FileNotFoundError):
        os.stat(f"{m.path}/docs/{VERSIONS}/report.txt/2020-01-01T000000Z_{oldest['rev']}.txt")


def test_a_moved_files_versions_include_those_from_before_the_move(fake_factory, mount_factory, binary):
    fake = fake_factory()
    fake.add_file("/m/draft.txt", b"one\n", server_modified=1700000000)
    fake.add_file("/m/draft.txt", b"two\n", server_modified=1700000100)
    fake.move("/m/draft.txt", "/m/final.txt")
    fake.add_file("/m/final.txt", b"three\n", server_modified=1700000200)
    m = mount_factory(fake)
    r = run(binary, "versions", f"{m.path}/m/final.txt", "--json")
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    assert [run("cat", e["path"]).stdout for e in listed] == [b"three\n", b"two\n", b"one\n"]
    assert all(e["path"].endswith(".txt") for e in listed)
