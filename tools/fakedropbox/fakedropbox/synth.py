"""Deterministic synthetic trees (--synthetic N), evil entries (--evil-names) and
a folder of photos (--photos N).

Exists to give tests and benchmarks large, realistic, nasty trees without
storing any file content: every node is small and its bytes, rev and mtime are
derived from (seed, num).  Same seed and flags -> identical tree.
"""

import gc
import math
import random

from .tree import key_of

FOLDER_WORDS = [
    "Projects", "Documents", "Archive", "Backup (old)", "2019", "2020", "2021",
    "Taxes", "Photos from trip", "Music", "Work", "Personal", "misc", "src",
    "Invoices", "Receipts", "Shared with Bob", "Old Stuff", "node_modules",
    "Übersicht", "données", "写真", "Проекты", "Ελληνικά", "Vacances été",
    "Clients", "drafts", "Final FINAL", "tmp", "Reports Q3", "assets",
]
FILE_WORDS = [
    "report", "Invoice", "notes", "budget", "Meeting Notes", "draft", "photo",
    "Résumé", "naïve plan", "README", "summary", "Letter to Anna", "scan",
    "todo", "Übersicht", "données", "写真", "日本語のファイル", "отчёт",
    "contract signed", "presentation", "data", "backup", "Screenshot",
]
EXTS = [".txt", ".pdf", ".jpg", ".png", ".docx", ".xlsx", ".md", ".json",
        ".mp3", ".zip", ".tar.gz", ".csv", ".py", ".JPG", ".HEIC", ""]

# Fixed nasty names, placed deterministically in the first few folders.
NASTY_FILES = [
    " leading space.txt", "trailing space.txt ", "  both  .txt", "a.b.c",
    ".hidden", "..double dot", "...", "name with\nnewline.txt",
    "back\\slash.txt", "tab\tname.txt", "emoji 😀🎉.txt", "📁.txt",
    "🍺 beer 🍺.md", "Café ☕.txt", "ü" * 200 + ".txt",
    "日本語" * 80 + ".txt", "x" * 251 + ".txt", "quote\"name'.txt",
    "percent %41 name.txt", "question?star*.txt", "colon:name.txt",
    "ﬁ ligature.txt", "Straße.txt", "ΣΣΣ.txt", "İstanbul.txt",
    "zero width\u200bspace.txt", "rtl \u202eevil.txt", "CON", "nul.txt",
]
NFC_CAFE = "caf\u00e9.txt"
NFD_CAFE = "cafe\u0301.txt"

MIN_SIZE_LOG = 0.0
MAX_SIZE_LOG = math.log(64 * 1024)


def _size(r):
    x = r.random()
    if x < 0.03:
        return 0
    if x < 0.032:
        return r.randrange(256 * 1024, 1024 * 1024 + 1)
    return int(math.exp(r.uniform(MIN_SIZE_LOG, MAX_SIZE_LOG)))


def _file_name(r, i):
    x = r.random()
    if x < 0.25:
        return "IMG_%04d%s" % (r.randrange(10000), r.choice((".JPG", ".jpg", ".HEIC", ".png")))
    if x < 0.45:
        return "%s %d%s" % (r.choice(FILE_WORDS), r.randrange(1000), r.choice(EXTS))
    if x < 0.55:
        return "%s (copy %d)%s" % (r.choice(FILE_WORDS), r.randrange(50), r.choice(EXTS))
    if x < 0.65:
        return "%s_v%d%s" % (r.choice(FILE_WORDS).lower().replace(" ", "_"), r.randrange(30), r.choice(EXTS))
    if x < 0.75:
        return "20%02d-%02d-%02d %s%s" % (r.randrange(10, 24), r.randrange(1, 13),
                                          r.randrange(1, 29), r.choice(FILE_WORDS), r.choice(EXTS))
    if x < 0.985:
        return "file_%d%s" % (i, r.choice(EXTS))
    return r.choice(NASTY_FILES[:14]).replace(".txt", " %d.txt" % i)


def _folder_name(r, i):
    x = r.random()
    if x < 0.6:
        return r.choice(FOLDER_WORDS) + ("" if r.random() < 0.3 else " %d" % i)
    if x < 0.9:
        return "folder %d" % i
    return r.choice((" spaced folder %d ", ".config %d", "a.b.c %d", "dossier é %d",
                     "😀 emoji %d")) % i


def _unique(tree, parent, name):
    """Make name unique in parent (case-insensitive, NFC), Dropbox-style ' (n)'."""
    k = key_of(name)
    if k not in parent.children:
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    else:
        ext = "." + ext
    n = 1
    while True:
        cand = "%s (%d)%s" % (stem, n, ext)
        if key_of(cand) not in parent.children:
            return cand
        n += 1


