"""Server-side page policy (--max-page, --tiny-pages, --page-cost-ms-per-1000),
the page and entry counts in /_control/stats, and --top-folders.

The policy models what the real Dropbox does with list_folder's ``limit`` (an
upper bound only: pages far smaller than asked, stretches of 1-entry pages,
server time per entry), so benchmarks of parallel listings measure the client.
"""

import collections
import threading
import time

import pytest

from fakedropbox.__main__ import build_tree, parse_args
from fakedropbox.client import ControlError
from fakedropbox.cursors import Cursor
from test_fake_adversarial import Replica, entries_of, list_pages, replica_of, tree_view

CAP = 13


def sizes(pages):
    return [len(p["entries"]) for p in pages]


def continue_all(fd, cursor):
    """continue until has_more is false; the pages (possibly one empty page)."""
    pages = []
    while True:
        r = fd.rpc("files/list_folder/continue", {"cursor": cursor})
        assert r.status == 200, r.text
        out = r.json()
        pages.append(out)
        cursor = out["cursor"]
        if not out["has_more"]:
            return pages, cursor


def check_cap(pages, limit, cap, exact, extras=False):
    """Every page within min(limit, cap) (with adversarial ``extras``, repeats
    and ghosts on top, within cap); with ``exact`` (default mode) every page
    but the last exactly min(limit, cap)."""
    want = min(limit, cap)
    got = sizes(pages)
    assert max(got) <= (cap if extras else want), got
    if exact:
        assert got[:-1] == [want] * (len(got) - 1) and 0 < got[-1] <= want, got


@pytest.mark.parametrize("mode", ["", "pages", "shuffle", "pages,shuffle", "repeat,ghost-deletes", "all"])
def test_max_page_caps_every_page_and_loses_nothing(start, mode):
    args = ["--quiet", "--synthetic", "600", "--seed", "4", "--max-page", str(CAP)]
    if mode:
        args += ["--adversarial", mode, "--adversarial-seed", "3"]
    fd = start(*args)
    want = tree_view(fd)
    # Repeats, ghosts, bogus entries: only the replica can judge the whole.
    extras = any(m in mode for m in ("all", "repeat", "ghost", "replace"))
    for limit in (2000, 5):
        pages, cursor = list_pages(fd, limit)
        check_cap(pages, limit, CAP, exact=not mode, extras=extras)
        assert replica_of(pages).view() == want, (mode, limit)
        if not extras:
            pls = [e["path_lower"] for e in entries_of(pages)]
            assert len(pls) == len(set(pls)) == len(want)
    # Non-recursive: the root, and a folder with more than CAP children.
    kids = collections.defaultdict(list)
    for e in fd.tree(hashes=False):
        kids[e["path_lower"].rpartition("/")[0]].append(e["name"])
    folder = max((pl for pl in kids if pl), key=lambda pl: len(kids[pl]))
    assert len(kids[folder]) > CAP
    for path, limit in (("", 2000), (folder, 2000), (folder, 4)):
        pages, _ = list_pages(fd, limit, path=path, recursive=False)
        check_cap(pages, limit, CAP, exact=not mode, extras=extras)
        names = [e["name"] for e in entries_of(pages) if e[".tag"] != "deleted"]
        assert set(names) == set(kids[path]), (mode, path)
        if not extras:
            assert sorted(names) == sorted(kids[path])
    # Deltas (journal pages): more changes than a page holds, of every kind.
    pages, cursor = list_pages(fd, 2000)
    rep = replica_of(pages)
    for i in range(40):
        fd.add_file("/delta/f%02d.txt" % i, b"x" * i)
    fd.move("/delta", "/Unicode/delta moved")
    fd.delete("/Special")
    fd.add_file("/Special", b"a file where the folder was")
    pages, _ = continue_all(fd, cursor)
    assert sum(sizes(pages)) > 3 * CAP
    check_cap(pages, 2000, CAP, exact=not mode)
    assert replica_of(pages, rep).view() == tree_view(fd), mode


def test_max_page_with_tombstones_and_small_limits(start):
    fd = start("--quiet", "--big-folder", "40", "--max-page", "7")
    for i in range(0, 40, 2):
        fd.delete("/big/file_%07d.dat" % i)
    pages, _ = list_pages(fd, 2000, path="/big", recursive=False, include_deleted=True)
    check_cap(pages, 2000, 7, exact=True)
    tags = collections.Counter(e[".tag"] for e in entries_of(pages))
    assert tags == {"file": 20, "deleted": 20}
    # A limit below the cap wins.
    pages, _ = list_pages(fd, 3, path="/big", recursive=False)
    check_cap(pages, 3, 7, exact=True)


