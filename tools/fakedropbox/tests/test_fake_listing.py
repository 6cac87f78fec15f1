"""list_folder paging/order, continue after mutations, reset, longpoll."""

import threading
import time
import unicodedata


def names(entries):
    return [e["name"] for e in entries]


def test_paging_with_limit(sample):
    first = sample.rpc("files/list_folder", {"path": "/Many Files", "limit": 700}).json()
    assert len(first["entries"]) == 700 and first["has_more"] is True
    entries, pages, out = list(first["entries"]), 1, first
    while out["has_more"]:
        out = sample.rpc("files/list_folder/continue", {"cursor": out["cursor"]}).json()
        entries += out["entries"]
        pages += 1
        assert len(out["entries"]) <= 700
    assert pages == 8  # 5000 / 700
    assert len(entries) == 5000
    assert len({e["path_lower"] for e in entries}) == 5000
    assert out["cursor"]


def test_default_limit_and_max(sample):
    r = sample.rpc("files/list_folder", {"path": "/Many Files"}).json()
    assert len(r["entries"]) == 500 and r["has_more"]
    r = sample.rpc("files/list_folder", {"path": "/Many Files", "limit": 2000}).json()
    assert len(r["entries"]) == 2000


def test_recursive_order_parents_first(sample):
    entries, _ = sample.list_all("", recursive=True, limit=333)
    seen = set()
    for e in entries:
        parent = e["path_lower"].rpartition("/")[0]
        assert parent == "" or parent in seen, e["path_lower"]
        seen.add(e["path_lower"])
    tree = [x for x in sample.tree()]
    assert len(entries) == len(tree)


def test_recursive_non_root_starts_with_folder(sample):
    out = sample.rpc("files/list_folder", {"path": "/Documents", "recursive": True}).json()
    assert out["entries"][0][".tag"] == "folder"
    assert out["entries"][0]["path_lower"] == "/documents"
    assert any(e["path_lower"] == "/documents/work/notes.txt" for e in out["entries"])
    flat = sample.rpc("files/list_folder", {"path": "/Documents"}).json()
    assert all(e["path_lower"] != "/documents" for e in flat["entries"])
    assert not any(e["path_lower"].startswith("/documents/work/") for e in flat["entries"])


def test_metadata_shapes(sample):
    entries, _ = sample.list_all("", recursive=True)
    for e in entries:
        assert e["path_lower"] == unicodedata.normalize("NFC", e["path_display"]).lower()
        assert e["path_display"].endswith("/" + e["name"])
        if e[".tag"] == "folder":
            assert set(e) == {".tag", "name", "path_lower", "path_display", "id"}
        else:
            assert len(e["rev"]) >= 9 and all(c in "0123456789abcdef" for c in e["rev"])
            assert e["id"].startswith("id:")
            assert e["server_modified"].endswith("Z") and "." not in e["server_modified"]
            assert time.strptime(e["server_modified"], "%Y-%m-%dT%H:%M:%SZ") < time.gmtime()
            if e["is_downloadable"]:
                assert len(e["content_hash"]) == 64
            else:
                assert "export_info" in e
    nfd = [e for e in entries if e["name"] != unicodedata.normalize("NFC", e["name"])]
    assert nfd, "sample account has an NFD name"
    assert any("symlink_info" in e for e in entries)


def test_lookup_is_nfc_and_case_insensitive_and_collapses_slashes(sample):
    for p in ("/documents/welcome.TXT", "//Documents///Welcome.txt", "/Documents/Welcome.txt/",
              unicodedata.normalize("NFD", "/Documents/Café ☕.txt")):
        r = sample.rpc("files/get_metadata", {"path": p})
        assert r.status == 200, p
    r = sample.rpc("files/list_folder", {"path": "//Documents/Work"})
    assert r.status == 200 and len(r.json()["entries"]) == 2


def test_id_and_ns_paths(sample):
    md = sample.rpc("files/get_metadata", {"path": "/Documents/Work"}).json()
    r = sample.rpc("files/list_folder", {"path": md["id"]})
    assert r.status == 200 and len(r.json()["entries"]) == 2
    r = sample.rpc("files/get_metadata", {"path": md["id"] + "/notes.txt"})
    assert r.json()["path_lower"] == "/documents/work/notes.txt"
    ns = sample.info()["root_namespace_id"]
    r = sample.rpc("files/get_metadata", {"path": "ns:%s/Documents" % ns})
    assert r.status == 200 and r.json()["name"] == "Documents"
    assert sample.rpc("files/get_metadata", {"path": "id:AAAAAAAAAAAAAAAAAAAAAA"}).status == 409


