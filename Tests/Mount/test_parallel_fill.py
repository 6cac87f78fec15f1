"""The whole-account fill over parallel branches (docs/SEMANTICS.md, "Listing order and shapes"),
through the real mount and the HTTP fake with the page policy Dropbox is allowed: pages capped far
below `limit`, stretches of one-entry pages, server time per page. The tree must come out exact,
the requests within 1.3 times the pages the data needs plus 20, and changes made while the branches
are listed must end as the account says (adds, deletes, a move across branches, a folder replaced
by a file)."""

import math

from helpers import (
    compare_records, expected_entries, find_records, list_calls, poll_assert, sync_status, wait_for_fill, wait_until,
)


def listing_requests(fake):
    routes = fake.stats()["routes"]
    return list_calls(fake) + routes.get("files/list_folder/get_latest_cursor", 0)


def assert_eventually_the_account(m, fake):
    """The mount's tree is the account's, once the watcher has caught up with the last change."""
    want = expected_entries(fake.tree(hashes=False))
    poll_assert(lambda: compare_records(find_records(m.path), want), timeout=20, interval=0.5,
                what="the mount matching the account")


def test_capped_pages_fill_the_exact_tree_within_the_request_budget(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "6000", "--folders", "600", "--top-folders", "8", "--max-page", "50")
    tree = fake.tree(hashes=False)
    m = mount_factory(fake)
    status = wait_for_fill(m.path, fake, timeout=120)
    assert status.get("phase") == "watching", status
    routes = fake.stats()["routes"]
    # The root alone, then a recursive listing per top-level folder (more after splits).
    assert routes["files/list_folder"] >= 1 + 8, routes
    pages_needed = math.ceil(len(tree) / 50)
    assert listing_requests(fake) <= pages_needed * 1.3 + 20, (pages_needed, routes)
    compare_records(find_records(m.path), expected_entries(tree))


def test_stretches_of_one_entry_pages_lose_nothing(fake_factory, mount_factory):
    # Every listing's pages 2 to 41 hold one entry each (the stretch is per listing in the fake,
    # so this one checks the tree, not the request count).
    fake = fake_factory("--synthetic", "3000", "--folders", "300", "--top-folders", "5",
                        "--max-page", "80", "--tiny-pages", "2:40", "--adversarial", "shuffle,late-parents")
    tree = fake.tree(hashes=False)
    m = mount_factory(fake)
    status = wait_for_fill(m.path, fake, timeout=120)
    assert status.get("phase") == "watching", status
    compare_records(find_records(m.path), expected_entries(tree))


def test_one_chain_with_fill_parallel_1(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "3000", "--top-folders", "6", "--max-page", "200")
    tree = fake.tree(hashes=False)
    m = mount_factory(fake, "--fill-parallel", "1")
    wait_for_fill(m.path, fake, timeout=120)
    routes = fake.stats()["routes"]
    # One recursive listing of the account (and at most the root's own listing, asked by the
    # mount's first look at the root). Two cursors: the CLI's account check, and the fill's own,
    # taken before the chain so the changes since it are applied after it, as after a parallel fill.
    assert routes["files/list_folder"] <= 2, routes
    assert routes.get("files/list_folder/get_latest_cursor", 0) <= 2, routes
    compare_records(find_records(m.path), expected_entries(tree))


def test_changes_during_the_fill_end_in_the_account_state(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "4000", "--folders", "400", "--top-folders", "6", "--seed", "3")
    for name in ("Alpha", "Beta"):
        for i in range(30):
            fake.add_file(f"/{name}/sub{i % 3}/f{i}.txt", data=b"%d\n" % i)
    # Slow pages (about 0.5 s each way for the whole fill): the changes land while branches list.
    fake.config(latency_ms=20, page_cost_ms_per_1000=200, max_page=100)
    m = mount_factory(fake)
    wait_until(lambda: int(sync_status(m.path).get("pages", 0)) >= 3, timeout=30,
               message="the fill to be under way")
    assert sync_status(m.path)["phase"] == "filling", "the fill ended before the changes: the test proves nothing"
    fake.move("/Beta/sub1", "/Alpha/from-beta")
    fake.delete("/Beta/sub2")
    fake.add_file("/Beta/sub2", data=b"now a file\n")
    fake.add_file("/Alpha/sub0/new.txt", data=b"new\n")
    fake.delete("/Alpha/sub0/f0.txt")
    fake.add_file("/late-top/x.txt", data=b"x\n")
    status = wait_for_fill(m.path, fake, timeout=120)
    assert status.get("phase") == "watching", status
    # The watcher's first longpoll may still be catching up with the last change: poll the result.
    assert_eventually_the_account(m, fake)


def test_a_refill_splits_the_branch_the_tree_shows_as_big(fake_factory, mount_factory):
    # A refill after a cursor reset plans from the sizes the mount's tree holds
    # (Sync/FillPlan.swift): the biggest top-level folder (over a sixth of the account and over
    # two 2000-entry pages) is listed by itself and its subfolders recursively, never itself. Its 9
    # subfolders just fit the plan's room (18 requests of budget for 10 pages' worth of entries,
    # less the cursor, the root and the 6 top-level listings): a tighter budget fails here.
    fake = fake_factory("--synthetic", "20000", "--folders", "2000", "--top-folders", "6", "--seed", "4")
    m = mount_factory(fake, "--debug")
    status = wait_for_fill(m.path, fake, timeout=120)
    assert status.get("phase") == "watching", status
    tree = fake.tree(hashes=False)
    below = {}
    for e in tree:
        top = e["path_lower"].split("/")[1]
        below[top] = below.get(top, 0) + (e["path_lower"].count("/") > 1)
    biggest = max(below, key=below.get)
    assert below[biggest] > max(len(tree) / 6, 4000), below
    big = next(e for e in tree if e["path_lower"] == "/" + biggest)
    subfolders = [e for e in tree if e["tag"] == "folder" and e["path_lower"].rsplit("/", 1)[0] == "/" + biggest]
    assert subfolders, "the biggest branch has no subfolder to split into"
    fake.reset_stats()
    # A change in the big branch around the reset (the watcher may apply it first, or the split
    # folder's fresh listing brings it): the tree must end with it either way. A file, not a
    # subfolder: a tenth subfolder seen before the plan would not fit its room (Sync/FillPlanTests
    # covers subfolders made or removed since the tree was taken).
    fake.add_file(big["path_display"] + "/made later.txt", data=b"x\n")
    fake.reset_cursors()
    wait_until(lambda: sync_status(m.path).get("resets") == "1", timeout=30, message="the reset to be seen")
    status = wait_for_fill(m.path, fake, timeout=120)
    assert status.get("phase") == "watching", status
    listed = [(e["arg"]["path"], e["arg"]["recursive"]) for e in fake.log()
              if e["route"] == "files/list_folder" and e.get("arg")]
    paths_of_big = {big["id"], big["path_lower"]}
    assert any(p in paths_of_big and not r for p, r in listed), listed
    assert not any(p in paths_of_big and r for p, r in listed), (big["id"], listed)
    assert all((e["id"], True) in listed or (e["path_lower"], True) in listed for e in subfolders), listed
    assert_eventually_the_account(m, fake)