def test_tiny_pages_stretch_in_listings_and_deltas(start):
    fd = start("--quiet", "--big-folder", "100", "--tiny-pages", "2:5")
    pages, cursor = list_pages(fd, 10, path="/big", recursive=False)
    assert sizes(pages) == [10, 10, 1, 1, 1, 1, 1] + [10] * 7 + [5]
    assert len({e["name"] for e in entries_of(pages)}) == 100
    # A new listing numbers its pages from 0 again.
    assert sizes(list_pages(fd, 10, path="/big", recursive=False)[0])[:3] == [10, 10, 1]
    # The delta pages after has_more false are a listing of their own.
    for i in range(30):
        fd.add_file("/big/new_%02d" % i, b"n")
    pages, _ = continue_all(fd, cursor)
    assert sizes(pages) == [10, 10, 1, 1, 1, 1, 1, 5]
    assert {e["name"] for e in entries_of(pages)} == {"new_%02d" % i for i in range(30)}


def test_tiny_pages_override_adversarial_pages_and_cap(start):
    fd = start("--quiet", "--big-folder", "300", "--tiny-pages", "3:20", "--max-page", "9",
               "--adversarial", "pages,shuffle,repeat", "--adversarial-seed", "5")
    pages, _ = list_pages(fd, 50, path="/big", recursive=False)
    got = sizes(pages)
    assert got[3:23] == [1] * 20, got
    assert max(got) <= 9, got
    assert len(set(got[23:])) > 2, got  # the pages mode still draws sizes
    names = [e["name"] for e in entries_of(pages)]
    assert set(names) == {"file_%07d.dat" % i for i in range(300)}
    # Delta pages too (60 changes: pages 0-2 hold at most 27).
    for i in range(60):
        fd.add_file("/big/new_%02d" % i, b"n")
    pages, _ = continue_all(fd, pages[-1]["cursor"])
    got = sizes(pages)
    assert got[3:23] == [1] * 20 and max(got) <= 9, got
    assert {e["name"] for e in entries_of(pages)} == {"new_%02d" % i for i in range(60)}


def test_page_cost_is_per_entry_and_free_for_empty_pages(start):
    fd = start("--quiet", "--big-folder", "1000", "--page-cost-ms-per-1000", "400")
    assert fd.config()["page_cost_ms_per_1000"] == 400
    fd.config(page_cost_ms_per_1000=0)
    _, cursor = fd.list_all("/big", limit=1000)  # warm: hashes and JSON rendered
    fd.config(page_cost_ms_per_1000=400)
    t0 = time.monotonic()
    r = fd.rpc("files/list_folder", {"path": "/big", "limit": 1000})
    full = time.monotonic() - t0
    assert len(r.json()["entries"]) == 1000 and full >= 0.4, full
    t0 = time.monotonic()
    r = fd.rpc("files/list_folder", {"path": "/big", "limit": 100})
    tenth = time.monotonic() - t0
    assert len(r.json()["entries"]) == 100 and 0.04 <= tenth < 0.4, tenth
    # An empty page costs nothing, however dear an entry is.
    fd.config(page_cost_ms_per_1000=100000)
    t0 = time.monotonic()
    r = fd.rpc("files/list_folder/continue", {"cursor": cursor})
    empty = time.monotonic() - t0
    assert r.json()["entries"] == [] and empty < 1.0, empty
    fd.config(page_cost_ms_per_1000=400)
    # On top of latency_ms.
    fd.config(latency_ms=150)
    t0 = time.monotonic()
    fd.rpc("files/list_folder", {"path": "/big", "limit": 1000})
    assert time.monotonic() - t0 >= 0.55


def test_parallel_listings_overlap(start):
    fd = start("--quiet", "--big-folder", "1000", "--synthetic", "1200", "--seed", "2")
    fd.list_all("", recursive=True, limit=2000)  # warm
    fd.config(page_cost_ms_per_1000=800)
    arg = {"path": "/big", "limit": 1000}
    t0 = time.monotonic()
    assert len(fd.rpc("files/list_folder", arg).json()["entries"]) == 1000
    one = time.monotonic() - t0
    assert one >= 0.8, one
    # Two listings at once (/big, and the whole tree), each a 1000-entry page.
    args = [arg, {"path": "", "recursive": True, "limit": 1000}]
    barrier = threading.Barrier(len(args))
    took = [None] * len(args)

    def run(i):
        barrier.wait()
        t = time.monotonic()
        r = fd.rpc("files/list_folder", args[i])
        assert len(r.json()["entries"]) == 1000
        took[i] = time.monotonic() - t

    t0 = time.monotonic()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(args))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    both = time.monotonic() - t0
    assert all(x is not None and x >= 0.8 for x in took), took
    assert both < 1.5 * one, (both, one)