def test_non_downloadable_filter(sample):
    all_ = sample.rpc("files/list_folder", {"path": "/Documents"}).json()["entries"]
    assert any(e.get("is_downloadable") is False for e in all_)
    hidden = sample.rpc("files/list_folder", {"path": "/Documents",
                                              "include_non_downloadable_files": False}).json()["entries"]
    assert all(e.get("is_downloadable") is not False for e in hidden)
    assert len(hidden) == len(all_) - 2  # two .paper docs


def _continue(fd, cursor):
    out = fd.rpc("files/list_folder/continue", {"cursor": cursor})
    assert out.status == 200, out.text
    return out.json()


def test_continue_empty_page_gives_new_cursor(fd):
    fd.add_file("/a.txt", b"a")
    out = fd.rpc("files/list_folder", {"path": ""}).json()
    nxt = _continue(fd, out["cursor"])
    assert nxt["entries"] == [] and nxt["has_more"] is False and nxt["cursor"]


def test_continue_after_add_modify_delete_move(fd):
    fd.mkdir("/dir/sub")
    fd.add_file("/dir/sub/f.txt", b"one")
    fd.add_file("/top.txt", b"top")
    _, cur = fd.list_all("", recursive=True)
    # add
    fd.add_file("/dir/new.txt", b"new")
    out = _continue(fd, cur)
    assert [(e[".tag"], e["path_lower"]) for e in out["entries"]] == [("file", "/dir/new.txt")]
    cur = out["cursor"]
    # modify
    old = fd.rpc("files/get_metadata", {"path": "/top.txt"}).json()
    fd.add_file("/top.txt", b"top v2")
    out = _continue(fd, cur)
    (e,) = out["entries"]
    assert e[".tag"] == "file" and e["size"] == 6 and e["rev"] != old["rev"] and e["id"] == old["id"]
    cur = out["cursor"]
    # delete (a folder: one deleted entry)
    fd.delete("/dir/sub")
    out = _continue(fd, cur)
    assert out["entries"] == [{".tag": "deleted", "name": "sub", "path_lower": "/dir/sub",
                               "path_display": "/dir/sub"}]
    cur = out["cursor"]
    # move a folder with children
    fd.add_file("/dir/x/y.txt", b"y")
    cur = _continue(fd, cur)["cursor"]
    fd.move("/dir/x", "/Moved/X2")
    out = _continue(fd, cur)
    got = [(e[".tag"], e["path_display"]) for e in out["entries"]]
    assert got == [("deleted", "/dir/x"), ("folder", "/Moved"), ("folder", "/Moved/X2"),
                   ("file", "/Moved/X2/y.txt")]
    assert all("id" not in e for e in out["entries"] if e[".tag"] == "deleted")


def test_continue_is_scoped(fd):
    fd.mkdir("/a/deep")
    fd.mkdir("/b")
    out = fd.rpc("files/list_folder", {"path": "/a"}).json()
    cur_flat = out["cursor"]
    cur_rec = fd.list_all("/a", recursive=True)[1]
    fd.add_file("/a/deep/x.txt", b"x")
    fd.add_file("/b/y.txt", b"y")
    fd.add_file("/a/z.txt", b"z")
    assert [e["path_lower"] for e in _continue(fd, cur_flat)["entries"]] == ["/a/z.txt"]
    assert [e["path_lower"] for e in _continue(fd, cur_rec)["entries"]] == ["/a/deep/x.txt", "/a/z.txt"]


def test_continue_paging_of_changes(fd):
    cur = fd.rpc("files/list_folder/get_latest_cursor", {"path": "", "limit": 3}).json()["cursor"]
    for i in range(7):
        fd.add_file("/f%d" % i, b"x")
    seen, out = [], {"cursor": cur, "has_more": True}
    while out["has_more"]:
        out = _continue(fd, out["cursor"])
        assert len(out["entries"]) <= 3
        seen += [e["name"] for e in out["entries"]]
    assert seen == ["f%d" % i for i in range(7)]


def test_changes_during_paging_are_replayed(fd):
    for i in range(10):
        fd.add_file("/f%02d" % i, b"x")
    out = fd.rpc("files/list_folder", {"path": "", "limit": 4}).json()
    fd.add_file("/a_new", b"inserted before the resume point")
    fd.delete("/f09")
    entries = list(out["entries"])
    while out["has_more"]:
        out = _continue(fd, out["cursor"])
        entries += out["entries"]
    out = _continue(fd, out["cursor"])
    state = {e["path_lower"] for e in entries}
    for e in out["entries"]:
        if e[".tag"] == "deleted":
            state.discard(e["path_lower"])
        else:
            state.add(e["path_lower"])
    assert state == {"/f%02d" % i for i in range(9)} | {"/a_new"}


