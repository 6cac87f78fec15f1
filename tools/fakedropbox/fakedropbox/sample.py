"""Tree sources other than --synthetic: --sample-account and --root-dir.

Exists so demos get a believable account (documents, real PNG photos, unicode
names, a Paper doc, a symlink) and tests can serve a real local directory.
"""

import os
import random
import struct
import time
import unicodedata
import zlib

from .tree import key_of

SAMPLE_TIME = 1700000000  # 2023-11-14, well in the past


def make_png(width, height, seed):
    """A real, valid RGB PNG (gradient + noise), built with zlib."""
    r = random.Random(seed)
    base = (r.randrange(256), r.randrange(256), r.randrange(256))
    rows = []
    for y in range(height):
        row = bytearray([0])
        for x in range(width):
            row += bytes(((base[0] + x * 3) & 255, (base[1] + y * 3) & 255,
                          (base[2] + x + y + r.randrange(16)) & 255))
        rows.append(bytes(row))
    raw = zlib.compress(b"".join(rows), 9)

    def chunk(tag, data):
        c = struct.pack(">I", len(data)) + tag + data
        return c + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def make_pdf(title):
    """A tiny PDF-like document (header, one text object, trailer)."""
    body = ("%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
            "2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n"
            "% " + title + "\ntrailer << /Root 1 0 R >>\n%%EOF\n")
    return body.encode("utf-8")


def _add(tree, parent, name, data, mtime, extra=None):
    return tree.add_child(parent, name, size=len(data), content=bytes(data),
                          mtime=mtime, extra=extra)


def build_sample(tree):
    root = tree.root
    t = SAMPLE_TIME
    docs = tree.add_child(root, "Documents", folder=True)
    _add(tree, docs, "Welcome.txt", b"Welcome to your fake Dropbox!\n", t)
    _add(tree, docs, "Shopping list.txt", b"milk\neggs\nbread\ncoffee\n", t + 60)
    _add(tree, docs, "Café ☕.txt", "Un café, s'il vous plaît.\n".encode(), t + 120)
    _add(tree, docs, "日本語のファイル.txt", "こんにちは世界\n".encode(), t + 180)
    _add(tree, docs, unicodedata.normalize("NFD", "Résumé (NFD).txt"),
         "Name stored in NFD form.\n".encode(), t + 240)
    _add(tree, docs, "Report 2023.pdf", make_pdf("Report 2023"), t + 300)
    _add(tree, docs, "Invoice #42.pdf", make_pdf("Invoice 42"), t + 360)
    _add(tree, docs, "empty.txt", b"", t + 420)
    _add(tree, docs, "Lorem ipsum.md", ("# Lorem ipsum\n\n" + "Lorem ipsum dolor sit amet. " * 200 + "\n").encode(), t + 480)
    tree.add_child(docs, "Project plan.paper", size=2048, content=b"", mtime=t + 540,
                   extra={"export_as": "html", "export_options": ["html", "markdown"]})
    tree.add_child(docs, "Meeting notes.paper", size=1024, content=b"", mtime=t + 560,
                   extra={"export_as": "markdown", "export_options": ["html", "markdown"]})
    _add(tree, docs, "latest report", b"Report 2023.pdf", t + 600,
         extra={"symlink": "Report 2023.pdf"})
    _add(tree, docs, "photos shortcut", b"/Photos", t + 620, extra={"symlink": "/Photos"})
    sub = tree.add_child(docs, "Work", folder=True)
    _add(tree, sub, "notes.txt", b"Remember the standup at 10.\n", t + 700)
    _add(tree, sub, "data.csv", b"a,b,c\n1,2,3\n4,5,6\n", t + 760)
    photos = tree.add_child(root, "Photos", folder=True)
    for i, (w, h) in enumerate([(64, 48), (32, 32), (100, 60), (48, 64), (16, 16)]):
        _add(tree, photos, "Photo %d.png" % (i + 1), make_png(w, h, i), t + 1000 + i)
    trip = tree.add_child(photos, "Trip to Zürich", folder=True)
    for i in range(3):
        _add(tree, trip, "IMG_%04d.png" % (100 + i), make_png(40, 30, 10 + i), t + 1100 + i)
    cam = tree.add_child(root, "Camera Uploads", folder=True)
    for i in range(4):
        _add(tree, cam, "2023-06-%02d 12.00.%02d.png" % (i + 1, i), make_png(24, 24, 20 + i), t + 1200 + i)
    many = tree.add_child(root, "Many Files", folder=True)
    for i in range(5000):
        data = ("file %d of 5000\n" % i).encode()
        _add(tree, many, "file_%04d.txt" % i, data, t + 2000 + i % 1000)
    _add(tree, root, "Get Started with Dropbox.pdf", make_pdf("Get Started"), t - 86400)


def build_from_dir(tree, top):
    """Mirror a local directory; content is read lazily from disk."""
    now = int(time.time()) - 2
    top = os.path.abspath(top)

    def rec(dirpath, parent):
        try:
            entries = sorted(os.scandir(dirpath), key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            name = e.name
            if key_of(name) in parent.children:
                continue  # case/normalisation clash: Dropbox can't hold both
            try:
                if e.is_symlink():
                    target = os.readlink(e.path)
                    data = target.encode("utf-8", "surrogateescape")
                    st = e.stat(follow_symlinks=False)
                    tree.add_child(parent, name, size=len(data), content=data,
                                   mtime=min(int(st.st_mtime), now),
                                   extra={"symlink": target})
                elif e.is_dir():
                    rec(e.path, tree.add_child(parent, name, folder=True))
                elif e.is_file():
                    st = e.stat()
                    tree.add_child(parent, name, size=st.st_size, content=e.path,
                                   mtime=min(int(st.st_mtime), now))
            except OSError:
                continue

    rec(top, tree.root)
