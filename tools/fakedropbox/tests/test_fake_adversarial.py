"""Adversarial listing modes (--adversarial): every mode does what it says, and
applying its pages with the documented Dropbox rules still builds exactly the
fake's tree, for listings and for deltas (continue after changes)."""

import random
import time
import unicodedata

import pytest

from fakedropbox.adversarial import MODES
from fakedropbox.client import ControlError

SEEDS = (1, 2, 3)
UNICODE_FILES = {
    "/ΕΛΛΑΣ/Σ.txt": b"sigma\n",
    "/Straße/a.txt": b"strasse\n",
    "/İstanbul/b.txt": b"istanbul\n",
    "/ﬁles/c.txt": b"ligature\n",
    "/ﬁle": b"ligature file\n",
}


def ancestors(pl):
    parts = pl.split("/")
    return ["/".join(parts[:i]) for i in range(2, len(parts))]


class Replica:
    """A client's view built with the documented rules (docs/DROPBOX-API.md,
    "Delta semantics"):
    file: store, create missing parents, replace whatever is there (with its
    children); folder: store, create missing parents, replace a file, keep
    children; deleted: remove the path and its subtree, ignore if absent.
    Keys are path_lower as sent; a placeholder parent takes its name from the
    path_display component and is confirmed when its own entry arrives."""

    def __init__(self):
        self.e = {}      # path_lower -> {"tag", "name", "md"}; md None = placeholder
        self.kids = {}   # path_lower -> set of child keys

    def _remove(self, key):
        stack = [key]
        while stack:
            k = stack.pop()
            if self.e.pop(k, None) is not None:
                self.kids.get(k.rpartition("/")[0], set()).discard(k)
            stack.extend(self.kids.pop(k, ()))

    def _put(self, key, value):
        self.e[key] = value
        self.kids.setdefault(key.rpartition("/")[0], set()).add(key)

    def _parents(self, pl, pd, name):
        head = pd[:len(pd) - len(name) - 1]
        dcomps = head.split("/")[1:]
        lcomps = pl.split("/")[1:-1]
        assert len(dcomps) == len(lcomps), (pl, pd)
        key = ""
        for cl, cd in zip(lcomps, dcomps):
            key = key + "/" + cl
            cur = self.e.get(key)
            if cur is None or cur["tag"] == "file":
                if cur is not None:
                    self._remove(key)
                self._put(key, {"tag": "folder", "name": cd, "md": None})

    def apply(self, md):
        tag, pl, pd, name = md[".tag"], md["path_lower"], md["path_display"], md["name"]
        assert pd.endswith("/" + name), md
        if tag == "deleted":
            if pl in self.e:
                self._remove(pl)
            return
        self._parents(pl, pd, name)
        cur = self.e.get(pl)
        if cur is not None and (tag == "file" or cur["tag"] == "file"):
            self._remove(pl)
        self._put(pl, {"tag": tag, "name": name, "md": md})

    def view(self):
        """{display path built from names: (tag, id, size, rev)}; fails on an
        unconfirmed placeholder."""
        out = {}
        for k, v in self.e.items():
            assert v["md"] is not None, "placeholder never confirmed: %r" % k
            names = [self.e[a]["name"] for a in ancestors(k)] + [v["name"]]
            md = v["md"]
            out["/" + "/".join(names)] = (v["tag"], md["id"], md.get("size"), md.get("rev"))
        return out


def tree_view(fd):
    return {e["path_display"]: (e["tag"], e["id"], e["size"], e["rev"]) for e in fd.tree()}


def list_pages(fd, limit, path="", recursive=True, **kw):
    arg = dict(path=path, recursive=recursive, limit=limit, **kw)
    r = fd.rpc("files/list_folder", arg)
    assert r.status == 200, r.text
    out = r.json()
    pages = [out]
    while out["has_more"]:
        r = fd.rpc("files/list_folder/continue", {"cursor": out["cursor"]})
        assert r.status == 200, r.text
        out = r.json()
        pages.append(out)
        assert len(pages) < 100000
    return pages, out["cursor"]


def continue_pages(fd, cursor):
    pages = []
    while True:
        r = fd.rpc("files/list_folder/continue", {"cursor": cursor})
        assert r.status == 200, r.text
        out = r.json()
        pages.append(out)
        cursor = out["cursor"]
        if not out["has_more"]:
            return pages, cursor


def entries_of(pages):
    return [e for p in pages for e in p["entries"]]


def replica_of(pages, base=None):
    rep = base or Replica()
    for e in entries_of(pages):
        rep.apply(e)
    return rep


