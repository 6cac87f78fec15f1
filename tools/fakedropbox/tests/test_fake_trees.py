"""Tree sources: synthetic determinism/size/speed, evil names, sample, root-dir, users routes."""

import hashlib
import os
import time
import unicodedata


def dropbox_hash(data):
    blocks = b"".join(hashlib.sha256(data[i:i + 4194304]).digest() for i in range(0, len(data), 4194304))
    return hashlib.sha256(blocks).hexdigest()


def test_synthetic_determinism(start):
    a = start("--quiet", "--synthetic", "3000", "--seed", "5")
    b = start("--quiet", "--synthetic", "3000", "--seed", "5")
    c = start("--quiet", "--synthetic", "3000", "--seed", "6")
    ta, tb, tc = a.tree(), b.tree(), c.tree()
    assert ta == tb
    assert ta != tc
    assert 2900 <= len(ta) <= 3100
    folders = sum(1 for e in ta if e["tag"] == "folder")
    assert 200 <= folders <= 400
    la, _ = a.list_all("", recursive=True, limit=1000)
    lb, _ = b.list_all("", recursive=True, limit=1000)
    assert la == lb
    f = next(e for e in ta if e["tag"] == "file" and (e["size"] or 0) > 5000 and e["is_downloadable"])
    assert a.content(f["path_display"]) == b.content(f["path_display"])


def test_synthetic_hashes_match_content(start):
    f = start("--quiet", "--synthetic", "400", "--seed", "2")
    files = [e for e in f.tree() if e["tag"] == "file" and e["is_downloadable"]]
    sizes = [e["size"] for e in files]
    assert 0 in sizes and max(sizes) > 1000
    for e in files[:150]:
        data = f.content(e["path_display"])
        assert len(data) == e["size"]
        assert dropbox_hash(data) == e["content_hash"], e["path_display"]
    big = max(files, key=lambda e: e["size"])
    r = f.download(big["id"])
    assert r.result["content_hash"] == dropbox_hash(r.body) == big["content_hash"]


def test_synthetic_names_are_nasty(start):
    f = start("--quiet", "--synthetic", "2000")
    entries, _ = f.list_all("", recursive=True, limit=2000)
    names = [e["name"] for e in entries]
    assert any(n.startswith(" ") for n in names) and any(n.endswith(" ") for n in names)
    assert "a.b.c" in names and ".hidden" in names
    assert any("\n" in n for n in names) and any("\\" in n for n in names)
    assert any(len(n.encode()) > 255 and len(n) <= 255 for n in names)
    assert any(ord(c) > 0xFFFF for n in names for c in n)  # emoji
    cafes = [e for e in entries if unicodedata.normalize("NFC", e["name"]) == "café.txt"]
    assert len(cafes) == 2
    assert {unicodedata.is_normalized("NFC", e["name"]) for e in cafes} == {True, False}
    assert cafes[0]["path_lower"].rpartition("/")[0] != cafes[1]["path_lower"].rpartition("/")[0]
    assert any("symlink_info" in e for e in entries)
    assert any(e.get("is_downloadable") is False for e in entries)
    for e in entries:
        assert "/" not in e["name"] and e["name"] not in ("", ".", "..")
        assert e["path_lower"] == unicodedata.normalize("NFC", e["path_display"]).lower()
    assert len({e["path_lower"] for e in entries}) == len(entries)


def test_evil_names_only_with_flag(start):
    plain = start("--quiet", "--synthetic", "300")
    assert all(not e["path_lower"].startswith("/evil") for e in plain.list_all("", recursive=True)[0])
    f = start("--quiet", "--synthetic", "300", "--evil-names")
    r = f.rpc("files/list_folder", {"path": "/evil"})
    assert r.status == 200
    raw = r.body
    assert b"\\udc80" in raw  # lone surrogate travels as an escape
    names = [e["name"] for e in r.json()["entries"]]
    for n in ("", ".", "..", "a/b", "nul\x00byte.txt", "lone \udc80 surrogate.txt", "Dup.txt", "dup.txt", "sub/dir"):
        assert n in names, repr(n)
    ab = next(e for e in r.json()["entries"] if e["name"] == "a/b")
    assert ab["path_display"] == "/evil/a/b"
    dups = [e for e in r.json()["entries"] if e["name"].lower() == "dup.txt"]
    assert dups[0]["path_lower"] == dups[1]["path_lower"]
    r = f.download(ab["id"])
    assert r.status == 200 and r.body == b"evil bytes\n"


