"""files/get_thumbnail_batch: batch limits, order, per-entry failures, real images
(PNG, JPEG and WebP checked byte by byte here), sizes and modes, id:/rev: paths,
changed files, faults, latency, stats, and --photos."""

import base64
import ctypes
import ctypes.util
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zlib

import pytest

from fakedropbox.client import FakeDropbox

ROUTE = "files/get_thumbnail_batch"
CAM = "/Camera Uploads"
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def photos():
    """25 synthetic photos (plus PANO_0001.jpg and notes.txt); tests must not mutate it."""
    with FakeDropbox.start("--photos", "25", "--seed", "5", "--quiet") as f:
        yield f


def batch(fd, entries, **kw):
    return fd.rpc(ROUTE, {"entries": entries}, **kw)


def ok_entries(r):
    assert r.status == 200, r.text
    assert r.headers["content-type"] == "application/json"
    return r.json()["entries"]


def image_of(entry):
    assert entry[".tag"] == "success", entry
    return base64.b64decode(entry["thumbnail"], validate=True)


def png_header(w, h):
    """The first bytes of a real PNG of w x h pixels (enough for its size to be read)."""
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + \
        struct.pack(">I", zlib.crc32(b"IHDR" + ihdr)) + b"rest of the file" * 10


# ---- independent image checks ---------------------------------------------------------------

