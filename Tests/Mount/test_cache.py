"""Listings within the cache time cost no API request; lookups of missing names in a completely
listed folder are answered locally (file managers probe .hidden, .directory, desktop.ini ...)."""

import pytest

from helpers import c_locale, run, wait_until

LISTING_ROUTES = ("files/list_folder", "files/list_folder/continue", "files/get_metadata")


def listing_calls(fake):
    routes = fake.stats()["routes"]
    return {r: routes.get(r, 0) for r in LISTING_ROUTES}


def requests(fake):
    """Every API route's count except the change watcher's long poll, which waits in the background."""
    routes = fake.stats()["routes"]
    routes.pop("files/list_folder/longpoll", None)
    return routes


def ls_lr(path):
    r = run("ls", "-lR", path, timeout=120, env=c_locale())
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r.stdout


def wait_for_quiet(fake, timeout=30):
    """Waits until the daemon's background listing (if any) stops making listing requests."""
    last = [None]

    def settled():
        now = listing_calls(fake)
        if now == last[0]:
            return True
        last[0] = now
        return False

    wait_until(settled, timeout=timeout, interval=0.3, message="listing requests to stop")


# attr-timeout 0 makes the kernel ask the daemon for every lookup and getattr: the daemon's own
# cache must then answer them.
@pytest.mark.parametrize("extra", [(), ("--attr-timeout", "0")], ids=["default", "attr-timeout-0"])
def test_second_listing_makes_no_request(fake_factory, mount_factory, extra):
    fake = fake_factory("--synthetic", "3000", "--big-folder", "2500")
    m = mount_factory(fake, *extra)
    fake.reset_stats()
    first = ls_lr(m.path)
    assert sum(listing_calls(fake).values()) >= 1, "the first listing must ask the server"
    wait_for_quiet(fake)
    before = listing_calls(fake)

    assert ls_lr(m.path) == first
    r = run("find", m.path, "-printf", r"%y %s %P\0", timeout=60)
    assert r.returncode == 0
    r = run("du", "-s", m.path, timeout=60)
    assert r.returncode == 0
    assert listing_calls(fake) == before


@pytest.mark.parametrize("extra", [(), ("--attr-timeout", "0")], ids=["default", "attr-timeout-0"])
def test_missing_names_in_listed_folders_cost_no_request(fake_factory, mount_factory, extra):
    fake = fake_factory("--synthetic", "2000")
    deep = [e["path_display"][1:] for e in fake.tree(hashes=False)
            if e["tag"] == "folder" and e["path_display"].count("/") == 3][:2]
    assert len(deep) == 2
    m = mount_factory(fake, *extra)
    folders = ["", "Special", "Unicode/NFC"] + deep
    for folder in folders:
        assert run("ls", "-la", f"{m.path}/{folder}").returncode == 0
    wait_for_quiet(fake)
    before = requests(fake)
    for folder in folders:
        for probe in (".hidden", ".directory", "desktop.ini", ".Trash", ".Trash-0", "NOPE.txt",
                      ".sh_thumbnails/normal/abc.png"):
            r = run("stat", f"{m.path}/{folder}/{probe}", env=c_locale())
            assert r.returncode == 1 and b"No such file or directory" in r.stderr, (folder, probe)
        # The same name in another case is missing too (names match byte for byte), with no request.
        r = run("stat", f"{m.path}/{folder}/SPECIAL" if folder == "" else f"{m.path}/{folder}/x", env=c_locale())
        assert r.returncode == 1
    assert requests(fake) == before


def test_listing_is_refreshed_after_the_cache_time(fake_factory, mount_factory):
    """The counter-check: without the change watcher and with a short --dir-cache-time, a later
    listing does ask again (and sees a file added meanwhile), so the tests above measure something."""
    fake = fake_factory("--synthetic", "300")
    m = mount_factory(fake, "--no-watch", "--attr-timeout", "0", "--dir-cache-time", "0.5")
    assert b"late.txt" not in run("ls", f"{m.path}/Special").stdout
    fake.add_file("/Special/late.txt", b"late\n")
    wait_until(lambda: b"late.txt" in run("ls", f"{m.path}/Special").stdout, timeout=20, interval=0.1,
               message="the new file to show after the cache time")
