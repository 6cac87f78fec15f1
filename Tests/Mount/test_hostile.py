"""A server as hostile as a broken proxy or a buggy Dropbox can be: damaged bytes, whole files
answered to ranged requests, absurd sizes, a cursor that never advances, gateway errors in HTML.
Each case ends with exact bytes or a documented errno, the daemon alive, and no unexpected
`[error]` line (docs/SEMANTICS.md "Bounds", docs/READS.md)."""

import hashlib
import time

import pytest

from conftest import Mount, unmount_all
from test_auth import Home, signed_in
from helpers import compare_records, expected_entries, find_records, poll_assert, run, sync_status, wait_for_fill


def sha(data):
    return hashlib.sha256(data).hexdigest()


def test_bytes_damaged_once_are_downloaded_again(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/photo.jpg", size=3 * 2**20, seed=5)
    m = mount_factory(fake, "--no-disk-cache")
    fake.add_fault("files/download", "flip", count=1)
    r = run("sha256sum", f"{m.path}/photo.jpg", timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0].decode() == sha(fake.content("/photo.jpg"))
    log = m.log_text()
    assert "downloading the whole file once more" in log
    assert m.process.poll() is None


def test_bytes_damaged_every_time_fail_with_eio(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/bad.bin", size=2**20, seed=6)
    m = mount_factory(fake, "--no-disk-cache", allowed_log=("do not match",))
    fake.add_fault("files/download", "flip", count=0)
    r = run("cat", f"{m.path}/bad.bin", timeout=60)
    assert r.returncode != 0 and b"Input/output error" in r.stderr
    assert sum("match Dropbox's content_hash again" in line for line in m.log_text().splitlines()) == 1
    assert m.process.poll() is None


def vm_hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def test_a_whole_file_answered_to_ranged_requests_costs_no_memory(fake_factory, mount_factory):
    """Without the per-part body cap, 8 parallel parts of a 96 MiB file answered 200 would hold
    768 MiB outside --read-buffer-memory; with it each attempt fails at its length + 64 KiB."""
    fake = fake_factory()
    fake.add_file("/huge.bin", size=96 * 2**20, seed=7)
    m = mount_factory(fake, "--no-disk-cache", allowed_log=("download failed",))
    fake.add_fault("files/download", "whole_200", count=0)
    r = run("cat", f"{m.path}/huge.bin", timeout=120)
    assert r.returncode != 0 and b"Input/output error" in r.stderr
    assert m.process.poll() is None
    assert vm_hwm_kib(m.process.pid) < 300 * 1024, f"peak RSS {vm_hwm_kib(m.process.pid)} KiB"
    fake.clear_faults()
    r = run("sha256sum", f"{m.path}/huge.bin", timeout=120)
    assert r.returncode == 0 and r.stdout.split()[0].decode() == sha(fake.content("/huge.bin"))


def test_absurd_sizes_hide_the_entry_only(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/a/small.txt", b"hello")
    fake.add_file("/b.txt", b"world")
    fake.add_fault("files/list_folder", "huge_size", count=0)
    m = mount_factory(fake, "--no-prefetch")
    names = run("ls", m.path).stdout.split()
    assert names == [b"a"], names  # b.txt's size is 2^64 - 1 in every listing: hidden
    assert "undecodable" in m.log_text()
    assert m.process.poll() is None
    r = run("stat", "-c", "%s %b", f"{m.path}/a", timeout=30)
    assert r.returncode == 0


def test_a_cursor_that_never_advances_fails_the_fill_which_starts_again(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "3000", "--seed", "4")
    fake.add_fault("files/list_folder/continue", "stuck_cursor", count=150)
    m = mount_factory(fake, allowed_log=("did not advance",))
    status = poll_assert(lambda: _filled(m), timeout=60, what="the fill to complete after its retry")[0]
    assert int(status["fill_failures"]) >= 1, status
    assert "did_not_advance" in status.get("last_failure", "") or "advance" in m.log_text()
    compare_records(find_records(m.path), expected_entries(fake.tree(hashes=False)))


def _filled(m):
    status = sync_status(m.path)
    assert status["phase"] == "watching", status
    return status


def test_gateway_errors_in_html_are_retried(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/g/x.txt", b"x")
    fake.add_faults([{"route": "files/list_folder", "kind": "502html", "count": 2},
                     {"route": "files/download", "kind": "504html", "count": 2}])
    m = mount_factory(fake, "--no-prefetch")
    assert run("ls", f"{m.path}/g").stdout.split() == [b"x.txt"]
    assert run("cat", f"{m.path}/g/x.txt").stdout == b"x"


def test_an_absurd_retry_after_pauses_for_the_bound_only(fake_factory, mount_factory):
    """A 429 asking for 10^10 s once killed the daemon (the pause overflowed). It is cut to the
    bound (--timeouts max-pause, 600 s by default) with one log line, and the request then succeeds."""
    fake = fake_factory("--sample-account")
    m = mount_factory(fake, "--timeouts", "max-pause=2")
    fake.add_fault("users/get_space_usage", "429json", retry_after=1e10, count=1)
    start = time.monotonic()
    r = run("df", "-B1", m.path, timeout=60)
    elapsed = time.monotonic() - start
    assert r.returncode == 0, r.stderr
    assert 1.5 <= elapsed < 15, elapsed
    assert m.process.poll() is None
    assert 'retry_after "10000000000' in m.log_text()


@pytest.mark.parametrize("ttl", [0, -5])
def test_absurd_token_lifetimes_never_make_a_refresh_loop(ttl, binary, fake_factory, tmp_path):
    """A token endpoint answering expires_in 0 or negative (its tokens then expire at once): the
    lifetime is taken as 5 s with one log line per renewal, a rejected token is renewed once per
    request, never in a loop, and the mount gives up at once with exit code 4 and a clear message;
    with a sane endpoint the same sign-in mounts."""
    fake = fake_factory("--synthetic", "200", "--seed", "9")
    home = Home(tmp_path / "user")
    signed_in(binary, home, fake)
    fake.config(access_token_ttl=ttl)
    env = {"HOME": str(home.home), "XDG_CONFIG_HOME": str(home.config), "XDG_CACHE_HOME": str(home.cache)}
    mountpoint = tmp_path / "m"
    mountpoint.mkdir()
    start = time.monotonic()
    with pytest.raises(AssertionError) as failed:
        Mount(binary, fake, mountpoint, ("--no-prefetch",), env, tmp_path / "daemon.log", token=None)
    text = str(failed.value)
    assert time.monotonic() - start < 15
    assert "dropboxfs exited with 4" in text and "dropboxfs: Dropbox rejected the credentials" in text, text
    renewals = [line for line in text.splitlines() if f'expires_in "{ttl}"' in line]
    assert 1 <= len(renewals) <= 2, text
    fake.config(access_token_ttl=14400)
    m = Mount(binary, fake, mountpoint, ("--no-prefetch",), env, tmp_path / "daemon2.log", token=None)
    m.allowed_log = ()
    try:
        assert run("ls", m.path, timeout=30).returncode == 0
    finally:
        unmount_all([m])