def check_png(data):
    """-> (width, height, rows of RGB bytes); asserts signature, chunk CRCs, IHDR, IDAT length."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    i, chunks = 8, []
    while i < len(data):
        n = struct.unpack(">I", data[i:i + 4])[0]
        tag, body = data[i + 4:i + 8], data[i + 8:i + 8 + n]
        crc = struct.unpack(">I", data[i + 8 + n:i + 12 + n])[0]
        assert crc == zlib.crc32(tag + body) & 0xFFFFFFFF, tag
        chunks.append((tag, body))
        i += 12 + n
    assert i == len(data)
    assert chunks[0][0] == b"IHDR" and chunks[-1] == (b"IEND", b"")
    w, h, depth, ctype, comp, filt, inter = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, ctype, comp, filt, inter) == (8, 2, 0, 0, 0)
    raw = zlib.decompress(b"".join(b for t, b in chunks if t == b"IDAT"))
    assert len(raw) == h * (1 + 3 * w)
    rows = [raw[y * (1 + 3 * w):(y + 1) * (1 + 3 * w)] for y in range(h)]
    assert all(r[0] == 0 for r in rows)  # filter type None
    return w, h, [r[1:] for r in rows]


def _huffman(bits, vals):
    table, code, k = {}, 0, 0
    for length in range(1, 17):
        for _ in range(bits[length - 1]):
            table[(length, code)] = vals[k]
            code += 1
            k += 1
        code <<= 1
    return table


def check_jpeg(data):
    """Parse a baseline JPEG and decode its whole scan (Huffman + coefficients).
    -> (width, height, [DC of each component per block])."""
    assert data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9"
    i, tables, frame = 2, {}, None
    while True:
        assert data[i] == 0xFF
        m = data[i + 1]
        n = struct.unpack(">H", data[i + 2:i + 4])[0]
        seg = data[i + 4:i + 2 + n]
        if m == 0xC0:
            prec, h, w, nc = struct.unpack(">BHHB", seg[:6])
            assert prec == 8 and nc == 3
            frame = (w, h, [seg[6 + 3 * c:9 + 3 * c] for c in range(nc)])
            assert all(c[1] == 0x11 for c in frame[2])
        elif m == 0xC4:
            j = 0
            while j < len(seg):
                cls_id, bits = seg[j], seg[j + 1:j + 17]
                vals = seg[j + 17:j + 17 + sum(bits)]
                tables[cls_id] = _huffman(bits, vals)
                j += 17 + sum(bits)
        elif 0xC1 <= m <= 0xCF and m not in (0xC4, 0xC8, 0xCC):
            raise AssertionError("not baseline: marker %x" % m)
        elif m == 0xDA:
            sel = {seg[1 + 2 * c]: seg[2 + 2 * c] for c in range(seg[0])}
            i += 2 + n
            break
        i += 2 + n
    assert frame is not None
    w, h, comps = frame
    scan = data[i:-2]
    assert b"\xff" not in scan.replace(b"\xff\x00", b"")  # no marker inside the scan
    scan = scan.replace(b"\xff\x00", b"\xff")
    bits = "".join(format(b, "08b") for b in scan)
    pos = 0

    def symbol(table):
        nonlocal pos
        for length in range(1, 17):
            key = (length, int(bits[pos:pos + length], 2))
            if key in table:
                pos += length
                return table[key]
        raise AssertionError("bad Huffman code at bit %d" % pos)

    def extend(n):
        nonlocal pos
        if n == 0:
            return 0
        v = int(bits[pos:pos + n], 2)
        pos += n
        return v if v >= 1 << (n - 1) else v - (1 << n) + 1

    dcs, pred = [], {}
    for _ in range(-(-w // 8) * -(-h // 8)):
        block = []
        for cid, _s, _q in comps:
            dc_t, ac_t = tables[sel[cid] >> 4], tables[0x10 | (sel[cid] & 15)]
            pred[cid] = pred.get(cid, 0) + extend(symbol(dc_t))
            block.append(pred[cid])
            k = 1
            while k < 64:
                rs = symbol(ac_t)
                if rs == 0:
                    break
                k += (rs >> 4) + 1
                extend(rs & 15)
        dcs.append(tuple(block))
    rest = bits[pos:]
    assert len(rest) < 8 and set(rest) <= {"1"}  # only padding is left
    return w, h, dcs


def check_webp(data):
    """RIFF/WEBP/VP8L container and header -> (width, height)."""
    assert data[:4] == b"RIFF" and data[8:16] == b"WEBPVP8L"
    assert struct.unpack("<I", data[4:8])[0] == len(data) - 8
    n = struct.unpack("<I", data[16:20])[0]
    assert len(data) == 20 + n + (n & 1)
    assert data[20] == 0x2F
    v = int.from_bytes(data[21:25], "little")
    assert v >> 29 == 0  # version 0
    return (v & 0x3FFF) + 1, ((v >> 14) & 0x3FFF) + 1


def _libwebp():
    name = ctypes.util.find_library("webp")
    if not name:
        return None
    lib = ctypes.CDLL(name)
    lib.WebPDecodeRGB.restype = ctypes.c_void_p
    return lib


def photo_dims(md):
    """The fake's rule for a synthetic photo: the content_hash's first byte even ->
    4000 x 3000, odd -> 3000 x 4000."""
    return (4000, 3000) if int(md["content_hash"][:2], 16) % 2 == 0 else (3000, 4000)


# ---- the batch ------------------------------------------------------------------------------

def test_batch_of_25_in_the_order_asked(photos):
    names = ["IMG_%04d.jpg" % i for i in range(1, 26)]
    asked = names[::2] + names[1::2]
    got = ok_entries(batch(photos, [{"path": "%s/%s" % (CAM, n), "format": "png"} for n in asked]))
    assert [e[".tag"] for e in got] == ["success"] * 25
    assert [e["metadata"]["name"] for e in got] == asked
    # The metadata is the file's FileMetadata, exactly as a listing shows it.
    listed = {e["name"]: e for e in photos.list_all(CAM)[0]}
    for e in got:
        assert e["metadata"] == listed[e["metadata"]["name"]]
        w, h, _ = check_png(image_of(e))
        assert (w, h) in ((64, 48), (48, 64))
        assert (w, h) == tuple(x * 64 // 4000 for x in photo_dims(e["metadata"]))


def test_more_than_25_is_too_many_files(photos):
    r = batch(photos, [{"path": "%s/IMG_0001.jpg" % CAM}] * 26)
    assert r.status == 409
    assert r.json() == {"error_summary": "too_many_files/..", "error": {".tag": "too_many_files"}}
    assert ok_entries(batch(photos, [])) == []


def test_failures_per_entry_keep_the_order(photos):
    photos_md = photos.rpc("files/get_metadata", {"path": CAM + "/IMG_0003.jpg"}).json()
    got = ok_entries(batch(photos, [
        {"path": CAM + "/IMG_0003.jpg"},
        {"path": "/missing.jpg"},
        {"path": CAM + "/notes.txt"},
        {"path": CAM + "/PANO_0001.jpg"},
        {"path": CAM},
        {"path": "/no/such/folder/x.png"},
        {"path": CAM + "/IMG_0003.jpg/inside.jpg"},
        {"path": "id:a4ayc_80_OEAAAAAAAAAXw"},
        {"path": "rev:5a0000999999"},
        {"path": CAM.lower() + "/img_0003.JPG"},
    ]))
    assert got[0][".tag"] == "success" and got[0]["metadata"] == photos_md
    fail = [e.get("failure") for e in got[1:]]
    nf = {".tag": "path", "path": {".tag": "not_found"}}
    assert fail == [nf, {".tag": "unsupported_extension"}, {".tag": "unsupported_image"},
                    {".tag": "path", "path": {".tag": "not_file"}}, nf, nf, nf, nf, None]
    assert got[9][".tag"] == "success" and got[9]["metadata"] == photos_md
    assert all(set(e) == {".tag", "failure"} for e in got[1:9])


def test_size_limit_extensions_and_empty_files(fd):
    fd.add_file("/big.jpg", size=20 * MIB, seed=1)
    fd.add_file("/bigger.jpg", size=20 * MIB + 1, seed=1)
    fd.add_file("/empty.png", b"")
    for ext in ("jpg", "JPEG", "png", "Tiff", "tif", "gif", "webp", "ppm", "BMP"):
        fd.add_file("/a." + ext, size=1000, seed=3)
    for name in ("a.heic", "a.pdf", "jpg", "a.jpg.txt", ".png"):
        fd.add_file("/" + name, size=1000, seed=3)
    got = ok_entries(batch(fd, [{"path": p} for p in (
        "/big.jpg", "/bigger.jpg", "/empty.png", "/a.jpg", "/a.JPEG", "/a.png", "/a.Tiff",
        "/a.tif", "/a.gif", "/a.webp", "/a.ppm", "/a.BMP", "/a.heic", "/a.pdf", "/jpg",
        "/a.jpg.txt", "/.png")]))
    tags = [e[".tag"] if e[".tag"] == "success" else e["failure"][".tag"] for e in got]
    assert tags == ["success", "unsupported_image", "unsupported_image"] + ["success"] * 9 + \
        ["unsupported_extension"] * 4 + ["success"]


def test_export_only_documents_have_no_thumbnail(fd):
    fd.add_file("/doc.paper", size=100, seed=1, export_as="html")
    got = ok_entries(batch(fd, [{"path": "/doc.paper"}]))
    assert got == [{".tag": "failure", "failure": {".tag": "unsupported_extension"}}]


# ---- the images -----------------------------------------------------------------------------

def test_defaults_are_jpeg_w64h64_strict(fd):
    fd.add_file("/p.png", png_header(4000, 3000))
    default, explicit, tagged = ok_entries(batch(fd, [
        {"path": "/p.png"},
        {"path": "/p.png", "format": "jpeg", "size": "w64h64", "mode": "strict"},
        {"path": "/p.png", "format": {".tag": "jpeg"}, "size": {".tag": "w64h64"},
         "mode": {".tag": "strict"}, "exclude_media_info": True}]))
    img = image_of(default)
    assert img == image_of(explicit) == image_of(tagged)
    w, h, dcs = check_jpeg(img)
    assert (w, h) == (64, 48) and len(dcs) == 8 * 6


@pytest.mark.parametrize("size,mode,landscape,portrait", [
    ("w32h32", "strict", (32, 24), (24, 32)),
    ("w64h64", "strict", (64, 48), (48, 64)),
    ("w128h128", "strict", (128, 96), (96, 128)),
    ("w256h256", "bestfit", (256, 192), (192, 256)),
    ("w480h320", "strict", (427, 320), (240, 320)),
    ("w480h320", "bestfit", (427, 320), (320, 427)),
    ("w480h320", "fitone_bestfit", (480, 360), (360, 480)),
    ("w640h480", "strict", (640, 480), (360, 480)),
    ("w640h480", "bestfit", (640, 480), (480, 640)),
    ("w960h640", "fitone_bestfit", (960, 720), (720, 960)),
    ("w1024h768", "strict", (1024, 768), (576, 768)),
    ("w2048h1536", "strict", (2048, 1536), (1152, 1536)),
    ("w2048h1536", "fitone_bestfit", (2048, 1536), (1536, 2048)),
])
def test_sizes_and_modes(fd, size, mode, landscape, portrait):
    fd.add_file("/land.png", png_header(4000, 3000))
    fd.add_file("/port.png", png_header(3000, 4000))
    got = ok_entries(batch(fd, [{"path": p, "format": "png", "size": size, "mode": mode}
                                for p in ("/land.png", "/port.png")]))
    assert check_png(image_of(got[0]))[:2] == landscape
    assert check_png(image_of(got[1]))[:2] == portrait


def test_never_scaled_up_and_original(fd):
    fd.add_file("/small.png", png_header(40, 30))
    fd.add_file("/tall.gif", b"GIF89a" + struct.pack("<HH", 10, 900) + b"\x00" * 20)
    fd.add_file("/bmp.bmp", b"BM" + b"\x00" * 16 + struct.pack("<ii", 300, -200) + b"\x00" * 30)
    got = ok_entries(batch(fd, [
        {"path": "/small.png", "format": "png", "size": "w256h256"},
        {"path": "/small.png", "format": "png", "size": "w32h32", "mode": "fitone_bestfit"},
        {"path": "/tall.gif", "format": "png", "size": "w64h64"},
        {"path": "/bmp.bmp", "format": "png", "size": "w128h128"},
        {"path": "/small.png", "format": "png", "mode": "original"}]))
    assert [check_png(image_of(e))[:2] for e in got] == [(40, 30), (40, 30), (1, 64), (128, 85),
                                                         (40, 30)]
    # The fake's own cap: no side over 4096 pixels, whatever the mode.
    fd.add_file("/wide.gif", b"GIF89a" + struct.pack("<HH", 60000, 30) + b"\x00" * 20)
    got = ok_entries(batch(fd, [{"path": "/wide.gif", "format": f, "size": "w2048h1536", "mode": m}
                                for f, m in (("png", "original"), ("webp", "fitone_bestfit"))]))
    assert check_png(image_of(got[0]))[:2] == (4096, 2)
    assert check_webp(image_of(got[1])) == (4096, 2)


def test_real_jpeg_header_gives_the_size(fd):
    exif = b"\xff\xe1" + struct.pack(">H", 5000) + b"Exif\x00\x00" + b"\x00" * 4992
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, 1536, 2048, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    fd.add_file("/real.jpg", b"\xff\xd8" + exif + sof + b"\x00" * 100)
    got = ok_entries(batch(fd, [{"path": "/real.jpg", "format": "png", "size": "w256h256"}]))
    assert check_png(image_of(got[0]))[:2] == (256, 192)


def test_png_pixels_follow_the_documented_picture(fd):
    """A 4 x 4 grid of cells: every row of a cell row is identical, the cells differ."""
    fd.add_file("/p.png", png_header(4000, 3000))
    w, h, rows = check_png(image_of(ok_entries(batch(
        fd, [{"path": "/p.png", "format": "png", "size": "w128h128"}]))[0]))
    assert (w, h) == (128, 96)
    for g in range(4):
        band = rows[g * 24:(g + 1) * 24]
        assert len(set(band)) == 1
    assert len({rows[0], rows[24], rows[48], rows[72]}) == 4
    assert len({rows[0][i:i + 3] for i in range(0, 3 * w, 3)}) > 16  # shaded across each cell


@pytest.mark.parametrize("size,dims", [("w64h64", (64, 48)), ("w640h480", (640, 480)),
                                       ("w2048h1536", (2048, 1536))])
def test_jpeg_is_a_decodable_baseline_jpeg(fd, size, dims, tmp_path):
    fd.add_file("/p.png", png_header(4000, 3000))
    img = image_of(ok_entries(batch(fd, [{"path": "/p.png", "format": "jpeg", "size": size}]))[0])
    w, h, dcs = check_jpeg(img)
    assert (w, h) == dims and len(dcs) == -(-w // 8) * -(-h // 8)
    assert len(set(dcs)) > 4  # not one flat colour
    tool = shutil.which("gdk-pixbuf-thumbnailer")
    if tool and size == "w64h64":  # a real decoder, where the machine has one
        src, out = tmp_path / "t.jpg", tmp_path / "t.png"
        src.write_bytes(img)
        subprocess.run([tool, "-s", "64", str(src), str(out)], check=True, timeout=30)
        decoded = out.read_bytes()
        assert decoded[:8] == b"\x89PNG\r\n\x1a\n" and decoded[12:16] == b"IHDR"
        assert struct.unpack(">II", decoded[16:24]) == (64, 48)


@pytest.mark.parametrize("size,dims", [("w32h32", (32, 24)), ("w960h640", (853, 640))])
def test_webp_is_a_lossless_webp(fd, size, dims):
    fd.add_file("/p.png", png_header(4000, 3000))
    img, png = (image_of(e) for e in ok_entries(batch(fd, [
        {"path": "/p.png", "format": "webp", "size": size},
        {"path": "/p.png", "format": "png", "size": size}])))
    assert check_webp(img) == dims
    lib = _libwebp()
    if lib is None:
        pytest.skip("no libwebp to decode with (container and header checked)")
    w, h = ctypes.c_int(), ctypes.c_int()
    p = lib.WebPDecodeRGB(img, len(img), ctypes.byref(w), ctypes.byref(h))
    assert p, "libwebp could not decode the thumbnail"
    try:
        pixels = ctypes.string_at(p, w.value * h.value * 3)
    finally:
        lib.WebPFree(ctypes.c_void_p(p))
    assert (w.value, h.value) == dims
    assert pixels == b"".join(check_png(png)[2])  # lossless: the same picture as the PNG


# ---- paths, revisions, changes ------------------------------------------------------------------

def test_id_and_rev_paths(fd):
    md = fd.add_file("/a/photo.jpg", size=3 * MIB, seed=11)
    first = ok_entries(batch(fd, [{"path": md["id"], "format": "png"},
                                  {"path": "rev:" + md["rev"], "format": "png"},
                                  {"path": md["id"] + "/nope.jpg"}]))
    assert first[0]["metadata"] == fd.rpc("files/get_metadata", {"path": "/a/photo.jpg"}).json()
    assert first[1]["metadata"]["rev"] == md["rev"]
    assert image_of(first[0]) == image_of(first[1])
    assert first[2]["failure"] == {".tag": "path", "path": {".tag": "not_found"}}
    # Overwritten: the path gives the new picture, the old rev the old one.
    new = fd.add_file("/a/photo.jpg", size=3 * MIB, seed=12)
    cur, old = ok_entries(batch(fd, [{"path": "/a/photo.jpg", "format": "png"},
                                     {"path": "rev:" + md["rev"], "format": "png"}]))
    assert cur["metadata"]["rev"] == new["rev"] != md["rev"]
    assert old["metadata"]["rev"] == md["rev"] and image_of(old) == image_of(first[0])
    assert image_of(cur) != image_of(first[0])
    # A deleted file's revision still has its thumbnail; its path does not.
    fd.delete("/a/photo.jpg")
    gone, kept = ok_entries(batch(fd, [{"path": "/a/photo.jpg"}, {"path": "rev:" + new["rev"]}]))
    assert gone["failure"] == {".tag": "path", "path": {".tag": "not_found"}}
    assert kept[".tag"] == "success"


def test_a_changed_photo_changes_the_thumbnail_same_bytes_do_not(fd):
    fd.add_file("/x.jpg", size=MIB, seed=1)
    fd.add_file("/copy.jpg", size=MIB, seed=1)
    fd.add_file("/other.jpg", size=MIB, seed=2)
    entries = [{"path": p, "format": f} for p in ("/x.jpg", "/copy.jpg", "/other.jpg")
               for f in ("png", "jpeg", "webp")]
    before = [image_of(e) for e in ok_entries(batch(fd, entries))]
    assert before[0:3] == before[3:6]          # same bytes, same picture
    assert all(a != b for a, b in zip(before[0:3], before[6:9]))
    fd.add_file("/x.jpg", size=MIB, seed=3)   # modified through the control API
    after = [image_of(e) for e in ok_entries(batch(fd, entries[:3]))]
    assert all(a != b for a, b in zip(after, before[0:3]))
    fd.move("/copy.jpg", "/moved/copy.jpg")    # a move keeps the bytes, so the picture
    moved = ok_entries(batch(fd, [{"path": "/moved/copy.jpg", "format": "png"}]))
    assert image_of(moved[0]) == before[3]


def test_team_home_view_paths(start):
    fd = start("--team", "--photos", "2", "--quiet")
    got = ok_entries(batch(fd, [{"path": CAM + "/IMG_0001.jpg"},
                                {"path": "/Franz Ferdinand" + CAM + "/IMG_0001.jpg"}]))
    assert got[0]["metadata"]["path_display"] == CAM + "/IMG_0001.jpg"
    assert got[1]["failure"] == {".tag": "path", "path": {".tag": "not_found"}}
    root = json.dumps({".tag": "root", "root": fd.info()["root_namespace_id"]})
    got = ok_entries(batch(fd, [{"path": "/Franz Ferdinand" + CAM + "/IMG_0001.jpg"}],
                           headers={"Dropbox-API-Path-Root": root}))
    assert got[0]["metadata"]["path_display"] == "/Franz Ferdinand" + CAM + "/IMG_0001.jpg"


# ---- the HTTP side: arguments, auth, faults, latency, stats -------------------------------------

@pytest.mark.parametrize("body,msg", [
    ({}, "missing required field 'entries'"),
    ({"entries": {}}, "entries: expected list"),
    ({"entries": ["/a.jpg"]}, "entries[0]: expected object"),
    ({"entries": [{"format": "png"}]}, "entries[0].missing required field 'path'"),
    ({"entries": [{"path": "a.jpg"}]}, "entries[0].path: 'a.jpg' did not match"),
    ({"entries": [{"path": "/a.jpg", "format": "gif"}]}, "entries[0].format: unknown tag 'gif'"),
    ({"entries": [{"path": "/a.jpg", "size": "w100h100"}]}, "entries[0].size: unknown tag"),
    ({"entries": [{"path": "/a.jpg", "mode": {".tag": "crop"}}]}, "entries[0].mode: unknown tag"),
    ({"entries": [{"path": "/a.jpg", "mode": 3}]}, "entries[0].mode: expected a union tag"),
])
def test_bad_arguments_are_400(photos, body, msg):
    r = photos.rpc(ROUTE, body)
    assert r.status == 400 and r.headers["content-type"].startswith("text/plain")
    assert r.text.startswith('Error in call to API function "files/get_thumbnail_batch": '
                             'request body: ' + msg), r.text


def test_rpc_style_and_auth(photos):
    arg = json.dumps({"entries": [{"path": CAM + "/IMG_0001.jpg"}]}).encode()
    # Content host but RPC style: a Dropbox-API-Arg request is not accepted.
    r = photos.request("POST", "/2/" + ROUTE, b"", {
        "Authorization": "Bearer test-token", "Dropbox-API-Arg": arg.decode()})
    assert r.status == 400 and "Content-Type" in r.text
    assert photos.request("GET", "/2/" + ROUTE, None, {"Authorization": "Bearer test-token"}).status == 405
    assert batch(photos, [], token=None).status == 400
    assert batch(photos, [], token="nope").status == 401
    photos.add_token("meta-only", scopes=["files.metadata.read"])
    r = batch(photos, [], token="meta-only")
    assert r.status == 401 and r.json()["error"] == {".tag": "missing_scope",
                                                     "required_scope": "files.content.read"}


def test_faults_apply(fd):
    fd.add_file("/a.jpg", size=1000, seed=1)
    fd.add_fault(ROUTE, "429json", retry_after=2)
    r = batch(fd, [{"path": "/a.jpg"}])
    assert r.status == 429 and r.headers["retry-after"] == "2"
    fd.add_fault(ROUTE, "500")
    assert batch(fd, [{"path": "/a.jpg"}]).status == 500
    fd.add_fault("files/download", "500")           # another route's rule does not fire
    assert batch(fd, [{"path": "/a.jpg"}]).status == 200
    fd.add_fault(ROUTE, "malformed_json")
    r = batch(fd, [{"path": "/a.jpg"}])
    assert r.status == 200
    with pytest.raises(ValueError):
        json.loads(r.body)
    fd.add_fault(ROUTE, "huge_size")
    assert ok_entries(batch(fd, [{"path": "/a.jpg"}]))[0]["metadata"]["size"] == 2 ** 64 - 1
    fd.clear_faults()
    assert ok_entries(batch(fd, [{"path": "/a.jpg"}]))[0][".tag"] == "success"
    log = fd.log()
    assert [(x["route"], x["status"], x.get("fault")) for x in log[-6:]] == [
        (ROUTE, 429, "429json"), (ROUTE, 500, "500"), (ROUTE, 200, None),
        (ROUTE, 200, "malformed_json"), (ROUTE, 200, "huge_size"), (ROUTE, 200, None)]


def test_latency_applies(fd):
    fd.add_file("/a.jpg", size=1000, seed=1)
    fd.config(latency_ms=400)
    t0 = time.monotonic()
    assert batch(fd, [{"path": "/a.jpg"}]).status == 200
    assert time.monotonic() - t0 >= 0.4
    fd.config(latency_ms=0)


def test_stats_count_thumbnails_and_bytes(fd):
    fd.add_file("/a.jpg", size=1000, seed=1)
    fd.add_file("/b.png", size=1000, seed=2)
    fd.reset_stats()
    r = batch(fd, [{"path": "/a.jpg", "size": "w256h256"}, {"path": "/b.png", "format": "png"},
                   {"path": "/nope.jpg"}])
    images = [image_of(e) for e in ok_entries(r)[:2]]
    r2 = batch(fd, [{"path": "/x.txt"}] * 30)      # 409: counted as a request, no thumbnail
    assert r2.status == 409
    s = fd.stats()
    assert s["total"] == 2 and s["routes"] == {ROUTE: 2}
    assert s["bytes_sent"] == len(r.body) + len(r2.body)
    assert s["thumbnails"] == {"success": 2, "failure": 1,
                               "image_bytes": sum(len(i) for i in images)}
    assert [x["route"] for x in fd.log()] == [ROUTE, ROUTE]
    fd.reset_stats()
    assert fd.stats()["thumbnails"] == {"success": 0, "failure": 0, "image_bytes": 0}


def test_reply_passes_the_sdk_validation(photos):
    """The official SDK's own (de)serialisers: its request is understood, the reply is
    valid GetThumbnailBatchResult in strict mode."""
    files = pytest.importorskip("dropbox.files")
    ss = pytest.importorskip("dropbox.stone_serializers")
    arg = files.GetThumbnailBatchArg([
        files.ThumbnailArg(CAM + "/IMG_0002.jpg", format=files.ThumbnailFormat.png,
                           size=files.ThumbnailSize.w128h128, mode=files.ThumbnailMode.bestfit),
        files.ThumbnailArg(CAM + "/notes.txt"),
        files.ThumbnailArg("/gone.jpg")])
    r = photos.request("POST", "/2/" + ROUTE, ss.json_encode(files.GetThumbnailBatchArg_validator, arg).encode(),
                       {"Authorization": "Bearer test-token", "Content-Type": "application/json"})
    res = ss.json_decode(files.GetThumbnailBatchResult_validator, r.body.decode(), strict=True)
    ok, ext, gone = res.entries
    assert ok.is_success() and ok.get_success().metadata.name == "IMG_0002.jpg"
    assert check_png(base64.b64decode(ok.get_success().thumbnail))[:2] in ((128, 96), (96, 128))
    assert ext.get_failure().is_unsupported_extension()
    assert gone.get_failure().is_path() and gone.get_failure().get_path().is_not_found()
    err = ss.json_decode(files.GetThumbnailBatchError_validator,
                         json.dumps(batch(photos, [{"path": "/a.jpg"}] * 26).json()["error"]),
                         strict=True)
    assert err.is_too_many_files()


# ---- --photos ---------------------------------------------------------------------------------

def test_photos_folder(photos, start):
    entries = photos.list_all(CAM)[0]
    by_name = {e["name"]: e for e in entries}
    assert sorted(by_name) == sorted(["IMG_%04d.jpg" % i for i in range(1, 26)] +
                                     ["PANO_0001.jpg", "notes.txt"])
    for i in range(1, 26):
        assert 2 * MIB <= by_name["IMG_%04d.jpg" % i]["size"] <= 6 * MIB
    assert len({by_name["IMG_%04d.jpg" % i]["size"] for i in range(1, 26)}) > 20
    assert by_name["PANO_0001.jpg"]["size"] > 20 * MIB
    # Deterministic: the same seed gives the same photos, another seed others.
    again = start("--photos", "25", "--seed", "5", "--quiet")
    assert again.list_all(CAM)[0] == entries
    other = start("--photos", "25", "--seed", "6", "--quiet")
    assert [e["size"] for e in other.list_all(CAM)[0]] != [e["size"] for e in entries]
    # Landscape and portrait photos both occur (chosen by content_hash).
    assert len({photo_dims(e) for e in entries if e["name"].startswith("IMG_")}) == 2


def test_photos_join_the_sample_accounts_camera_uploads(start):
    fd = start("--sample-account", "--photos", "3", "--quiet")
    names = [e["name"] for e in fd.list_all(CAM)[0]]
    assert "IMG_0003.jpg" in names and "2023-06-01 12.00.00.png" in names
    # The sample's real PNGs have their own pixel size (24 x 24): never scaled up.
    got = ok_entries(batch(fd, [{"path": CAM + "/2023-06-01 12.00.00.png", "format": "png",
                                 "size": "w128h128"}]))
    assert check_png(image_of(got[0]))[:2] == (24, 24)


def test_photos_flag_validation():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run([sys.executable, "-m", "fakedropbox", "--photos", "-1"], cwd=here,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "--photos must be >= 0" in p.stderr