def start_adv(start, mode, seed, n=3000):
    fd = start("--quiet", "--synthetic", str(n), "--seed", str(seed),
               "--adversarial", mode, "--adversarial-seed", str(seed))
    for path, data in UNICODE_FILES.items():
        fd.add_file(path, data)
    return fd


def default_order(fd):
    """path_lower -> position in the default (pre-order, sorted) listing."""
    return {e["path_lower"]: i for i, e in enumerate(fd.tree(hashes=False))}


def check_mode_listing(mode, pages, fd):
    """The mode really did something in this listing."""
    entries = entries_of(pages)
    tree = fd.tree(hashes=False)
    real = {e["path_lower"]: e for e in tree}
    if mode == "shuffle":
        order = default_order(fd)
        assert any([order.get(e["path_lower"], -1) for e in p["entries"]]
                   != sorted(order.get(e["path_lower"], -1) for e in p["entries"])
                   for p in pages), "no page was shuffled"
    elif mode == "late-parents":
        seen = set()
        late = 0
        for e in entries:
            parent = e["path_lower"].rpartition("/")[0]
            if parent and parent not in seen:
                late += 1
            seen.add(e["path_lower"])
        assert late > 10, "children came before their parent only %d times" % late
    elif mode == "pages":
        sizes = [len(p["entries"]) for p in pages]
        assert any(s == 0 and p["has_more"] for s, p in zip(sizes, pages)), sizes
        assert len(set(sizes)) > 3, sizes
        assert sizes[-1] > 0
    elif mode == "repeat":
        reps = 0
        for a, b in zip(pages, pages[1:]):
            tail = [e["path_lower"] for e in a["entries"][-3:]]
            if b["entries"] and b["entries"][0]["path_lower"] in tail:
                reps += 1
        assert reps > 5, reps
        assert len(entries) > len({e["path_lower"] for e in entries})
    elif mode == "case-drift":
        drifted = 0
        for e in entries:
            want = real[e["path_lower"]]
            assert e["name"] == want["name"]
            assert e["path_display"].endswith("/" + e["name"])
            assert e["path_display"].lower() == want["path_display"].lower() or \
                unicodedata.normalize("NFC", e["path_display"]).casefold() == \
                unicodedata.normalize("NFC", want["path_display"]).casefold()
            drifted += e["path_display"] != want["path_display"]
        assert drifted > len(entries) // 4, drifted
    elif mode == "fold":
        by_name = {e["path_display"]: e for e in entries}
        assert by_name["/ΕΛΛΑΣ"]["path_lower"] == "/ελλας"
        assert by_name["/ΕΛΛΑΣ/Σ.txt"]["path_lower"] == "/ελλας/σ.txt"
        assert by_name["/Straße"]["path_lower"] == "/strasse"
        assert by_name["/İstanbul/b.txt"]["path_lower"] == "/istanbul/b.txt"
        assert by_name["/ﬁles/c.txt"]["path_lower"] == "/files/c.txt"
        assert by_name["/ﬁle"]["path_lower"] == "/file"
        # differs from a per-scalar lower-casing (what the client computes)
        assert "".join(c.lower() for c in "/ΕΛΛΑΣ") == "/ελλασ"
    elif mode == "ghost-deletes":
        ghosts = [e for e in entries if e[".tag"] == "deleted"]
        assert len(ghosts) > 10
        for g in ghosts:
            assert g["name"].startswith("ghost-"), g
            assert g["path_lower"] not in real
        parents = {g["path_lower"].rpartition("/")[0] for g in ghosts}
        assert any(p in real for p in parents), "no ghost in an existing folder"
        assert any(p not in real and p != "" for p in parents), "no ghost under a missing folder"
    elif mode == "replace":
        first = {}
        bogus = 0
        for e in entries:
            pl = e["path_lower"]
            if pl in real and pl not in first:
                first[pl] = e[".tag"]
                if e[".tag"] != real[pl]["tag"]:
                    bogus += 1
        assert bogus > 5, bogus
        kinds = {real[pl]["tag"] for pl, t in first.items() if t != real[pl]["tag"]}
        assert kinds == {"file", "folder"}, kinds


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mode", MODES + ("all",))
def test_listing_builds_the_tree(start, mode, seed):
    fd = start_adv(start, mode, seed)
    want = tree_view(fd)
    for limit in (97, 2000):
        pages, _ = list_pages(fd, limit)
        assert replica_of(pages).view() == want, (mode, seed, limit)
        if mode != "all" and limit == 97:
            check_mode_listing(mode, pages, fd)
    # A non-recursive listing of a folder, too.
    pages, _ = list_pages(fd, 5, path="/ΕΛΛΑΣ", recursive=False)
    rep = Replica()
    scope = [e for e in fd.tree() if e["path_display"] == "/ΕΛΛΑΣ"][0]
    rep._put(pages[0]["entries"][0]["path_lower"].rpartition("/")[0] if pages[0]["entries"]
             else scope["path_lower"], {"tag": "folder", "name": "ΕΛΛΑΣ", "md": scope})
    got = replica_of(pages, rep).view()
    assert set(got) == {"/ΕΛΛΑΣ", "/ΕΛΛΑΣ/Σ.txt"}


