"""The fault matrix (docs/SEMANTICS.md "Bounds"): every fault kind the fake can inject, on every route
a phase of the mount's life depends on, in that phase:

  mount     users/get_current_account          `dropboxfs mount` itself
  fill      files/list_folder, .../continue     the whole-account listing at mount
  folder    files/list_folder, .../continue     a folder listed alone (--no-prefetch)
  delta     files/list_folder/longpoll, .../continue   changes followed after the fill
  statfs    users/get_space_usage              `df`
  sequential, random  files/download           `sha256sum` of a large file, `dd` of one range

Each case injects the fault on the next two requests of the route (one for `flip`, where the
second try must succeed), runs the phase's operation and requires: the exact tree or bytes, or a
documented errno (EIO, EACCES) within the stated bound; the daemon still running; and, once the
faults are cleared, the exact tree or bytes within seconds. An `[error]` log line fails the case
unless the fault is one that documents it. Timeouts are shortened with --timeouts so stalls and
slow drips take seconds.

  refresh   oauth2/token                       renewing short-lived tokens from a stored sign-in
"""

import hashlib
import os
import time

import pytest

from conftest import Mount, unmount_all
from helpers import compare_records, expected_entries, find_records, poll_assert, run
from test_auth import Home, signed_in

TIMEOUTS = "connect=2,rpc=6,download=6,stall=1,low-speed=2000/1"
BOUND = 45  # seconds an operation may take under a fault with these timeouts (retries included)

# Fault kinds and their parameters. Every kind fits every route; a few only make sense for some.
FAULTS = {
    "429json": {"retry_after": 1},
    "429text": {"retry_after": 1},
    "500": {},
    "503": {"retry_after": 1},
    "502html": {},
    "504html": {},
    "reset": {},
    "stall": {"stall_seconds": 3},
    "stall_body": {"stall_seconds": 3},
    "drip": {"drip_bytes": 1, "drip_seconds": 0.4},
    "truncate": {},
    "malformed_json": {},
    "expired_token": {},
    "flip": {},
    "whole_200": {},
}
ONLY = {"flip": {"files/download"}, "whole_200": {"files/download"}}
# Faults whose documented outcome includes an [error] line (a file that fails its check twice).
LOGGED = {"flip": ("content_hash",)}

PHASES = {
    "mount": ["users/get_current_account"],
    "fill": ["files/list_folder", "files/list_folder/continue"],
    "folder": ["files/list_folder", "files/list_folder/continue"],
    "delta": ["files/list_folder/longpoll", "files/list_folder/continue"],
    "statfs": ["users/get_space_usage"],
    "sequential": ["files/download"],
    "random": ["files/download"],
    "refresh": ["oauth2/token"],
}

CASES = [(phase, route, kind) for phase, routes in PHASES.items() for route in routes for kind in FAULTS
         if route in ONLY.get(kind, {route})]


def rule(route, kind):
    return {"route": route, "kind": kind, "count": 1 if kind == "flip" else 2, **FAULTS[kind]}


def alive(m):
    assert m.process.poll() is None, f"the daemon died: {m.log_text()[-3000:]}"


def timed(fn):
    start = time.monotonic()
    result = fn()
    elapsed = time.monotonic() - start
    assert elapsed < BOUND, f"took {elapsed:.1f} s (bound {BOUND} s)"
    return result


# A server that sends no byte within the stall limit (`stall`) is a silent host: a request made
# for a user fails at once with ENETUNREACH, and the host counts as unreachable until a probe finds
# it back (docs/SEMANTICS.md "Offline, sleep and sign-in"), at most 10 s later.
SILENT = {"stall"}
UNREACHABLE = b"Network is unreachable"


def ok_or_documented(r, errnos=(b"Input/output error", b"Permission denied", UNREACHABLE)):
    """The command succeeded, or failed with one of the documented errors (ENETUNREACH only for a
    silent host, which the caller checks with `unreachable_only_if_silent`)."""
    if r.returncode == 0:
        return True
    assert any(e in r.stderr for e in errnos), r.stderr
    return False


