"""files/download: ranges, 416, rev:, id:, GET ?arg=, export, content_hash."""

import hashlib
import json

from fakedropbox.content import content_hash_hex


def dropbox_hash(data):
    """Independent implementation of docs/DROPBOX-API.md, "content_hash"."""
    blocks = b"".join(hashlib.sha256(data[i:i + 4194304]).digest()
                      for i in range(0, len(data), 4194304))
    return hashlib.sha256(blocks).hexdigest()


def test_hash_vectors():
    assert dropbox_hash(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    for n, h in ((1, "1cd6ef71e6e0ff46ad2609d403dc3fee244417089aa4461245a4e4fe23a55e42"),
                 (4194304, "d4d63bac5b866c71620185392a8a6218ac1092454a2d16f820363b69852befa3"),
                 (4194305, "8f553da8d00d0bf509d8470e242888be33019c20c0544811f5b2b89e98360b92")):
        assert content_hash_hex(b"A" * n) == h == dropbox_hash(b"A" * n)


def test_full_download_and_result_header(sample):
    r = sample.download("/Documents/Welcome.txt")
    assert r.status == 200
    assert r.headers["content-type"] == "application/octet-stream"
    md = r.result
    assert md["name"] == "Welcome.txt" and md["size"] == len(r.body)
    assert md["content_hash"] == dropbox_hash(r.body)
    assert r.body == sample.content("/Documents/Welcome.txt")
    assert r.headers["dropbox-api-result"].isascii()
    assert "x-dropbox-request-id" in r.headers and "date" in r.headers


def test_unicode_result_header_is_ascii_escaped(sample):
    r = sample.download("/Documents/日本語のファイル.txt")
    assert r.status == 200 and r.headers["dropbox-api-result"].isascii()
    assert r.result["name"] == "日本語のファイル.txt"


def test_ranges(fd):
    data = bytes(range(256)) * 40
    fd.add_file("/r.bin", data)
    for rng, (a, b) in (("bytes=7-11", (7, 11)), ("bytes=100-", (100, len(data) - 1)),
                        ("bytes=-10", (len(data) - 10, len(data) - 1)),
                        ("bytes=0-999999", (0, len(data) - 1)),
                        ("bytes=-999999", (0, len(data) - 1))):
        r = fd.download("/r.bin", range=rng)
        assert r.status == 206, rng
        assert r.body == data[a:b + 1], rng
        assert r.headers["content-range"] == "bytes %d-%d/%d" % (a, b, len(data))
        assert int(r.headers["content-length"]) == b - a + 1


def test_unsatisfiable_ranges_416(fd):
    fd.add_file("/r.bin", b"0123456789")
    fd.add_file("/empty", b"")
    for path, rng in (("/r.bin", "bytes=10-"), ("/r.bin", "bytes=50-60"), ("/r.bin", "bytes=-0"),
                      ("/empty", "bytes=0-0"), ("/empty", "bytes=0-")):
        r = fd.download(path, range=rng)
        assert r.status == 416, (path, rng)
        assert r.headers["content-type"] == "application/json"
        assert r.json()["error_summary"].startswith("range/not_satisfiable")
        assert r.headers["content-range"].startswith("bytes */")
    assert fd.download("/empty").status == 200


def test_malformed_range_ignored(fd):
    fd.add_file("/r.bin", b"0123456789")
    for rng in ("bytes=5-2", "bytes=0-1,4-5", "items=0-1", "bytes=x"):
        r = fd.download("/r.bin", range=rng)
        assert r.status == 200 and r.body == b"0123456789", rng


def test_get_with_arg_param_and_id_path(sample):
    md = sample.rpc("files/get_metadata", {"path": "/Documents/Café ☕.txt"}).json()
    r = sample.download(arg={"path": md["id"]}, get=True, range="bytes=3-")
    assert r.status == 206 and r.body == "Un café, s'il vous plaît.\n".encode()[3:]
    r = sample.download(arg={"path": "rev:" + md["rev"]}, get=True)
    assert r.status == 200 and r.result["rev"] == md["rev"]


def test_old_revision_download(fd):
    v1 = fd.add_file("/doc.txt", b"version one")
    v2 = fd.add_file("/doc.txt", b"version two!")
    assert v1["rev"] != v2["rev"] and v1["id"] == v2["id"]
    r = fd.download("rev:" + v1["rev"])
    assert r.status == 200 and r.body == b"version one"
    assert r.result["rev"] == v1["rev"] and r.result["size"] == 11
    assert r.result["content_hash"] == dropbox_hash(b"version one")
    r = fd.download("rev:" + v2["rev"], range="bytes=8-")
    assert r.status == 206 and r.body == b"two!"
    md = fd.rpc("files/get_metadata", {"path": "rev:" + v1["rev"]}).json()
    assert md["rev"] == v1["rev"]
    fd.delete("/doc.txt")
    assert fd.download("/doc.txt").status == 409
    assert fd.download("rev:" + v2["rev"]).body == b"version two!"
    assert fd.download("rev:" + "f" * 12).status == 409


def test_etag_if_none_match(fd):
    md = fd.add_file("/e.txt", b"etag")
    r = fd.download("/e.txt")
    etag = r.headers["etag"]
    assert md["rev"] in etag
    r = fd.download("/e.txt", headers={"If-None-Match": etag})
    assert r.status == 304 and r.body == b""


def test_unsupported_file_and_export(sample):
    r = sample.download("/Documents/Project plan.paper")
    assert r.status == 409
    assert r.json() == {"error_summary": "unsupported_file/..", "error": {".tag": "unsupported_file"}}
    r = sample.download("/Documents/Project plan.paper", route="files/export")
    assert r.status == 200 and b"<html" in r.body
    res = r.result
    assert res["export_metadata"]["name"] == "Project plan.html"
    assert res["export_metadata"]["size"] == len(r.body)
    assert res["export_metadata"]["export_hash"] == dropbox_hash(r.body)
    assert res["file_metadata"]["is_downloadable"] is False
    r = sample.download(arg={"path": "/Documents/Project plan.paper", "export_format": "markdown"},
                        route="files/export")
    assert r.status == 200 and r.body.startswith(b"# Project plan")
    r = sample.download(arg={"path": "/Documents/Project plan.paper", "export_format": "docx"},
                        route="files/export")
    assert r.status == 409 and r.json()["error"][".tag"] == "invalid_export_format"
    r = sample.download("/Documents/Welcome.txt", route="files/export")
    assert r.status == 409 and r.json()["error"][".tag"] == "non_exportable"


def test_symlink_metadata_and_bytes(sample):
    md = sample.rpc("files/get_metadata", {"path": "/Documents/latest report"}).json()
    assert md["symlink_info"] == {"target": "Report 2023.pdf"}
    r = sample.download("/Documents/latest report")
    assert r.status == 200 and r.body == b"Report 2023.pdf"
    md = sample.rpc("files/get_metadata", {"path": "rev:" + md["rev"]}).json()
    assert "symlink_info" not in md


def test_png_photos_are_real(sample):
    import zlib
    import struct
    r = sample.download("/Photos/Photo 1.png")
    b = r.body
    assert b[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", b[16:24])
    assert (w, h) == (64, 48)
    idat_len = struct.unpack(">I", b[33:37])[0]
    raw = zlib.decompress(b[41:41 + idat_len])
    assert len(raw) == h * (1 + 3 * w)


def test_large_synthetic_file_ranges(fd):
    size = 9 * 1024 * 1024 + 123
    md = fd.add_file("/big.bin", size=size, seed=42)
    full = fd.content("/big.bin")
    assert len(full) == size
    assert md["content_hash"] == dropbox_hash(full)
    r = fd.download("/big.bin")
    assert r.body == full and r.result["content_hash"] == md["content_hash"]
    for a, b in ((0, 15), (4096, 4096 + 31), (4194300, 4194400), (size - 100, size - 1)):
        r = fd.download("/big.bin", range="bytes=%d-%d" % (a, b))
        assert r.body == full[a:b + 1]
    # each 4 KiB block is stamped with its index (misplaced ranges are detectable)
    import struct
    assert struct.unpack("<Q", full[4096 * 5:4096 * 5 + 8])[0] == 5
    fd.add_file("/big2.bin", size=size, seed=43)
    assert fd.content("/big2.bin") != full


def test_gib_file_is_quick(fd):
    import time
    t0 = time.monotonic()
    md = fd.add_file("/huge.bin", size=1 << 30, seed=1)
    assert time.monotonic() - t0 < 15
    assert md["size"] == 1 << 30 and len(md["content_hash"]) == 64
    r = fd.download("/huge.bin", range="bytes=-5")
    assert r.status == 206 and len(r.body) == 5
    assert r.headers["content-range"] == "bytes %d-%d/%d" % ((1 << 30) - 5, (1 << 30) - 1, 1 << 30)


def test_control_tree_matches_api(fd):
    fd.add_file("/a/b.txt", b"bee")
    fd.add_file("/a/l", b"/a/b.txt", symlink_target="/a/b.txt")
    tree = fd.tree()
    assert [(e["tag"], e["path_display"]) for e in tree] == [("folder", "/a"), ("file", "/a/b.txt"), ("file", "/a/l")]
    f = tree[1]
    assert f["content_hash"] == dropbox_hash(b"bee") and f["size"] == 3 and f["is_downloadable"] is True
    assert tree[2]["symlink_target"] == "/a/b.txt"
    assert json.loads(json.dumps(tree))