def mutate(fd, rng, tag):
    """About 40 changes of every kind; returns notes on what was done."""
    tree = fd.tree(hashes=False)
    files = [e["path_display"] for e in tree if e["tag"] == "file" and e["path_display"].count("/") >= 2]
    folders = [e["path_display"] for e in tree if e["tag"] == "folder" and e["path_display"].count("/") >= 2]
    notes = {"replaced": [], "added_flat": []}

    def attempt(fn, *a):
        try:
            fn(*a)
            return True
        except ControlError:
            return False

    for i in range(12):
        path = "/flat-%s/f%02d.txt" % (tag, i)
        fd.add_file(path, b"x" * i)
        notes["added_flat"].append(path.lower())
    for i in range(8):
        attempt(fd.add_file, "%s/new %s %d.txt" % (rng.choice(folders), tag, i), b"new")
    fd.add_file("/deep-%s/a/b/c/d/leaf.txt" % tag, b"leaf")
    fd.mkdir("/deep-%s/a/b2/c2" % tag)
    fd.add_file("/ΕΛΛΑΣ/ΝΕΟΣ %s/Σ2.txt" % tag, b"new sigma")
    fd.add_file("/Straße/new %s.txt" % tag, b"new strasse")
    notes["deleted"] = []
    for p in rng.sample(files, 8):
        if attempt(fd.delete, p):
            notes["deleted"].append(p)
    for p in rng.sample(files, 4):
        attempt(fd.add_file, p, b"overwritten")
    for p in rng.sample(folders, 3):
        attempt(fd.delete, p)
    for i, p in enumerate(rng.sample(folders, 4)):
        attempt(fd.move, p, "/moved-%s/%d/%s" % (tag, i, p.rsplit("/", 1)[1]))
    # file -> folder, folder -> file (of entries that exist now and were never deleted)
    now = fd.tree(hashes=False)
    old_files, old_folders = set(files), set(folders)
    files = [e["path_display"] for e in now if e["tag"] == "file" and e["path_display"] in old_files]
    folders = [e["path_display"] for e in now if e["tag"] == "folder" and e["path_display"] in old_folders]
    for p in rng.sample(files, 3):
        if attempt(fd.delete, p) and attempt(fd.add_file, p + "/inner.txt", b"inner"):
            notes["replaced"].append(p.lower())
    for p in rng.sample(folders, 3):
        if attempt(fd.add_file, p, b"was a folder"):
            notes["replaced"].append(p.lower())
    return notes


def check_mode_deltas(mode, pages, notes, fd):
    entries = entries_of(pages)
    if mode == "late-parents":
        seen = set()
        late = 0
        for e in entries:
            parent = e["path_lower"].rpartition("/")[0]
            if parent.startswith("/deep-") and parent not in seen:
                late += 1
            seen.add(e["path_lower"])
        assert late >= 3, late
    elif mode == "shuffle":
        flat = [e["path_lower"] for e in entries if e["path_lower"] in notes["added_flat"]]
        assert flat != sorted(flat), flat
    elif mode == "pages":
        assert any(not p["entries"] and p["has_more"] for p in pages), [len(p["entries"]) for p in pages]
    elif mode == "repeat":
        reps = sum(1 for a, b in zip(pages, pages[1:])
                   if a["entries"] and b["entries"] and a["has_more"] and b["entries"][0] == a["entries"][-1])
        assert reps >= 1
    elif mode == "replace":
        deleted = {e["path_lower"] for e in entries if e[".tag"] == "deleted"}
        assert notes["replaced"]
        for p in notes["replaced"]:
            assert p not in deleted, p
    elif mode == "case-drift":
        gone = {p.lower(): p for p in notes["deleted"]}
        drifted = [e for e in entries if e[".tag"] == "deleted" and e["path_lower"] in gone
                   and e["path_display"] != gone[e["path_lower"]]]
        assert drifted, "no deleted entry had its parents re-cased"
        for e in entries:
            if e[".tag"] == "deleted" and e["path_lower"] in gone:
                assert e["name"] == gone[e["path_lower"]].rsplit("/", 1)[1]
    elif mode == "ghost-deletes":
        assert any(e[".tag"] == "deleted" and e["name"].startswith("ghost-") for e in entries)
    elif mode == "fold":
        assert any(e["path_lower"].startswith("/ελλας/νεος ") and e["path_lower"].endswith("/σ2.txt")
                   for e in entries)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mode", MODES + ("all",))
