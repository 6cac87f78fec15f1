"""A laptop's day (docs/SEMANTICS.md "Offline, sleep and sign-in"), through the fault proxy
(tools/faultproxy) between the mount and the HTTP fake: one proxy port per Dropbox host (api,
content, notify), each switched on its own.

- a blackholed network (connections accepted, never answered) is called offline within the
  answer bound; a read of an uncached file fails fast with ENETUNREACH, cached reads work, and
  once the network is back the same read works;
- the notify host alone unreachable: the mount is not offline, reads work, and changes still show
  (fetched on a timer instead of the longpoll);
- a revoked token: the status says the sign-in is refused, reads fail with EACCES (not
  ENETUNREACH), and after a fresh token in --access-token-file the mount reads again and shows the
  changes made meanwhile, without a remount;
- back from offline with a token revoked meanwhile: the mount leaves offline state and says the
  sign-in is refused (not "offline"), and a new token shows the changes made meanwhile;
- a change watcher that keeps failing is shown as stale;
- a resume from sleep (a clock jump through the test hook) restarts the longpoll at once: a change
  made while the longpoll's connection was dead shows within seconds.

Every wait is for a condition, with a bound; the bounds asserted are the documented ones plus room
for a loaded machine.
"""

import errno
import json
import os
import sys
import time
from pathlib import Path

import pytest

from helpers import env_for, poll_assert, run, sync_status, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "faultproxy"))
from faultproxy import ProxyGroup  # noqa: E402

BOUND = 2  # --timeouts connect=2,answer=2: a silent host is unreachable after 2 s
TIMEOUTS = f"connect={BOUND},answer={BOUND}"
# The documented bound plus room for a loaded machine (a pass cannot come from waiting it out:
# a blackholed request would wait forever).
FAST = BOUND + 6
ALLOWED = ("refused the sign-in",)


@pytest.fixture
def day(fake_factory):
    fake = fake_factory()
    fake.add_file("/cached.txt", b"cached bytes\n")
    for i in range(6):
        fake.add_file(f"/f{i}.txt", f"file {i}\n".encode())
    upstream = ("127.0.0.1", fake.port)
    with ProxyGroup({"api": upstream, "content": upstream, "notify": upstream}) as proxies:
        yield fake, proxies


def proxied_env(fake, proxies):
    ports = proxies.ports()
    return {
        "DROPBOXFS_API_URL": f"http://127.0.0.1:{ports['api']}",
        "DROPBOXFS_CONTENT_URL": f"http://127.0.0.1:{ports['content']}",
        "DROPBOXFS_NOTIFY_URL": f"http://127.0.0.1:{ports['notify']}",
        "DROPBOXFS_OAUTH_URL": fake.url,
    }


def mount(mount_factory, fake, proxies, *args):
    m = mount_factory(fake, "--timeouts", TIMEOUTS, *args, env_extra=proxied_env(fake, proxies),
                      allowed_log=ALLOWED)
    wait_until(lambda: sync_status(m.path).get("phase") == "watching", timeout=30, message="the listing")
    return m


def field(m, key):
    """The status attribute's `key`; an AssertionError (which poll_assert retries) while absent."""
    status = sync_status(m.path)
    assert key in status, status
    return status[key]


def read(path):
    """(bytes, None) or (None, errno), and the seconds it took."""
    start = time.monotonic()
    try:
        with open(path, "rb") as f:
            return f.read(), None, time.monotonic() - start
    except OSError as e:
        return None, e.errno, time.monotonic() - start