def build_synthetic(tree, n_entries, seed=1, folders=None, big_folder=0, top_folders=None):
    """Populate ``tree`` with about n_entries entries.

    top_folders (None: no cap): once the root holds that many folders (the
    fixed ones count), a folder that would go to the root goes under a random
    existing folder of depth < 9 instead, drawn from its own random stream so
    names, sizes and counts come out as without the cap."""
    r = random.Random(seed)
    tree.seed = seed
    gc_was = gc.isenabled()
    gc.disable()
    try:
        root = tree.root
        n_folders = max(1, n_entries // 10) if folders is None else max(0, folders)
        # Fixed anchors: the two café spellings in different folders, specials.
        uni = tree.add_child(root, "Unicode", folder=True)
        nfc = tree.add_child(uni, "NFC", folder=True)
        nfd = tree.add_child(uni, "NFD", folder=True)
        tree.add_child(nfc, NFC_CAFE, size=_size(r))
        tree.add_child(nfd, NFD_CAFE, size=_size(r))
        tree.add_child(root, "Caf\u00e9 ☕ notes", folder=True)
        tree.add_child(uni, "Re\u0301sume\u0301 NFD folder", folder=True)
        nasty = tree.add_child(root, " Nasty names ", folder=True)
        for name in NASTY_FILES:
            tree.add_child(nasty, _unique(tree, nasty, name), size=_size(r))
        special = tree.add_child(root, "Special", folder=True)
        tree.add_child(special, "Design doc.paper", size=r.randrange(500, 5000),
                       extra={"export_as": "html", "export_options": ["html", "markdown"]})
        tree.add_child(special, "Team plan.paper", size=r.randrange(500, 5000),
                       extra={"export_as": "markdown", "export_options": ["html", "markdown"]})
        tree.add_child(special, "link to notes", size=len(b"/Special/notes.txt"),
                       content=b"/Special/notes.txt", extra={"symlink": "/Special/notes.txt"})
        tree.add_child(special, "dangling link", size=len(b"../nowhere"),
                       content=b"../nowhere", extra={"symlink": "../nowhere"})
        tree.add_child(special, "notes.txt", size=_size(r))
        tree.add_child(special, "empty.txt", size=0)

        folder_list = [root, uni, nfc, nfd, special]
        depth = {root: 0, uni: 1, nfc: 2, nfd: 2, special: 1}
        if top_folders is not None:
            top_r = random.Random("top-folders|%d" % seed)
            shallow = [f for f in folder_list if 0 < depth[f] < 9]
            at_root = sum(1 for c in root.children.values() if c.children is not None)
        for i in range(max(0, n_folders - 5)):
            # Mix of shallow and deep: prefer recent folders, cap depth at 9.
            if r.random() < 0.15:
                parent = root
            else:
                parent = folder_list[int(len(folder_list) * (r.random() ** 0.5))]
                if depth[parent] >= 9:
                    parent = root
            if top_folders is not None:
                if parent is root and at_root >= top_folders:
                    parent = shallow[int(len(shallow) * top_r.random())]
                at_root += parent is root
            name = _unique(tree, parent, _folder_name(r, i))
            f = tree.add_child(parent, name, folder=True)
            folder_list.append(f)
            depth[f] = depth[parent] + 1
            if top_folders is not None and depth[f] < 9:
                shallow.append(f)
        n_files = max(0, n_entries - (len(tree.nodes) - 1) - 0)
        nf = len(folder_list)
        rand = r.random
        for i in range(n_files):
            parent = folder_list[int(nf * rand())]
            name = _unique(tree, parent, _file_name(r, i))
            tree.add_child(parent, name, size=_size(r))
        if big_folder:
            big = tree.add_child(root, "big", folder=True)
            for i in range(big_folder):
                tree.add_child(big, "file_%07d.dat" % i, size=_size(r))
        del depth
    finally:
        if gc_was:
            gc.enable()
        gc.freeze()


def add_evil(tree):
    """Entries a real Dropbox never sends (names '', '.', '..', 'a/b', NUL,
    lone surrogate, duplicate path_lower, over-long name)."""
    root = tree.root
    k = "evil"
    evil = root.children.get(k) or tree.add_child(root, "evil", folder=True)
    specs = [
        ("", "\x00evil:empty"),
        (".", "\x00evil:dot"),
        ("..", "\x00evil:dotdot"),
        ("a/b", None),
        ("nul\x00byte.txt", None),
        ("lone \udc80 surrogate.txt", None),
        ("Dup.txt", None),
        ("dup.txt", "\x00evil:dup"),
        ("y" * 1000 + ".txt", None),
    ]
    for name, key in specs:
        tree.add_child(evil, name, size=11, content=b"evil bytes\n", key=key)
    sub = tree.add_child(evil, "sub/dir", folder=True)
    tree.add_child(sub, "inside.txt", size=6, content=b"inside")


PHOTO_FOLDER = "Camera Uploads"


def add_photos(tree, n, seed=1):
    """/Camera Uploads (reused if present) with n photos IMG_0001.jpg... of 2-6 MiB, plus
    PANO_0001.jpg over the 20 MiB thumbnail limit and notes.txt (no image extension).
    Content is synthetic like any other file (not a decodable JPEG); sizes come from
    the seed, so the same seed gives the same photos."""
    if n <= 0:
        return
    r = random.Random("photos|%d" % seed)
    root = tree.root
    cam = root.children.get(key_of(PHOTO_FOLDER))
    if cam is None or cam.children is None:
        cam = tree.add_child(root, _unique(tree, root, PHOTO_FOLDER), folder=True)
    for i in range(1, n + 1):
        tree.add_child(cam, _unique(tree, cam, "IMG_%04d.jpg" % i),
                       size=r.randrange(2 * 1024 * 1024, 6 * 1024 * 1024 + 1))
    tree.add_child(cam, _unique(tree, cam, "PANO_0001.jpg"),
                   size=r.randrange(21 * 1024 * 1024, 28 * 1024 * 1024))
    tree.add_child(cam, _unique(tree, cam, "notes.txt"), size=r.randrange(100, 2000))