def test_deltas_build_the_tree(start, mode, seed):
    fd = start_adv(start, mode, seed, n=2000)
    pages, cursor = list_pages(fd, 500)
    base = replica_of(pages)
    assert base.view() == tree_view(fd)
    small = fd.rpc("files/list_folder/get_latest_cursor",
                   {"path": "", "recursive": True, "limit": 5}).json()["cursor"]
    rng = random.Random(seed * 7 + len(mode))
    for round_ in range(2):
        before = {k: dict(v) for k, v in base.e.items()}
        notes = mutate(fd, rng, "r%d" % round_)
        want = tree_view(fd)
        got_pages, cursor = continue_pages(fd, cursor)
        replica_of(got_pages, base)
        assert base.view() == want, (mode, seed, round_)
        small_rep = Replica()
        for k, v in before.items():
            small_rep._put(k, v)
        small_pages, small = continue_pages(fd, small)
        replica_of(small_pages, small_rep)
        assert small_rep.view() == want, (mode, seed, round_, "limit 5")
        if mode != "all":
            check_mode_deltas(mode, small_pages, notes, fd)


def test_config_control_and_default_off(start):
    fd = start("--quiet", "--synthetic", "300")
    cfg = fd.config()
    assert cfg["adversarial"] == "" and cfg["adversarial_seed"] == 1
    plain, _ = list_pages(fd, 50)
    cfg = fd.config(adversarial="shuffle,pages", adversarial_seed=7)
    assert cfg["adversarial"] == "shuffle,pages" and cfg["adversarial_seed"] == 7
    assert fd._call("GET", "/_control/config")["adversarial"] == "shuffle,pages"
    adv, _ = list_pages(fd, 50)
    assert [e["path_lower"] for e in entries_of(adv)] != [e["path_lower"] for e in entries_of(plain)]
    assert sorted(e["path_lower"] for e in entries_of(adv)) == sorted(e["path_lower"] for e in entries_of(plain))
    # Same seed, same calls: the same pages (a failing seed replays).
    again, _ = list_pages(fd, 50)
    assert [p["entries"] for p in again] != [] and len(again) > 1
    fd.config(adversarial="all")
    assert fd.config()["adversarial"] == ",".join(MODES)
    with pytest.raises(ControlError) as e:
        fd.config(adversarial="shuffle,bogus")
    assert e.value.status == 400
    fd.config(adversarial="")
    off, _ = list_pages(fd, 50)
    assert [p["entries"] for p in off] == [p["entries"] for p in plain]


def test_same_seed_replays(start):
    a = start("--quiet", "--synthetic", "1000", "--adversarial", "all", "--adversarial-seed", "5")
    b = start("--quiet", "--synthetic", "1000", "--adversarial", "all", "--adversarial-seed", "5")
    pa, _ = list_pages(a, 100)
    pb, _ = list_pages(b, 100)
    assert [p["entries"] for p in pa] == [p["entries"] for p in pb]
    c = start("--quiet", "--synthetic", "1000", "--adversarial", "all", "--adversarial-seed", "6")
    pc, _ = list_pages(c, 100)
    assert [p["entries"] for p in pa] != [p["entries"] for p in pc]


def test_fold_paths_resolve(start):
    fd = start_adv(start, "fold", 1, n=100)
    for path, data in UNICODE_FILES.items():
        folded = unicodedata.normalize("NFC", path).lower().replace("ß", "ss").replace("ﬁ", "fi") \
            .replace("i\u0307", "i")
        r = fd.download(folded)
        assert r.status == 200, (folded, r.text)
        assert r.body == data
        assert r.result["path_lower"] == folded
        md = fd.rpc("files/get_metadata", {"path": folded}).json()
        assert md["path_display"] == path and md["path_lower"] == folded
    out = fd.rpc("files/list_folder", {"path": "/strasse"}).json()
    assert [e["name"] for e in out["entries"]] == ["a.txt"]
    assert out["entries"][0]["path_lower"] == "/strasse/a.txt"
    # Without fold mode the folded spellings that differ from the fake's keys do not resolve.
    fd.config(adversarial="")
    assert fd.download("/strasse/a.txt").status == 409
    assert fd.download("/ελλας/σ.txt").status == 200


