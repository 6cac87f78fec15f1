"""Shared folders not added (sharedfolders.py): sharing/list_folders paging, a namespace read
through Dropbox-API-Path-Root namespace_id, no_permission, unsharing, and that the account's own
tree is untouched."""

import json

import pytest

from fakedropbox.client import ControlError


def ns_header(sid):
    return {"Dropbox-API-Path-Root": json.dumps({".tag": "namespace_id", "namespace_id": sid})}


def list_all(f, path="", headers=None, recursive=False):
    out = f.rpc("files/list_folder", {"path": path, "recursive": recursive}, headers=headers)
    assert out.status == 200, out.text
    out = out.json()
    entries = list(out["entries"])
    while out["has_more"]:
        r = f.rpc("files/list_folder/continue", {"cursor": out["cursor"]}, headers=headers)
        assert r.status == 200, r.text
        out = r.json()
        entries += out["entries"]
    return entries, out["cursor"]


def all_shared(f, limit):
    r = f.rpc("sharing/list_folders", {"limit": limit})
    assert r.status == 200, r.text
    out = r.json()
    pages = [out["entries"]]
    while out.get("cursor"):
        r = f.rpc("sharing/list_folders/continue", {"cursor": out["cursor"]})
        assert r.status == 200, r.text
        out = r.json()
        pages.append(out["entries"])
    return pages


def test_list_folders_pages_and_metadata(fd):
    made = [fd.add_shared_folder("Project %d" % i) for i in range(5)]
    mounted = fd.add_shared_folder("Mine", mounted_at="/Mine", access_type="editor")
    pages = all_shared(fd, 2)
    assert [len(p) for p in pages] == [2, 2, 2]
    entries = [e for p in pages for e in p]
    assert [e["shared_folder_id"] for e in entries] == [m["shared_folder_id"] for m in made + [mounted]]
    first = entries[0]
    for field in ("access_type", "is_inside_team_folder", "is_team_folder", "name", "policy",
                  "preview_url", "shared_folder_id", "time_invited"):
        assert field in first
    assert first["access_type"] == {".tag": "viewer"}
    assert "path_lower" not in first
    assert entries[-1]["path_lower"] == "/mine" and entries[-1]["path_display"] == "/Mine"
    # The mounted one is a folder of the account's own tree.
    own, _ = list_all(fd)
    assert [e["name"] for e in own] == ["Mine"]


def test_list_folders_bad_limit_and_cursor(fd):
    assert fd.rpc("sharing/list_folders", {"limit": 0}).status == 400
    assert fd.rpc("sharing/list_folders", {"limit": 1001}).status == 400
    r = fd.rpc("sharing/list_folders/continue", {"cursor": "nonsense"})
    assert r.status == 409 and r.json()["error"][".tag"] == "invalid_cursor"
    # Without any shared folder: one empty page and no cursor.
    out = fd.rpc("sharing/list_folders", {}).json()
    assert out == {"entries": []}


def test_namespace_root_lists_reads_and_keeps_apart(fd):
    fd.add_file("/own.txt", b"own\n")
    sid = fd.add_shared_folder("Photos")["shared_folder_id"]
    ns = fd.in_namespace(sid)
    ns.add_file("/a/b.txt", b"bee\n")
    ns.add_file("/top.txt", b"top\n")
    entries, _ = list_all(fd, headers=ns_header(sid), recursive=True)
    assert sorted(e["path_display"] for e in entries) == ["/a", "/a/b.txt", "/top.txt"]
    files = {e["path_display"]: e for e in entries if e[".tag"] == "file"}
    # A download by path and by rev:, and a range.
    r = fd.download("/a/b.txt", headers=ns_header(sid))
    assert r.status == 200 and r.body == b"bee\n"
    r = fd.download("rev:" + files["/top.txt"]["rev"], headers=ns_header(sid), range="bytes=1-2")
    assert r.status == 206 and r.body == b"op"
    # get_metadata in the namespace; the account's own file is not there.
    r = fd.rpc("files/get_metadata", {"path": "/top.txt"}, headers=ns_header(sid))
    assert r.status == 200 and r.json()["name"] == "top.txt"
    assert fd.rpc("files/get_metadata", {"path": "/own.txt"}, headers=ns_header(sid)).status == 409
    # The account's own tree holds none of the namespace's files, and revs do not collide.
    own, _ = list_all(fd, recursive=True)
    assert [e["name"] for e in own] == ["own.txt"]
    assert own[0]["rev"] not in {e["rev"] for e in files.values()}
    # Control reads of the namespace.
    assert ns.content("/a/b.txt") == b"bee\n"


