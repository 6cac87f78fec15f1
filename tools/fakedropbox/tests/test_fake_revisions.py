"""files/list_revisions, include_deleted listings and rev: downloads: the history the fake keeps."""

import time


def _revs(fd, **arg):
    r = fd.rpc("files/list_revisions", arg)
    assert r.status == 200, r.text
    return r.json()


def test_every_modify_keeps_a_revision_newest_first(fd):
    for i, t in enumerate((1600000000, 1600000100, 1600000200)):
        fd.add_file("/d/note.txt", ("version %d\n" % i).encode(), server_modified=t)
    out = _revs(fd, path="/d/note.txt")
    assert out["is_deleted"] is False and out["has_more"] is False
    assert "server_deleted" not in out
    assert [e["server_modified"] for e in out["entries"]] == \
        ["2020-09-13T12:30:00Z", "2020-09-13T12:28:20Z", "2020-09-13T12:26:40Z"]
    for i, e in enumerate(reversed(out["entries"])):
        body = fd.download("rev:" + e["rev"]).body
        assert body == ("version %d\n" % i).encode()
        assert e["size"] == len(body) and e["path_display"] == "/d/note.txt"


def test_before_rev_pages_and_limit_bounds(fd):
    for i in range(7):
        fd.add_file("/p.bin", bytes([i]) * (i + 1))
    first = _revs(fd, path="/p.bin", limit=3)
    assert len(first["entries"]) == 3 and first["has_more"] is True
    second = _revs(fd, path="/p.bin", limit=3, before_rev=first["entries"][-1]["rev"])
    third = _revs(fd, path="/p.bin", limit=3, before_rev=second["entries"][-1]["rev"])
    sizes = [e["size"] for e in first["entries"] + second["entries"] + third["entries"]]
    assert sizes == [7, 6, 5, 4, 3, 2, 1] and third["has_more"] is False
    assert len(_revs(fd, path="/p.bin")["entries"]) == 7  # default limit 10
    for bad in (0, 101):
        r = fd.rpc("files/list_revisions", {"path": "/p.bin", "limit": bad})
        assert r.status == 400 and "limit" in r.text
    r = fd.rpc("files/list_revisions", {"path": "/p.bin", "before_rev": "0123456789ab"})
    assert r.status == 409 and r.json()["error"][".tag"] == "invalid_before_rev"
    r = fd.rpc("files/list_revisions", {"path": "/p.bin", "mode": "id", "before_rev": first["entries"][0]["rev"]})
    assert r.status == 409 and r.json()["error"][".tag"] == "before_rev_not_supported"


def test_deleted_file_keeps_its_history(fd):
    fd.add_file("/gone.txt", b"one")
    fd.add_file("/gone.txt", b"two")
    before = int(time.time()) - 5
    fd.delete("/gone.txt")
    out = _revs(fd, path="/gone.txt")
    assert out["is_deleted"] is True
    deleted = time.mktime(time.strptime(out["server_deleted"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    assert deleted >= before
    assert [fd.download("rev:" + e["rev"]).body for e in out["entries"]] == [b"two", b"one"]
    listed, _ = fd.list_all("", include_deleted=True)
    assert {"tag": "deleted", "name": "gone.txt"} in [{"tag": e[".tag"], "name": e["name"]} for e in listed]
    tomb = [e for e in listed if e[".tag"] == "deleted"][0]
    assert set(tomb) == {".tag", "name", "path_lower", "path_display"}  # no id, rev or size
    assert fd.revisions("/gone.txt")["deleted_at"] == out["server_deleted"]


def test_deleted_folder_contents_are_listed_and_keep_history(fd):
    fd.add_file("/old/a.txt", b"A")
    fd.add_file("/old/sub/b.txt", b"B")
    fd.delete("/old")
    r = fd.rpc("files/list_folder", {"path": "/old"})
    assert r.status == 409  # a deleted folder cannot be listed itself
    listed, _ = fd.list_all("", recursive=True, include_deleted=True)
    tombs = sorted(e["path_lower"] for e in listed if e[".tag"] == "deleted")
    assert tombs == ["/old", "/old/a.txt", "/old/sub", "/old/sub/b.txt"]
    out = _revs(fd, path="/old/sub/b.txt")
    assert out["is_deleted"] and fd.download("rev:" + out["entries"][0]["rev"]).body == b"B"


def test_id_mode_follows_moves_path_mode_does_not(fd):
    fid = fd.add_file("/a.txt", b"first")["id"]
    fd.add_file("/a.txt", b"second")
    fd.move("/a.txt", "/b.txt")
    fd.add_file("/b.txt", b"third")
    by_id = _revs(fd, path=fid, mode="id")
    assert by_id["is_deleted"] is False
    assert [fd.download("rev:" + e["rev"]).body for e in by_id["entries"]] == [b"third", b"second", b"first"]
    assert [e["path_lower"] for e in by_id["entries"]] == ["/b.txt", "/b.txt", "/a.txt"]
    by_path = _revs(fd, path="/b.txt")
    assert [fd.download("rev:" + e["rev"]).body for e in by_path["entries"]] == [b"third", b"second"]
    old = _revs(fd, path="/a.txt")
    assert old["is_deleted"] is True and [e["size"] for e in old["entries"]] == [5]


def test_lookup_errors(fd):
    fd.mkdir("/folder")
    for path, tag in (("/nothing", "not_found"), ("/folder", "not_file")):
        r = fd.rpc("files/list_revisions", {"path": path})
        assert r.status == 409 and r.json()["error"] == {".tag": "path", "path": {".tag": tag}}
    r = fd.rpc("files/list_revisions", {"path": "rev:0123456789ab"})
    assert r.status == 400


def test_expired_revision_is_gone(fd):
    fd.add_file("/e.txt", b"old")
    fd.add_file("/e.txt", b"new")
    old_rev = _revs(fd, path="/e.txt")["entries"][1]["rev"]
    assert fd.expire_revision(old_rev) is True
    assert [e["rev"] for e in _revs(fd, path="/e.txt")["entries"]] != [] and \
        old_rev not in [e["rev"] for e in _revs(fd, path="/e.txt")["entries"]]
    r = fd.download("rev:" + old_rev)
    assert r.status == 409 and r.json()["error"]["path"][".tag"] == "not_found"
    assert fd.expire_revision(old_rev) is False