def test_config_keys_at_runtime(fd):
    for i in range(10):
        fd.add_file("/d/f%d" % i, b"x")
    c = fd.config(max_page=3, tiny_pages="0:2", page_cost_ms_per_1000=1.5)
    assert (c["max_page"], c["tiny_pages"], c["page_cost_ms_per_1000"]) == (3, "0:2", 1.5)
    g = fd.config()
    assert (g["max_page"], g["tiny_pages"], g["page_cost_ms_per_1000"]) == (3, "0:2", 1.5)
    assert sizes(list_pages(fd, 100, path="/d", recursive=False)[0]) == [1, 1, 3, 3, 2]
    assert fd.config(tiny_pages=[1, 1])["tiny_pages"] == "1:1"
    assert sizes(list_pages(fd, 100, path="/d", recursive=False)[0]) == [3, 1, 3, 3]
    for bad in ({"max_page": -1}, {"max_page": "5"}, {"max_page": True}, {"tiny_pages": "3"},
                {"tiny_pages": "a:b"}, {"tiny_pages": "-1:3"}, {"tiny_pages": [1]},
                {"page_cost_ms_per_1000": "x"}, {"page_cost_ms_per_1000": -2},
                {"max_page": 2, "tiny_pages": "nope"}):
        with pytest.raises(ControlError) as e:
            fd.config(**bad)
        assert e.value.status == 400, bad
    g = fd.config()
    assert (g["max_page"], g["tiny_pages"], g["page_cost_ms_per_1000"]) == (3, "1:1", 1.5)
    c = fd.config(max_page=0, tiny_pages="", page_cost_ms_per_1000=0)
    assert (c["max_page"], c["tiny_pages"], c["page_cost_ms_per_1000"]) == (0, None, 0)
    assert sizes(list_pages(fd, 100, path="/d", recursive=False)[0]) == [10]


def test_cli_rejects_bad_values():
    for bad in (["--tiny-pages", "5"], ["--tiny-pages", "1:-1"], ["--max-page", "-3"],
                ["--page-cost-ms-per-1000", "-1"], ["--top-folders", "5"],
                ["--synthetic", "100", "--top-folders", "0"]):
        with pytest.raises(SystemExit):
            parse_args(bad)
    a = parse_args(["--max-page", "7", "--tiny-pages", "2:9", "--page-cost-ms-per-1000", "2.5"])
    assert (a.max_page, a.tiny_pages, a.page_cost_ms_per_1000) == (7, "2:9", 2.5)


def test_stats_count_pages_and_entries(fd):
    for i in range(25):
        fd.add_file("/d/f%02d" % i, b"x")
    fd.reset_stats()
    _, cursor = fd.list_all("/d", limit=10)
    fd.rpc("files/list_folder/continue", {"cursor": cursor})  # an empty page counts as a page
    fd.rpc("files/list_folder/continue", {"cursor": "AAFbogus"})  # a 400 does not
    s = fd.stats()
    assert s["pages"] == {"files/list_folder": 1, "files/list_folder/continue": 3}
    assert s["entries"] == {"files/list_folder": 10, "files/list_folder/continue": 15}
    assert s["routes"]["files/list_folder/continue"] == 4
    fd.reset_stats()
    assert fd.stats()["pages"] == {} and fd.stats()["entries"] == {}


def test_cursor_page_index_round_trip():
    base = Cursor("i", 0, "/a", True, False, True, 10, 3, phase="L", keypath=["x"])
    assert Cursor.decode(base.encode()).pg == 0
    for kw in ({"pg": 4}, {"pg": 4, "view": "h"}, {"pg": 4, "snap": 2, "rep": 9}):
        c = Cursor.decode(base.copy(**kw).encode())
        assert (c.pg, c.view, c.snap, c.rep, c.keypath) == \
            (4, kw.get("view"), kw.get("snap"), kw.get("rep"), ["x"])
    # A cursor not mid-listing encodes exactly as before the page index existed.
    assert base.copy(pg=0).encode() == base.encode()


def synthetic(*extra):
    tree = build_tree(parse_args(["--synthetic", "5000", "--folders", "1000", "--seed", "7"] + list(extra)))
    folders, files, depth = [], [], {}
    for n in tree.nodes:
        if n is None or n is tree.root:
            continue
        d, p = 1, n.parent
        while p is not tree.root:
            d, p = d + 1, p.parent
        if n.children is not None:
            folders.append(n)
            depth[n.num] = d
        else:
            files.append((n.name, n.size))
    top = [n for n in tree.root.children.values() if n.children is not None]
    paths = sorted(tree.paths(n)[1] for n in tree.nodes if n is not None and n is not tree.root)
    return top, folders, sorted(files), depth, paths


def test_top_folders_caps_root_folders_and_keeps_counts():
    top0, folders0, files0, depth0, paths0 = synthetic()
    top, folders, files, depth, paths = synthetic("--top-folders", "12")
    assert len(top0) > 100
    assert len(top) == 12
    assert len(folders) == len(folders0) and len(paths) == len(paths0)
    assert files == files0  # the cap moves folders, nothing else
    assert max(depth.values()) <= 9 and max(depth0.values()) <= 9
    assert max(depth.values()) > 3
    assert paths != paths0
    # Deterministic for a seed; the fixed folders stay at the root.
    assert synthetic("--top-folders", "12")[4] == paths
    assert {"unicode", "special"} <= {n.name.lower() for n in top}
    # A cap above what the tree has changes nothing.
    assert synthetic("--top-folders", "100000")[4] == paths0