def test_include_deleted(fd):
    fd.add_file("/keep.txt", b"k")
    fd.add_file("/gone.txt", b"g")
    fd.delete("/gone.txt")
    out = fd.rpc("files/list_folder", {"path": "", "include_deleted": True}).json()
    assert {(e[".tag"], e["name"]) for e in out["entries"]} == {("file", "keep.txt"), ("deleted", "gone.txt")}
    out = fd.rpc("files/list_folder", {"path": ""}).json()
    assert [e["name"] for e in out["entries"]] == ["keep.txt"]
    r = fd.rpc("files/get_metadata", {"path": "/gone.txt", "include_deleted": True}).json()
    assert r[".tag"] == "deleted"
    assert fd.rpc("files/get_metadata", {"path": "/gone.txt"}).status == 409


def test_reset_cursors(fd):
    fd.add_file("/a", b"a")
    cur = fd.rpc("files/list_folder", {"path": ""}).json()["cursor"]
    fd.reset_cursors()
    r = fd.rpc("files/list_folder/continue", {"cursor": cur})
    assert r.status == 409
    assert r.json() == {"error_summary": "reset/..", "error": {".tag": "reset"}}
    r = fd.rpc("files/list_folder/longpoll", {"cursor": cur, "timeout": 1}, token=None)
    assert r.status == 409 and r.json()["error"] == {".tag": "reset"}
    fresh = fd.rpc("files/list_folder", {"path": ""}).json()["cursor"]
    assert fd.rpc("files/list_folder/continue", {"cursor": fresh}).status == 200


def test_cursor_of_other_instance_resets(fd, start):
    other = start("--quiet")
    cur = other.rpc("files/list_folder", {"path": ""}).json()["cursor"]
    r = fd.rpc("files/list_folder/continue", {"cursor": cur})
    assert r.status == 409 and r.json()["error"][".tag"] == "reset"


def test_deleted_scope_folder_gives_path_error(fd):
    fd.mkdir("/d")
    cur = fd.rpc("files/list_folder", {"path": "/d"}).json()["cursor"]
    fd.delete("/d")
    r = fd.rpc("files/list_folder/continue", {"cursor": cur})
    assert r.status == 409 and r.json()["error"] == {".tag": "path", "path": {".tag": "not_found"}}


def test_longpoll_wakes_on_change(fd):
    fd.mkdir("/watched")
    cur = fd.rpc("files/list_folder/get_latest_cursor", {"path": "/watched"}).json()["cursor"]
    result = {}

    def poll():
        t0 = time.monotonic()
        r = fd.rpc("files/list_folder/longpoll", {"cursor": cur, "timeout": 30}, token=None)
        result["r"], result["dt"] = r, time.monotonic() - t0

    th = threading.Thread(target=poll)
    th.start()
    time.sleep(0.5)
    fd.add_file("/elsewhere.txt", b"not in scope")
    time.sleep(0.3)
    assert th.is_alive(), "out-of-scope change must not wake the longpoll"
    fd.add_file("/watched/x.txt", b"x")
    th.join(10)
    assert result["r"].status == 200 and result["r"].json() == {"changes": True}
    assert 0.7 < result["dt"] < 5


def test_longpoll_timeout_and_backoff(fd):
    cur = fd.rpc("files/list_folder/get_latest_cursor", {"path": ""}).json()["cursor"]
    t0 = time.monotonic()
    r = fd.rpc("files/list_folder/longpoll", {"cursor": cur, "timeout": 1}, token=None)
    assert r.json() == {"changes": False} and 0.9 < time.monotonic() - t0 < 3
    fd.config(longpoll_backoff=7)
    fd.add_file("/x", b"")
    r = fd.rpc("files/list_folder/longpoll", {"cursor": cur, "timeout": 1}, token=None)
    assert r.json() == {"changes": True, "backoff": 7}
    assert fd.rpc("files/list_folder/longpoll", {"cursor": cur, "timeout": 481}, token=None).status == 400


def test_case_only_rename_not_reported(fd):
    fd.add_file("/readme.txt", b"r")
    cur = fd.rpc("files/list_folder", {"path": ""}).json()["cursor"]
    fd.move("/readme.txt", "/README.txt")
    assert _continue(fd, cur)["entries"] == []
    assert fd.rpc("files/get_metadata", {"path": "/readme.txt"}).json()["name"] == "README.txt"


def test_file_replacing_folder(fd):
    fd.add_file("/p/child.txt", b"c")
    cur = fd.rpc("files/list_folder", {"path": "", "recursive": True}).json()["cursor"]
    fd.add_file("/p", b"now a file")
    out = _continue(fd, cur)
    assert [(e[".tag"], e["path_lower"]) for e in out["entries"]] == [("deleted", "/p"), ("file", "/p")]