def test_100k_synthetic_starts_fast(start):
    t0 = time.monotonic()
    f = start("--quiet", "--synthetic", "100000")
    assert time.monotonic() - t0 < 10  # ~1 s on an idle machine
    r = f.rpc("files/list_folder", {"path": "", "limit": 10})
    assert r.status == 200


def test_big_folder(start):
    f = start("--quiet", "--synthetic", "100", "--big-folder", "3000")
    entries, _ = f.list_all("/big", limit=2000)
    assert len(entries) == 3000
    assert entries[0]["name"] == "file_0000000.dat"


def test_sample_account_shape(sample):
    top = {e["name"] for e in sample.rpc("files/list_folder", {"path": ""}).json()["entries"]}
    assert {"Documents", "Photos", "Camera Uploads", "Many Files"} <= top
    docs = {e["name"] for e in sample.rpc("files/list_folder", {"path": "/Documents"}).json()["entries"]}
    assert {"Café ☕.txt", "日本語のファイル.txt"} <= docs
    assert any(not unicodedata.is_normalized("NFC", n) for n in docs)
    assert sample.download("/Documents/Report 2023.pdf").body.startswith(b"%PDF-")


def test_root_dir(start, tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "hello.txt").write_bytes(b"hello world")
    (tmp_path / "Big.bin").write_bytes(os.urandom(5 * 1024 * 1024))
    os.symlink("sub/hello.txt", tmp_path / "link")
    f = start("--quiet", "--root-dir", str(tmp_path))
    entries, _ = f.list_all("", recursive=True)
    by = {e["path_lower"]: e for e in entries}
    assert set(by) == {"/sub", "/sub/hello.txt", "/big.bin", "/link"}
    assert by["/link"]["symlink_info"] == {"target": "sub/hello.txt"}
    data = (tmp_path / "Big.bin").read_bytes()
    assert by["/big.bin"]["content_hash"] == dropbox_hash(data)
    assert f.download("/Big.bin", range="bytes=4194300-4194310").body == data[4194300:4194311]
    assert f.download("/sub/hello.txt").body == b"hello world"


def test_empty_account_and_space_usage(fd):
    r = fd.rpc("files/list_folder", {"path": ""})
    assert r.json()["entries"] == [] and r.json()["has_more"] is False
    fd.add_file("/a", b"12345")
    u = fd.rpc("users/get_space_usage", None).json()
    assert u == {"used": 5, "allocation": {".tag": "individual", "allocated": 2 * 1024 ** 4}}


def test_team_and_quota_flags(start):
    f = start("--quiet", "--team", "--quota-used", "1000", "--quota-allocated", "5000")
    u = f.rpc("users/get_space_usage", None).json()
    assert u["used"] == 1000
    a = u["allocation"]
    assert a[".tag"] == "team" and a["allocated"] == 5000
    assert a["user_within_team_space_limit_type"] == {".tag": "off"}
    assert a["user_within_team_space_allocated"] == 0 and "used" in a
    acc = f.rpc("users/get_current_account", None).json()
    assert acc["root_info"][".tag"] == "team"
    assert acc["root_info"]["root_namespace_id"] != acc["root_info"]["home_namespace_id"]


def test_account_shape(sample):
    acc = sample.rpc("users/get_current_account", None).json()
    assert len(acc["account_id"]) == 40 and acc["account_id"].startswith("dbid:")
    assert acc["root_info"][".tag"] == "user" and len(acc["locale"]) >= 2
    assert set(acc["name"]) == {"given_name", "surname", "familiar_name", "display_name", "abbreviated_name"}