def test_blackhole_is_offline_within_the_bound_and_reads_fail_fast(day, mount_factory):
    fake, proxies = day
    m = mount(mount_factory, fake, proxies)
    data, err, _ = read(f"{m.path}/cached.txt")
    assert data == b"cached bytes\n", err
    proxies.set_mode("all", "blackhole")

    # The first read of an uncached file meets the silent host: ENETUNREACH within the bound.
    data, err, took = read(f"{m.path}/f0.txt")
    assert err == errno.ENETUNREACH and took < FAST, (data, err, took)
    # statfs needs the api host: it finds it silent too, and the mount says offline.
    os.statvfs(m.path)
    status, _ = poll_assert(lambda: field(m, "offline_since"), timeout=FAST, what="offline_since")
    assert "unreachable_content" in sync_status(m.path)
    # From now on at once, without asking; the cached file still reads.
    data, err, took = read(f"{m.path}/f1.txt")
    assert err == errno.ENETUNREACH and took < 1.5, (err, took)
    data, err, _ = read(f"{m.path}/cached.txt")
    assert data == b"cached bytes\n", err

    proxies.set_mode("all", "pass")
    # One request per 10 s finds the host back.
    wait_until(lambda: read(f"{m.path}/f1.txt")[0] == b"file 1\n", timeout=25, interval=0.5, message="the read to work again")
    wait_until(lambda: "offline_since" not in sync_status(m.path), timeout=45, interval=0.5,
               message="the mount back online")


def test_the_notify_host_alone_unreachable_is_not_offline(day, mount_factory):
    fake, proxies = day
    m = mount(mount_factory, fake, proxies)
    # The longpoll in flight is cut (reset), and every new connection to the notify host refused.
    wait_until(lambda: proxies["notify"].active_connections() >= 1, timeout=30, interval=0.1,
               message="the longpoll in flight")
    proxies.set_mode("notify", "reset")
    proxies.set_mode("notify", "refuse")
    wait_until(lambda: "unreachable_notify" in sync_status(m.path), timeout=30, interval=0.2, message="the notify host unreachable")
    for i in range(6):
        data, err, _ = read(f"{m.path}/f{i}.txt")
        assert data == f"file {i}\n".encode(), (i, err)
    status = sync_status(m.path)
    assert "offline_since" not in status and "unreachable_api" not in status, status
    # Changes still show: list_folder/continue at least every 10 s.
    fake.add_file("/second.txt", b"2\n")
    wait_until(lambda: os.path.exists(f"{m.path}/second.txt"), timeout=30, interval=0.2, message="second.txt")
    assert "offline_since" not in sync_status(m.path)


def test_a_revoked_token_is_a_sign_in_problem_and_a_new_token_is_read_again(day, mount_factory, tmp_path, binary):
    fake, proxies = day
    fake.add_token("day-token-1")
    token_file = tmp_path / "token"
    token_file.write_text("day-token-1\n")
    m = mount(mount_factory, fake, proxies, "--access-token-file", str(token_file))
    fake.rpc("auth/token/revoke", None, token="day-token-1")

    data, err, _ = read(f"{m.path}/f2.txt")
    assert err == errno.EACCES, (data, err)
    status = sync_status(m.path)
    assert status.get("sign_in") == "refused" and "offline_since" not in status, status
    r = run(binary, "status", m.path, env=env_for(fake))
    assert b"sign-in refused since" in r.stdout and b"offline" not in r.stdout, r
    log = m.log_text()
    assert log.count("refused the sign-in") == 1 and f"write a new access token to {token_file}" in log, log[-2000:]
    assert "day-token-1" not in log

    # Meanwhile a change on Dropbox; then the user writes a new token (by a rename, as editors do).
    fake.add_file("/while-refused.txt", b"new\n")
    fake.add_token("day-token-2")
    fresh = tmp_path / "token.new"
    fresh.write_text("day-token-2\n")
    os.rename(fresh, token_file)
    wait_until(lambda: read(f"{m.path}/f2.txt")[0] == b"file 2\n", timeout=10, interval=0.3, message="the read with the new token")
    wait_until(lambda: os.path.exists(f"{m.path}/while-refused.txt"), timeout=20, interval=0.3, message="the change made while the sign-in was refused")
    wait_until(lambda: "sign_in" not in sync_status(m.path), timeout=15, interval=0.3, message="the sign-in accepted again")
    wait_until(lambda: "accepts the sign-in again" in m.log_text(), timeout=10, interval=0.3, message="the log line saying so")
    assert f"the access token file {token_file} changed" in m.log_text()
    assert "day-token-2" not in m.log_text()