def test_cursor_of_evicted_snapshot_is_reset(start):
    fd = start("--quiet", "--synthetic", "200", "--adversarial", "pages")
    first = fd.rpc("files/list_folder", {"path": "", "recursive": True, "limit": 3}).json()
    for _ in range(70):
        fd.rpc("files/list_folder", {"path": "", "recursive": True, "limit": 3})
    r = fd.rpc("files/list_folder/continue", {"cursor": first["cursor"]})
    assert r.status == 409 and r.json()["error"][".tag"] == "reset"
    assert fd.rpc("files/list_folder/longpoll", {"cursor": first["cursor"], "timeout": 1},
                  token=None).json()["changes"] is True


def test_changes_during_listing_are_replayed(start):
    fd = start("--quiet", "--synthetic", "1000", "--adversarial", "all", "--adversarial-seed", "4")
    out = fd.rpc("files/list_folder", {"path": "", "recursive": True, "limit": 50}).json()
    rep = Replica()
    for e in out["entries"]:
        rep.apply(e)
    fd.add_file("/during/listing.txt", b"x")
    victim = [e["path_display"] for e in fd.tree(hashes=False) if e["tag"] == "folder"][5]
    fd.delete(victim)
    while out["has_more"]:
        out = fd.rpc("files/list_folder/continue", {"cursor": out["cursor"]}).json()
        for e in out["entries"]:
            rep.apply(e)
    pages, _ = continue_pages(fd, out["cursor"])
    replica_of(pages, rep)
    assert rep.view() == tree_view(fd)


def test_team_include_deleted_and_nondl(start):
    fd = start("--quiet", "--team", "--sample-account", "--adversarial", "all")
    fd.add_file("/Franz Ferdinand/gone.txt", b"x")
    fd.delete("/Franz Ferdinand/gone.txt")
    entries, _ = fd.list_all("", recursive=True, limit=37, include_deleted=True,
                             include_non_downloadable_files=False)
    live = {e["path_display"]: e for e in fd.tree()
            if e["path_display"].startswith("/Franz Ferdinand/")}
    rep = Replica()
    for e in entries:
        assert not e["path_lower"].startswith("/franz ferdinand")
        rep.apply(e)
    got = rep.view()
    want = {"/Franz Ferdinand" + k: v for k, v in got.items()}
    assert set(want) == {p for p, e in live.items() if e["is_downloadable"] is not False}
    assert any(e[".tag"] == "deleted" and e["name"] == "gone.txt" for e in entries)
    root = {"Dropbox-API-Path-Root": '{".tag": "root", "root": "%s"}' % fd.info()["root_namespace_id"]}
    r = fd.rpc("files/list_folder", {"path": "/Marketing", "recursive": True}, headers=root).json()
    assert any(e.get("sharing_info") for e in r["entries"] if e[".tag"] != "deleted")


def test_large_listing_is_fast(start):
    fd = start("--quiet", "--synthetic", "20000", "--adversarial", "all")
    fd.tree()  # hashes
    t0 = time.monotonic()
    pages, _ = list_pages(fd, 2000)
    dt = time.monotonic() - t0
    assert replica_of(pages).view() == tree_view(fd)
    assert dt < 4, "%.2f s for a 20,000-entry adversarial listing" % dt


def test_evil_names_and_faults(start):
    fd = start("--quiet", "--synthetic", "300", "--evil-names", "--adversarial", "all")
    ids = {e["id"] for e in fd.tree()}
    fd.add_fault("files/list_folder/continue", "500", count=2, after=1)
    r = fd.rpc("files/list_folder", {"path": "", "recursive": True, "limit": 40})
    out = r.json()
    seen = {e["id"] for e in out["entries"] if "id" in e}
    failures = 0
    while out["has_more"]:
        r = fd.rpc("files/list_folder/continue", {"cursor": out["cursor"]})
        if r.status == 500:
            failures += 1
            continue  # the same cursor again: the same page
        assert r.status == 200, r.text
        out = r.json()
        seen |= {e["id"] for e in out["entries"] if "id" in e}
    assert failures == 2
    assert ids <= seen  # every real entry (bogus ones have ids of no real entry)