def test_namespace_changes_follow_cursor(fd):
    sid = fd.add_shared_folder("Docs")["shared_folder_id"]
    ns = fd.in_namespace(sid)
    ns.add_file("/one.txt", b"1")
    _, cursor = list_all(fd, headers=ns_header(sid))
    ns.add_file("/two.txt", b"2")
    r = fd.rpc("files/list_folder/continue", {"cursor": cursor}, headers=ns_header(sid))
    assert r.status == 200
    assert [e["name"] for e in r.json()["entries"]] == ["two.txt"]


def test_no_permission_and_unknown_namespace(fd):
    sid = fd.add_shared_folder("Secret", readable=False)["shared_folder_id"]
    for ns_id in (sid, "999999"):
        r = fd.rpc("files/list_folder", {"path": ""}, headers=ns_header(ns_id))
        assert r.status == 422
        assert r.json()["error"] == {".tag": "no_permission"}


def test_unshare_removes_folder_and_its_namespace(fd):
    sid = fd.add_shared_folder("Gone")["shared_folder_id"]
    fd.in_namespace(sid).add_file("/x.txt", b"x")
    assert fd.rpc("files/list_folder", {"path": ""}, headers=ns_header(sid)).status == 200
    fd.unshare_folder(sid)
    assert all_shared(fd, 10) == [[]]
    assert fd.rpc("files/list_folder", {"path": ""}, headers=ns_header(sid)).status == 422
    with pytest.raises(ControlError) as e:
        fd.unshare_folder(sid)
    assert e.value.status == 404
    with pytest.raises(ControlError) as e:
        fd.in_namespace(sid).add_file("/y.txt", b"y")
    assert e.value.status == 404


def test_list_folders_needs_sharing_read(fd):
    fd.add_token("files-only", scopes=["files.metadata.read", "files.content.read"])
    r = fd.rpc("sharing/list_folders", {}, token="files-only")
    assert r.status == 401 and "missing_scope" in r.text


def test_control_rejects_bad_input(fd):
    for bad in ({}, {"name": ""}, {"name": "a/b"}, {"name": "x", "access_type": "boss"},
                {"name": "x", "mounted_at": "rel"}):
        with pytest.raises(ControlError) as e:
            fd._call("POST", "/_control/shared_folders", bad)
        assert e.value.status == 400


def test_namespace_revisions_and_thumbnails(fd):
    sid = fd.add_shared_folder("History")["shared_folder_id"]
    ns = fd.in_namespace(sid)
    ns.add_file("/doc.txt", b"first\n")
    ns.add_file("/doc.txt", b"second\n")
    r = fd.rpc("files/list_revisions", {"path": "/doc.txt"}, headers=ns_header(sid))
    assert r.status == 200, r.text
    revs = [e["rev"] for e in r.json()["entries"]]
    assert len(revs) == 2
    old = fd.download("rev:" + revs[1], headers=ns_header(sid))
    assert old.status == 200 and old.body == b"first\n"
    # Not in the account's own namespace.
    assert fd.rpc("files/list_revisions", {"path": "/doc.txt"}).status == 409
    r = fd.rpc("files/get_thumbnail_batch", {"entries": [{"path": "/doc.txt"}]}, headers=ns_header(sid))
    assert r.status == 200, r.text
    assert r.json()["entries"][0][".tag"] == "failure"   # a text file has no thumbnail, in its namespace
    r = fd.rpc("files/get_thumbnail_batch", {"entries": [{"path": "/doc.txt"}]})
    assert r.json()["entries"][0]["failure"]["path"][".tag"] == "not_found"