def test_back_online_with_a_token_revoked_meanwhile(day, mount_factory, tmp_path):
    fake, proxies = day
    fake.add_token("day-token-3")
    token_file = tmp_path / "token"
    token_file.write_text("day-token-3\n")
    m = mount(mount_factory, fake, proxies, "--access-token-file", str(token_file))
    proxies.set_mode("all", "blackhole")
    os.statvfs(m.path)  # needs the api host, which is silent
    poll_assert(lambda: field(m, "offline_since"), timeout=FAST, what="offline_since")
    # While offline, the token is revoked and a file is added (straight at the fake).
    fake.rpc("auth/token/revoke", None, token="day-token-3")
    fake.add_file("/meanwhile.txt", b"m\n")
    proxies.set_mode("all", "pass")
    # The watcher tries at least every 10 s; its 401 is an answer: not offline, a sign-in problem.
    poll_assert(lambda: field(m, "sign_in"), timeout=30, interval=0.3, what="sign_in=refused")
    status = sync_status(m.path)
    assert status["sign_in"] == "refused" and "offline_since" not in status, status
    assert "unreachable_api" not in status and "behind_since" in status, status
    data, err, _ = read(f"{m.path}/f3.txt")
    assert err == errno.EACCES, (data, err)
    token_file.write_text("day-token-4\n")
    fake.add_token("day-token-4")
    wait_until(lambda: os.path.exists(f"{m.path}/meanwhile.txt"), timeout=20, interval=0.3,
               message="the change made while offline")
    wait_until(lambda: read(f"{m.path}/f3.txt")[0] == b"file 3\n", timeout=15, interval=0.3, message="the read")
    status = sync_status(m.path)
    assert "sign_in" not in status and "behind_since" not in status, status


def test_a_watcher_that_keeps_failing_is_shown_stale(day, mount_factory, binary):
    fake, proxies = day
    m = mount_factory(fake, "--timeouts", TIMEOUTS + ",stale=3", env_extra=proxied_env(fake, proxies))
    wait_until(lambda: sync_status(m.path).get("phase") == "watching", timeout=30, message="the listing")
    assert "as_of" in sync_status(m.path)
    fake.add_fault("files/list_folder/continue", "500", count=0)
    fake.add_file("/never.txt", b"x\n")
    status, _ = poll_assert(lambda: field(m, "stale"), timeout=60, interval=0.3, what="stale=1")
    status = sync_status(m.path)
    assert status["stale"] == "1" and "behind_since" in status and "500" in status["behind_error"], status
    r = run(binary, "status", "--json", m.path, env=env_for(fake))
    mine = json.loads(r.stdout)["mounts"][0]
    assert mine["status"]["stale"] == 1 and "stale: not caught up with Dropbox since" in mine["summary"], mine
    fake.clear_faults()


def test_a_resume_restarts_the_longpoll_and_catches_up(day, mount_factory, tmp_path):
    fake, proxies = day
    jump = tmp_path / "clock-jump"
    m = mount_factory(fake, "--timeouts", TIMEOUTS,
                      env_extra={**proxied_env(fake, proxies), "DROPBOXFS_TEST_CLOCK_JUMP_FILE": str(jump)})
    wait_until(lambda: sync_status(m.path).get("phase") == "watching", timeout=30, message="the listing")
    assert "(a test hook)" in m.log_text()
    # The longpoll's connection dies silently, as it does when a laptop sleeps: the change is
    # never pushed. Only a restart of the longpoll (a catch-up) can show it.
    wait_until(lambda: proxies["notify"].active_connections() >= 1, timeout=30, interval=0.1,
               message="the longpoll in flight")
    proxies.set_mode("notify", "blackhole")
    fake.add_file("/while-asleep.txt", b"z\n")
    assert not os.path.exists(f"{m.path}/while-asleep.txt")
    jump.write_text("600\n")
    wait_until(lambda: os.path.exists(f"{m.path}/while-asleep.txt"), timeout=FAST, interval=0.2,
               message="the change made while asleep")
    wait_until(lambda: "resumed after about" in m.log_text(), timeout=10, interval=0.2, message="the resume log line")


