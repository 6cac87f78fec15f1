"""The background fill (docs/ARCHITECTURE.md, "Recursive listings and complete folders"): the whole
account is listed with recursive list_folder at mount, so walks see a complete, correct tree even
while the fill runs, and cost no listing requests once it is done; a cold walk costs about one
request per 2,000-entry page. --no-prefetch lists folders one request each; --no-watch relies on
--dir-cache-time instead of the change watcher."""

import math
import time

import pytest

from helpers import (
    LIST_ROUTES, c_locale, expected_entries, expected_find_lines, find_records, compare_records, list_calls,
    normalise_find_lines, poll_assert, run, sh, sync_status, wait_for_fill, wait_until,
)

PAGE = 2000  # entries per list_folder page the daemon asks for


def routes(fake):
    return fake.stats()["routes"]


def listing_requests(fake):
    r = routes(fake)
    return {name: r.get(name, 0) for name in LIST_ROUTES + ("files/get_metadata",)}


def settled_listing_requests(fake, quiet=0.5, timeout=15):
    """listing_requests once they stayed the same for `quiet` seconds: the fake counts a request
    after it answered it, so the count of the fill's last page may land after the status says
    the fill is over."""
    last = [listing_requests(fake), time.monotonic()]

    def settled():
        now = listing_requests(fake)
        if now != last[0]:
            last[0], last[1] = now, time.monotonic()
            return None
        return now if time.monotonic() - last[1] >= quiet else None

    return wait_until(settled, timeout=timeout, interval=0.1, message="the fake's listing counts to settle")


def find_sorted_lines(path):
    r = sh(f"find '{path}' -printf '%y %s %P\\n' | sort", timeout=120, env=c_locale())
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert r.stderr == b"", r.stderr.decode(errors="replace")
    return normalise_find_lines(r.stdout.split(b"\n")[:-1])


def test_find_during_the_background_fill_sees_the_whole_tree(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "60000")
    tree = fake.tree(hashes=False)
    entries = expected_entries(tree)
    want = expected_find_lines(entries)
    fake.config(latency_ms=20)  # about 30 pages of 20+ ms: the fill takes a few seconds
    m = mount_factory(fake)
    phase_at_start = sync_status(m.path)["phase"]
    got = find_sorted_lines(m.path)
    status = sync_status(m.path)
    assert phase_at_start == "filling", f"the fill was over before find started ({phase_at_start}); test proves nothing"
    assert len(got) == len(want), f"find printed {len(got)} lines, want {len(want)}"
    missing = sorted(set(want) - set(got))[:10]
    extra = sorted(set(got) - set(want))[:10]
    assert got == want, f"missing (first): {missing}; unexpected (first): {extra}"
    print(f"status after find: {status}")