def unreachable_only_if_silent(r, kind):
    assert kind in SILENT or UNREACHABLE not in r.stderr, r.stderr


def tree_matches(m, fake, timeout=30):
    entries = expected_entries(fake.tree(hashes=False))
    poll_assert(lambda: compare_records(find_records(m.path), entries), timeout=timeout, interval=0.5,
                what="the mount to show the fake's tree")


def sha(data):
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("phase,route,kind", CASES, ids=[f"{p}-{r.rsplit('/', 1)[-1]}-{k}" for p, r, k in CASES])
def test_fault(phase, route, kind, fake_factory, mount_factory, binary, tmp_path):
    allowed = LOGGED.get(kind, ())
    if phase == "mount":
        fake = fake_factory("--synthetic", "300", "--seed", "5")
        fake.add_faults([rule(route, kind)])
        try:
            m = timed(lambda: mount_factory(fake, "--timeouts", TIMEOUTS, allowed_log=allowed))
        except AssertionError as e:
            # A reply that cannot be used (malformed, or a token Dropbox calls expired) ends the
            # command with its documented exit code and one message line (dropboxfs --help).
            text = str(e)
            assert "dropboxfs exited with" in text, text
            code = int(text.split("dropboxfs exited with ", 1)[1].split(":", 1)[0])
            assert code in (4, 5), text
            assert "\ndropboxfs: " in text, text
            fake.clear_faults()
            again = tmp_path / "again"
            again.mkdir()
            m = mount_factory(fake, "--timeouts", TIMEOUTS, allowed_log=allowed, mountpoint=again)
        alive(m)
        fake.clear_faults()
        tree_matches(m, fake)
        return

    if phase == "fill":
        fake = fake_factory("--synthetic", "3000", "--seed", "6")
        fake.add_faults([rule(route, kind)])
        m = mount_factory(fake, "--timeouts", TIMEOUTS, allowed_log=allowed)
        # The fill retries by itself; the tree must be exact within the bound, faults still armed.
        timed(lambda: tree_matches(m, fake, timeout=BOUND - 5))
        alive(m)
        return

    if phase == "folder":
        fake = fake_factory("--big-folder", "2600")
        m = mount_factory(fake, "--no-prefetch", "--timeouts", TIMEOUTS, allowed_log=allowed)
        fake.add_faults([rule(route, kind)])
        want = sorted(os.fsencode(e["name"]) for e in fake.tree(hashes=False)
                      if e["path_display"].startswith("/big/"))
        r = timed(lambda: run("ls", "-f", f"{m.path}/big", timeout=BOUND))
        unreachable_only_if_silent(r, kind)
        if ok_or_documented(r):
            assert sorted(n for n in r.stdout.split(b"\n") if n and n not in (b".", b"..")) == want
        alive(m)
        fake.clear_faults()
        def listed():
            r = run("ls", "-f", f"{m.path}/big", timeout=30)
            assert r.returncode == 0, r.stderr
            return r

        # A silent host is probed again within 10 s; any other fault is over at once.
        r, _ = poll_assert(listed, timeout=25 if kind in SILENT else 0, interval=1, what="the listing to work again")
        assert r.returncode == 0 and sorted(n for n in r.stdout.split(b"\n") if n and n not in (b".", b"..")) == want
        return

    if phase == "delta":
        fake = fake_factory("--synthetic", "300", "--seed", "7")
        m = mount_factory(fake, "--timeouts", TIMEOUTS, allowed_log=allowed)
        tree_matches(m, fake)
        fake.add_faults([rule(route, kind)])
        for i in range(3):
            fake.add_file(f"/delta/new-{i}.txt", b"new %d\n" % i)
        victim = next(e["path_display"] for e in fake.tree(hashes=False)
                      if e["tag"] == "file" and not e["path_display"].startswith("/delta"))
        fake.delete(victim)
        # Changes arrive by themselves, faults or not (the watcher retries), within the bound.
        timed(lambda: tree_matches(m, fake, timeout=BOUND - 5))
        alive(m)
        return

    if phase == "statfs":
        fake = fake_factory("--sample-account")
        m = mount_factory(fake, "--timeouts", TIMEOUTS, allowed_log=allowed)
        fake.add_faults([rule(route, kind)])
        r = timed(lambda: run("df", "-B1", m.path, timeout=BOUND))
        assert r.returncode == 0, r.stderr  # statfs shows the last answer (or zeros), never an error
        alive(m)
        fake.clear_faults()
        return

    if phase == "refresh":
        # Tokens from refresh grants live 6 s (renewed halfway): the mount refreshes every 3 s.
        fake = fake_factory("--synthetic", "300", "--seed", "8", "--access-token-ttl", "6")
        home = Home(tmp_path / "user")
        signed_in(binary, home, fake)
        mountpoint = tmp_path / "refresh"
        mountpoint.mkdir()
        m = Mount(binary, fake, mountpoint, ("--no-prefetch", "--timeouts", TIMEOUTS),
                  {"HOME": str(home.home), "XDG_CONFIG_HOME": str(home.config), "XDG_CACHE_HOME": str(home.cache)},
                  tmp_path / "refresh.log", token=None)
        m.allowed_log = allowed
        try:
            folders = [e["path_display"] for e in fake.tree(hashes=False) if e["tag"] == "folder"]
            fake.add_faults([rule(route, kind)])
            deadline = time.monotonic() + 6  # renewals under the fault (every 3 s)
            i = 0
            while time.monotonic() < deadline:
                r = timed(lambda: run("ls", f"{m.path}{folders[i % len(folders)]}", timeout=BOUND))
                unreachable_only_if_silent(r, kind)
                ok_or_documented(r)
                i += 1
                time.sleep(0.3)
            alive(m)
            fake.clear_faults()
            # Converges: renewals succeed again, and every folder lists.
            poll_assert(lambda: [run("ls", f"{m.path}{f}", timeout=30).check_returncode() for f in folders[:20]],
                        timeout=20, interval=1, what="listings to work again")
        finally:
            unmount_all([m])
        return

    # sequential and random reads of a file larger than the whole-file limit (ranged parts)
    fake = fake_factory()
    size = 12 * 2**20 + 333
    fake.add_file("/data/big.bin", size=size, seed=11)
    data = fake.content("/data/big.bin")
    m = mount_factory(fake, "--no-disk-cache", "--timeouts", TIMEOUTS, allowed_log=allowed + ("download failed",))
    fake.add_faults([rule(route, kind)])
    path = f"{m.path}/data/big.bin"
    if phase == "sequential":
        r = timed(lambda: run("sha256sum", path, timeout=BOUND))
        unreachable_only_if_silent(r, kind)
        if ok_or_documented(r):
            assert r.stdout.split()[0].decode() == sha(data)
    else:
        offset, length = 7 * 2**20 + 12345, 100_000
        r = timed(lambda: run("dd", f"if={path}", "bs=1", f"skip={offset}", f"count={length}",
                              "iflag=skip_bytes,count_bytes", "status=none", timeout=BOUND))
        unreachable_only_if_silent(r, kind)
        if ok_or_documented(r):
            assert r.stdout == data[offset:offset + length]
    alive(m)
    fake.clear_faults()
    # Converges: a whole pass gives the exact bytes. One more pass may fail with EIO first, when a
    # damaged part from the fault's time is still buffered (its pass finds it at the end).
    # A silent host is probed again within 10 s: until then, ENETUNREACH at once.
    deadline = time.monotonic() + 25
    attempt = 0
    while True:
        r = run("sha256sum", path, timeout=60)
        if r.returncode == 0:
            break
        if kind in SILENT and UNREACHABLE in r.stderr and time.monotonic() < deadline:
            time.sleep(1)
            continue
        assert b"Input/output error" in r.stderr and attempt < 2, r.stderr
        attempt += 1
    assert r.stdout.split()[0].decode() == sha(data)