def test_a_whole_day_offline_asleep_signed_out_and_back(day, mount_factory, tmp_path):
    """The day in one mount: filled and a file read; the network goes silent (offline within the
    bound, uncached reads fail fast, the cached one reads its bytes); the laptop sleeps (a clock
    jump); meanwhile files change, one is deleted, one is added, and the token is revoked; the
    network comes back: a sign-in problem, not offline, and no byte of a changed file that is not
    its own; a fresh token: every change shows within seconds, with the new bytes."""
    fake, proxies = day
    fake.add_token("day-token-5")
    token_file = tmp_path / "token"
    token_file.write_text("day-token-5\n")
    jump = tmp_path / "clock-jump"
    m = mount_factory(fake, "--timeouts", TIMEOUTS, "--access-token-file", str(token_file),
                      env_extra={**proxied_env(fake, proxies), "DROPBOXFS_TEST_CLOCK_JUMP_FILE": str(jump)},
                      allowed_log=ALLOWED)
    wait_until(lambda: sync_status(m.path).get("phase") == "watching", timeout=30, message="the listing")
    assert read(f"{m.path}/cached.txt")[0] == b"cached bytes\n"

    # Morning: the network goes silent.
    proxies.set_mode("all", "blackhole")
    os.statvfs(m.path)
    poll_assert(lambda: field(m, "offline_since"), timeout=FAST, what="offline_since")
    data, err, took = read(f"{m.path}/f1.txt")
    assert err == errno.ENETUNREACH and took < FAST, (data, err, took)
    assert read(f"{m.path}/cached.txt")[0] == b"cached bytes\n"

    # Asleep; meanwhile, on Dropbox: f1 rewritten, f2 deleted, a new file, the token revoked.
    jump.write_text("3600\n")
    fake.add_file("/f1.txt", b"file 1, rewritten while the laptop slept\n")
    fake.delete("/f2.txt")
    fake.add_file("/new today.txt", b"new\n")
    fake.rpc("auth/token/revoke", None, token="day-token-5")

    # Back: the answers say the sign-in is refused; nothing is called offline any more.
    proxies.set_mode("all", "pass")
    poll_assert(lambda: field(m, "sign_in"), timeout=30, interval=0.3, what="sign_in=refused")
    status = sync_status(m.path)
    assert "offline_since" not in status and status["sign_in"] == "refused", status
    data, err, _ = read(f"{m.path}/f1.txt")
    assert err == errno.EACCES, (data, err)
    assert read(f"{m.path}/cached.txt")[0] == b"cached bytes\n"

    # A fresh token: every change shows, with its own bytes.
    fake.add_token("day-token-6")
    fresh = tmp_path / "token.new"
    fresh.write_text("day-token-6\n")
    os.rename(fresh, token_file)
    wait_until(lambda: read(f"{m.path}/f1.txt")[0] == b"file 1, rewritten while the laptop slept\n",
               timeout=20, interval=0.3, message="the rewritten file's new bytes")
    wait_until(lambda: not os.path.exists(f"{m.path}/f2.txt") and os.path.exists(f"{m.path}/new today.txt"),
               timeout=20, interval=0.3, message="the deletion and the new file")
    assert read(f"{m.path}/new today.txt")[0] == b"new\n"
    assert sorted(os.listdir(m.path)) == sorted(["cached.txt", "f0.txt", "f1.txt", "f3.txt", "f4.txt", "f5.txt", "new today.txt"])
    wait_until(lambda: not ({"sign_in", "offline_since", "behind_since"} & set(sync_status(m.path))),
               timeout=15, interval=0.3, message="the status clean again")
    log = m.log_text()
    assert "resumed after about" in log and "day-token-5" not in log and "day-token-6" not in log