@pytest.mark.parametrize("extra", [(), ("--no-prefetch",)], ids=["prefetch", "no-prefetch"])
def test_folder_of_50000_entries(fake_factory, mount_factory, extra):
    fake = fake_factory("--synthetic", "100", "--big-folder", "50000")
    big = {e["name"]: e["size"] for e in fake.tree(hashes=False) if e["path_lower"].startswith("/big/")}
    assert len(big) == 50000
    m = mount_factory(fake, *extra)
    r = sh(f"ls '{m.path}/big' | wc -l", timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == b"50000"
    r = run("ls", "-l", "--time-style=+%s", f"{m.path}/big", timeout=120, env=c_locale())
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert lines[0].startswith("total ")
    sizes = {}
    for line in lines[1:]:
        fields = line.split()
        assert fields[0].startswith("-r--r--r--"), line
        sizes[fields[-1]] = int(fields[4])
    assert sizes == big
    if extra:
        # One folder listing: one list_folder and its continue pages, nothing recursive beyond.
        pages = math.ceil(50000 / PAGE)
        assert list_calls(fake) <= pages + 3, routes(fake)


def test_walks_after_the_fill_make_no_listing_request(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "20000")
    m = mount_factory(fake)
    status = wait_for_fill(m.path, fake)
    assert status.get("phase") == "watching", status
    fill_requests = settled_listing_requests(fake)
    tree = fake.tree(hashes=False)
    pages = math.ceil(len(tree) / PAGE) + 1
    # The fill alone: the root by itself, then (this tree has hundreds of top-level folders, more
    # than the fill lists one by one) one recursive listing of the account, page by page.
    assert fill_requests["files/list_folder"] == 2 and list_calls(fake) <= pages + 1, (len(tree), fill_requests)
    compare_records(find_records(m.path), expected_entries(tree))
    r = run("du", "-s", m.path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert listing_requests(fake) == fill_requests


def test_cold_walk_costs_about_one_request_per_page(fake_factory, mount_factory):
    """A find started right at mount, racing the fill: list_folder + continue requests stay within
    the pages of one whole-account listing plus a small slack (subtree listings of folders the walk
    reaches first), never one request per folder (2,000 folders here)."""
    latency = 20
    fake = fake_factory("--synthetic", "20000")
    tree = fake.tree(hashes=False)
    entries = expected_entries(tree)
    folders = sum(1 for e in tree if e["tag"] == "folder")
    assert folders > 1000
    fake.config(latency_ms=latency)
    m = mount_factory(fake)
    compare_records(find_records(m.path), entries)
    r = run("du", "-s", m.path, timeout=120)
    assert r.returncode == 0
    wait_for_fill(m.path, fake)
    pages = math.ceil(len(tree) / PAGE) + 1
    calls = listing_requests(fake)
    print(f"{len(tree)} entries, {folders} folders, {pages} pages: {calls}")
    assert list_calls(fake) <= pages + 20, calls
    assert calls["files/get_metadata"] <= 20, calls


def test_no_prefetch_lists_folders_one_by_one(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "2000", "--big-folder", "2500")
    m = mount_factory(fake, "--no-prefetch")
    wait_until(lambda: routes(fake).get("files/list_folder/longpoll", 0) >= 1, timeout=10,
               message="the watcher's first longpoll")
    assert routes(fake).get("files/list_folder", 0) == 0, "nothing is listed before it is needed"
    assert run("ls", m.path).returncode == 0
    assert listing_requests(fake)["files/list_folder"] == 1, routes(fake)
    before = listing_requests(fake)

    # One folder: one list_folder (it holds fewer than 2,000 entries, so no continue).
    r = run("ls", "-la", m.path + "/Special", env=c_locale())
    assert r.returncode == 0 and b"notes.txt" in r.stdout
    after = listing_requests(fake)
    assert after["files/list_folder"] - before["files/list_folder"] == 1, (before, after)
    assert after["files/list_folder/continue"] == before["files/list_folder/continue"], (before, after)
    # Again, and missing names in it: answered from the listing.
    assert run("ls", "-la", m.path + "/Special").returncode == 0
    assert run("stat", m.path + "/Special/.hidden").returncode == 1
    assert listing_requests(fake) == after

    # A 2,500-entry folder: one list_folder and one continue.
    assert run("ls", "-l", m.path + "/big").returncode == 0
    big = listing_requests(fake)
    assert big["files/list_folder"] - after["files/list_folder"] == 1, (after, big)
    assert big["files/list_folder/continue"] - after["files/list_folder/continue"] == 1, (after, big)
    # Its subfolders were not listed: a subfolder costs its own request when opened.
    sub = next(e["path_display"] for e in fake.tree(hashes=False)
               if e["tag"] == "folder" and e["path_display"].count("/") == 2)
    assert run("ls", m.path + sub).returncode == 0
    assert listing_requests(fake)["files/list_folder"] - big["files/list_folder"] <= 2  # its parent, then it


def test_no_watch_relists_after_the_dir_cache_time(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "500")
    fake.add_file("/nw/keep.txt", b"keep\n")
    fake.add_file("/nw/grow.txt", b"small\n")
    fake.add_file("/nw/doomed.txt", b"doomed\n")
    m = mount_factory(fake, "--no-watch", "--dir-cache-time", "1")
    wait_for_fill(m.path, fake)

    def ls_l():
        r = run("ls", "-l", "--time-style=+%s", m.path + "/nw", env=c_locale())
        assert r.returncode == 0, r.stderr
        return {line.split()[-1]: int(line.split()[4]) for line in r.stdout.decode().splitlines()[1:]}

    assert ls_l() == {"keep.txt": 5, "grow.txt": 6, "doomed.txt": 7}
    fake.add_file("/nw/new.txt", b"new file\n")
    fake.add_file("/nw/grow.txt", b"much larger than before\n")
    fake.delete("/nw/doomed.txt")
    want = {"keep.txt": 5, "grow.txt": 24, "new.txt": 9}

    def relisted():
        got = ls_l()
        assert got == want, got

    _, seconds = poll_assert(relisted, timeout=3.0, interval=0.05, what="the changes after --dir-cache-time 1")
    print(f"changes visible after {seconds:.2f} s")
    assert run("cat", m.path + "/nw/grow.txt").stdout == b"much larger than before\n"
    assert run("cat", m.path + "/nw/new.txt").stdout == b"new file\n"
    assert routes(fake).get("files/list_folder/longpoll", 0) == 0, "--no-watch must not longpoll"
    assert routes(fake).get("files/list_folder/continue", 0) <= 1  # no change following


def test_status_says_when_the_fill_is_over_without_a_watcher(fake_factory, mount_factory):
    """`dropboxfs status` reads user.dropboxfs.status: with --no-watch, once the fill has ended (no
    more list requests, fill_seconds fixed), the phase must not still say `filling`."""
    fake = fake_factory("--synthetic", "500")
    m = mount_factory(fake, "--no-watch")
    wait_for_fill(m.path, fake)
    first = sync_status(m.path)
    assert "fill_seconds" in first, first
    assert first["phase"] != "filling", f"the fill is over but the status says {first}"
