"""Starting and stopping: foreground daemon on SIGTERM / SIGINT / fusermount3 -u, a killed daemon
(auto_unmount), the background mode, and a mount whose INIT the kernel connection refuses."""

import json
import os
import re
import sys
import shutil
import tempfile
import time
import signal
import subprocess

import pytest

from helpers import TOKEN, env_for
from helpers import is_mounted, pids_of_daemon, process_gone, run, unmount, wait_until


def small_fake(fake_factory):
    fake = fake_factory()
    fake.add_file("/hello.txt", b"hello\n")
    fake.add_file("/folder/inside.txt", b"inside\n")
    return fake


def assert_usable(m):
    r = run("ls", m.path)
    assert r.returncode == 0
    assert r.stdout.split() == [b"folder", b"hello.txt"]


def assert_clean_shutdown(m):
    """The daemon said it unmounted, and nothing complained while it shut down (background work
    such as the change watcher must stop quietly)."""
    lines = m.log_text().splitlines()
    done = [i for i, line in enumerate(lines) if "unmounted" in line]
    assert done, "no 'unmounted' line in the daemon log"
    noisy = [line for line in lines[done[0]:] if "[warning]" in line or "[error]" in line]
    assert not noisy, f"the daemon complained while shutting down: {noisy}"


# The two request loops (FUSEAdapter/SessionLoop.swift): the default one thread that stays awake
# a moment for the next request, and libfuse's multi-threaded loop (--spin-us 0, or --threads).
LOOPS = [
    # (With one CPU the daemon never spins: the default then is libfuse's loop.)
    pytest.param([], "serving requests on one thread, awake 200 µs" if len(os.sched_getaffinity(0)) > 1
                 else "serving requests with libfuse's loop, up to 16 threads", id="spinning"),
    pytest.param(["--spin-us", "0"], "serving requests with libfuse's loop, up to 16 threads", id="libfuse"),
    pytest.param(["--threads", "4"], "serving requests with libfuse's loop, up to 4 threads", id="threads"),
]


def mount_with_loop(fake, mount_factory, args, line):
    m = mount_factory(fake, "--log-level", "debug", *args)
    assert_usable(m)
    assert line in m.log_text(), m.log_text()[-2000:]
    return m


@pytest.mark.parametrize("args,line", LOOPS)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["TERM", "INT", "HUP"])
def test_signal_unmounts_and_exits_zero(fake_factory, mount_factory, sig, args, line):
    fake = small_fake(fake_factory)
    m = mount_with_loop(fake, mount_factory, args, line)
    started = time.monotonic()
    m.process.send_signal(sig)
    assert m.process.wait(timeout=15) == 0, m.log_text()
    assert time.monotonic() - started < 5, "the daemon took long to notice the signal"
    assert not is_mounted(m.path)
    assert os.listdir(m.path) == []
    assert "unmounted" in m.log_text()


def test_one_usable_cpu_means_libfuses_loop(fake_factory, mount_factory):
    """Spinning on the only CPU the daemon may use would take it from the process it waits for."""
    fake = small_fake(fake_factory)
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})  # the daemon inherits it
    try:
        m = mount_with_loop(fake, mount_factory, [], "serving requests with libfuse's loop, up to 16 threads")
    finally:
        os.sched_setaffinity(0, allowed)
    m.process.send_signal(signal.SIGTERM)
    assert m.process.wait(timeout=15) == 0, m.log_text()


@pytest.mark.parametrize("args,line", LOOPS)
def test_fusermount_unmount_ends_the_daemon(fake_factory, mount_factory, args, line):
    fake = small_fake(fake_factory)
    m = mount_with_loop(fake, mount_factory, args, line)
    r = unmount(m.path)
    assert r.returncode == 0, r.stderr
    assert m.process.wait(timeout=15) == 0, m.log_text()
    assert not is_mounted(m.path)
    assert "unmounted" in m.log_text()
    assert "was aborted" not in m.log_text()


def test_shutdown_while_the_watcher_waits_is_quiet(fake_factory, mount_factory):
    """Unmounting while the change watcher's long poll is in flight (the normal state of an idle
    mount) ends the daemon with exit code 0 and without warnings or errors. The complaint races
    with the process exit, so the test goes through several mount/unmount cycles."""
    fake = small_fake(fake_factory)
    complaints = []
    for cycle in range(6):
        before = fake.stats()["routes"].get("files/list_folder/longpoll", 0)
        m = mount_factory(fake)
        assert_usable(m)
        wait_until(lambda: fake.stats()["routes"].get("files/list_folder/longpoll", 0) > before, timeout=15,
                   message="the change watcher's long poll to start")
        if cycle % 2 == 0:
            m.process.send_signal(signal.SIGTERM)
        else:
            assert unmount(m.path).returncode == 0
        assert m.process.wait(timeout=15) == 0, m.log_text()
        assert not is_mounted(m.path)
        try:
            assert_clean_shutdown(m)
        except AssertionError as e:
            complaints.append(f"cycle {cycle} ({'SIGTERM' if cycle % 2 == 0 else 'fusermount3 -u'}): {e}")
    assert not complaints, "\n".join(complaints)


def test_unmount_while_busy_is_refused_then_works(fake_factory, mount_factory):
    fake = small_fake(fake_factory)
    m = mount_factory(fake)
    holder = open(f"{m.path}/hello.txt", "rb")
    try:
        r = unmount(m.path, busy_for=0)
        assert r.returncode != 0 and b"busy" in r.stderr
        assert m.process.poll() is None
        assert is_mounted(m.path)
    finally:
        holder.close()
    assert unmount(m.path).returncode == 0
    assert m.process.wait(timeout=15) == 0


def test_killed_daemon_leaves_a_usable_mount_point(fake_factory, mount_factory):
    fake = small_fake(fake_factory)
    m = mount_factory(fake)
    assert_usable(m)
    m.process.kill()
    assert m.process.wait(timeout=15) == -signal.SIGKILL
    # auto_unmount: fusermount3's helper notices the dead daemon and unmounts.
    wait_until(lambda: not is_mounted(m.path), timeout=10, message="the mount to go away after kill -9")
    r = run("ls", "-a", m.path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [b".", b".."]
    # And a new mount on the same folder works.
    m2 = mount_factory(fake, mountpoint=m.path)
    assert_usable(m2)
    m2.unmount()
    assert m2.process.returncode == 0


def start_in_background(binary, *args, env, timeout=10):
    """Runs `dropboxfs mount ...` without --foreground, as a shell script would (stdout and stderr
    captured through pipes), and returns (rc, stdout, stderr). The command must return by itself
    once the mount is ready; if it has not after `timeout` s, it is killed and the test fails."""
    p = subprocess.Popen([str(binary), *map(str, args)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        mounted = is_mounted(args[1])
        p.kill()
        out, err = p.communicate()
        raise AssertionError(
            f"`dropboxfs {' '.join(map(str, args))}` did not return within {timeout} s "
            f"(mount ready: {mounted}); output: {out!r} {err!r}")
    return p.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def test_background_mode(binary, fake_factory, background_mounts, tmp_path):
    fake = small_fake(fake_factory)
    mnt = tmp_path / "bg"
    mnt.mkdir()
    log = tmp_path / "bg.log"
    background_mounts.append(mnt)
    rc, out, err = start_in_background(binary, "mount", mnt, "--log-file", log, env=env_for(fake))
    assert rc == 0, err
    assert str(mnt) in out
    # Mounted as soon as the command returns, no polling needed.
    assert is_mounted(mnt)
    assert run("ls", mnt).stdout.split() == [b"folder", b"hello.txt"]
    assert run("cat", f"{mnt}/folder/inside.txt").stdout == b"inside\n"
    pids = pids_of_daemon(mnt)
    assert len(pids) == 1, pids
    # The daemon runs in its own session, detached from ours.
    assert os.getsid(pids[0]) == pids[0]
    r = unmount(mnt)
    assert r.returncode == 0, r.stderr
    wait_until(lambda: process_gone(pids[0]), timeout=15, message="the background daemon to exit")
    assert not is_mounted(mnt)
    text = log.read_text(errors="replace")
    assert "mounted" in text and "unmounted" in text and "[error]" not in text


def dropboxfs_pids():
    pids = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if b"dropboxfs" in f.read().split(b"\0")[0]:
                    pids.append(int(d))
        except (OSError, ValueError):
            continue
    return pids


def test_the_token_never_stays_in_a_process_environment(binary, fake_factory, background_mounts, mount_factory,
                                                         tmp_path):
    """A token given in DROPBOXFS_ACCESS_TOKEN is taken out of the environment at start: neither the
    background daemon nor the mount guard carries it in /proc/PID/environ (the daemon gets it over
    a pipe), and the mount works with it."""
    fake = small_fake(fake_factory)
    secret = "secret-token-for-environ-check"
    fake.add_token(secret)
    mnt = tmp_path / "bg"
    mnt.mkdir()
    background_mounts.append(mnt)
    before = set(dropboxfs_pids())
    rc, out, err = start_in_background(binary, "mount", mnt, "--log-file", tmp_path / "bg.log",
                                       env=env_for(fake, token=secret))
    assert rc == 0, err
    assert run("cat", f"{mnt}/folder/inside.txt").stdout == b"inside\n"
    # This test's processes (other tests may run beside it): the new ones naming its mount point
    # (the daemon, and the guard, whose environment holds only PATH).
    started = []
    for pid in dropboxfs_pids():
        if pid in before:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if os.fsencode(str(mnt)) in argv:
            started.append((pid, environ))
    assert len(started) >= 2, "the daemon and its mount guard"
    for pid, environ in started:
        assert secret.encode() not in environ, pid
        assert b"DROPBOXFS_ACCESS_TOKEN=" not in environ, pid
    assert secret not in (tmp_path / "bg.log").read_text(errors="replace")
    # In the foreground the variable's value is wiped from the process's own environment block.
    m = mount_factory(fake, env_extra={"DROPBOXFS_ACCESS_TOKEN": secret})
    with open(f"/proc/{m.process.pid}/environ", "rb") as f:
        assert secret.encode() not in f.read()


def test_the_log_file_is_never_opened_through_a_symlink(binary, fake_factory, background_mounts, tmp_path):
    """--log-file opens with O_NOFOLLOW and mode 0600: a symlink planted at the log's path makes the
    start fail instead of appending to (or creating) the file it points to."""
    fake = small_fake(fake_factory)
    mnt = tmp_path / "bg"
    mnt.mkdir()
    background_mounts.append(mnt)
    target = tmp_path / "victim"
    target.write_text("untouched\n")
    log = tmp_path / "planted.log"
    log.symlink_to(target)
    rc, out, err = start_in_background(binary, "mount", mnt, "--log-file", log, env=env_for(fake))
    assert rc != 0, (out, err)
    assert not is_mounted(mnt)
    assert target.read_text() == "untouched\n"
    fresh = tmp_path / "fresh.log"
    rc, out, err = start_in_background(binary, "mount", mnt, "--log-file", fresh, env=env_for(fake))
    assert rc == 0, err
    assert oct(os.stat(fresh).st_mode & 0o777) == oct(0o600)


def test_background_mode_reports_failures_with_their_exit_code(binary, fake_factory, background_mounts, tmp_path):
    fake = small_fake(fake_factory)
    mnt = tmp_path / "bg"
    mnt.mkdir()
    background_mounts.append(mnt)
    rc, out, err = start_in_background(binary, "mount", mnt, "--log-file", tmp_path / "bg.log",
                                       env=env_for(fake, token="wrong"))
    assert rc == 4, (rc, err)
    message = err.strip().splitlines()[-1]
    assert message.startswith("dropboxfs: ") and "rejected" in message, err
    assert not is_mounted(mnt)
    assert pids_of_daemon(mnt) == []


# ---- ready only once the kernel's INIT was answered ---------------------------------------------------

# The test-only hook that makes libfuse refuse the kernel's INIT (docs/TESTING.md "Test-only hooks").
REFUSE_INIT = {"DROPBOXFS_TEST_REFUSE_INIT": "1"}

# Runs the command in argv as a child subreaper, so that the background daemon it leaves behind
# becomes this runner's child when the command exits and its exit code can be read; prints, as
# JSON, the command's exit code and output and the exit code of every process left behind, by pid.
ADOPTING_RUNNER = r"""
import ctypes, json, os, subprocess, sys
PR_SET_CHILD_SUBREAPER = 36
assert ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
p = subprocess.run(sys.argv[1:], capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
left = {}
while True:
    try:
        pid, status = os.wait()
    except ChildProcessError:
        break
    left[pid] = os.waitstatus_to_exitcode(status)
print(json.dumps({"rc": p.returncode, "out": p.stdout.decode(errors="replace"),
                  "err": p.stderr.decode(errors="replace"), "left": left}))
"""


@pytest.mark.parametrize("args", [[], ["--spin-us", "0"]], ids=["spinning", "libfuse"])
def test_a_refused_init_fails_the_background_mount(binary, fake_factory, background_mounts, tmp_path, args):
    """The daemon reports ready only once the kernel's INIT was answered: when libfuse refuses it,
    the command fails with one clear line, libfuse's reason above it and exit code 1, instead of
    printing "mounted" and exiting 0 for a mount that is gone a moment later; the daemon itself
    exits non-zero too, and nothing stays mounted."""
    fake = small_fake(fake_factory)
    mnt = tmp_path / "bg"
    mnt.mkdir()
    background_mounts.append(mnt)
    log = tmp_path / "bg.log"
    r = run(sys.executable, "-c", ADOPTING_RUNNER, binary, "mount", mnt, "--log-file", log, *args,
            env=env_for(fake, extra=REFUSE_INIT), timeout=90)
    assert r.returncode == 0, r
    result = json.loads(r.stdout)
    text = log.read_text(errors="replace")
    assert result["rc"] == 1, (result, text)
    assert "mounted" not in result["out"], result
    message = result["err"].strip().splitlines()[-1]
    assert message.startswith("dropboxfs: ") and "INIT" in message, result["err"]
    assert "maximum read size" in result["err"], "libfuse's reason is shown above the message"
    daemon = int(re.search(r"; pid (\d+)", text).group(1))
    assert result["left"].get(str(daemon), 0) != 0, (result["left"], daemon, text)
    assert not is_mounted(mnt)
    assert pids_of_daemon(mnt) == []
    assert "dropboxfs[info]: mounted " not in text, text


@pytest.mark.parametrize("args", [[], ["--spin-us", "0"]], ids=["spinning", "libfuse"])
def test_a_refused_init_fails_the_foreground_daemon(binary, fake_factory, tmp_path, args):
    """In the foreground the same refusal ends the daemon with exit code 1 and the reason, never
    with a "mounted" line and exit code 0."""
    fake = small_fake(fake_factory)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = run(binary, "mount", mnt, "--foreground", *args, env=env_for(fake, extra=REFUSE_INIT), timeout=60)
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 1, (r.returncode, err)
    assert "INIT" in err.strip().splitlines()[-1], err
    assert "dropboxfs[info]: mounted " not in err, err
    assert not is_mounted(mnt)


def test_background_mode_default_log_file(binary, fake_factory, background_mounts, tmp_path):
    fake = small_fake(fake_factory)
    mnt = tmp_path / "bg"
    mnt.mkdir()
    cache = tmp_path / "cache"
    state = tmp_path / "state"
    background_mounts.append(mnt)
    rc, out, err = start_in_background(binary, "mount", mnt, env=env_for(
        fake, extra={"XDG_CACHE_HOME": str(cache), "XDG_STATE_HOME": str(state)}))
    assert rc == 0, err
    assert run("ls", mnt).stdout.split() == [b"folder", b"hello.txt"]
    # The log is state, not cache: $XDG_STATE_HOME/dropboxfs/dropboxfs.log.
    log = state / "dropboxfs" / "dropboxfs.log"
    assert log.exists()
    assert oct(os.stat(state / "dropboxfs").st_mode & 0o777) == "0o700"
    pids = pids_of_daemon(mnt)
    assert unmount(mnt).returncode == 0
    for pid in pids:
        wait_until(lambda: process_gone(pid), timeout=15, message="the background daemon to exit")
    assert TOKEN not in log.read_text(errors="replace")


def test_a_quick_remount_is_not_undone_by_the_previous_daemon(fake_factory, mount_factory):
    """The mount guard of a daemon that is still shutting down must not detach the next mount on
    the same folder, which gets the same recycled device number."""
    fake = small_fake(fake_factory)
    m = mount_factory(fake)
    assert_usable(m)
    assert unmount(m.path).returncode == 0
    m2 = mount_factory(fake, mountpoint=m.path)  # while the first daemon may still be exiting
    assert_usable(m2)
    assert m.process.wait(timeout=15) == 0
    time.sleep(1.0)  # the first daemon's guard has acted by now, if it were going to
    assert is_mounted(m2.path)
    assert_usable(m2)
    m2.unmount()
    assert m2.process.returncode == 0


@pytest.mark.parametrize("args, mode", [
    ((), "the kernel opens folders itself (no opendir)"),
    (("--no-watch",), "folders are opened through opendir"),
])
def test_folders_are_opened_by_the_kernel_unless_listings_expire(fake_factory, mount_factory, args, mode):
    """The speed of warm walks rests on the kernel opening folders itself (no OPENDIR/RELEASEDIR
    round trips); with --no-watch opendir stays as the point where expired folders are listed
    again. The daemon logs which mode the kernel connection uses."""
    fake = small_fake(fake_factory)
    m = mount_factory(fake, "--debug", *args)
    assert_usable(m)
    assert run("ls", f"{m.path}/folder").stdout.split() == [b"inside.txt"]
    m.unmount()
    assert mode in m.log_text()


def test_status_answers_quickly_when_a_mount_is_stuck(binary, fake_factory, mount_factory):
    """`dropboxfs status` asks each of the user's mounts for its progress on a thread of its own: a
    daemon that does not answer (here: stopped with SIGSTOP) costs a few seconds and one line, not
    a hang."""
    fake = small_fake(fake_factory)
    m = mount_factory(fake)
    healthy = mount_factory(fake)
    assert run("ls", m.path).returncode == 0
    os.kill(m.process.pid, signal.SIGSTOP)
    try:
        start = time.monotonic()
        r = run(binary, "status", env=env_for(fake), timeout=30)
        elapsed = time.monotonic() - start
    finally:
        os.kill(m.process.pid, signal.SIGCONT)
    out = r.stdout.decode(errors="replace")
    assert r.returncode == 0, (out, r.stderr)
    assert elapsed < 10, f"status took {elapsed:.1f} s"
    lines = [line for line in out.splitlines() if line.startswith("mount:")]
    stuck = [line for line in lines if m.path in line]
    assert stuck and "not answering" in stuck[0], out
    ok = [line for line in lines if healthy.path in line]
    assert ok and " entries" in ok[0], out
    assert run("ls", m.path).returncode == 0, "the mount works again once the daemon runs"


def test_the_process_is_not_dumpable(binary, fake_factory, tmp_path):
    """No core file may ever hold a token: dropboxfs makes itself not dumpable at start. The kernel
    then gives the process's /proc files to root, which a process of an ordinary user shows
    (a plain `sleep` of the same user keeps them)."""
    # A folder every user can reach (pytest's own are root's only), with a copy of the binary.
    shared = tempfile.mkdtemp(prefix="dropboxfs-nobody-", dir="/tmp")
    os.chmod(shared, 0o755)
    copy = os.path.join(shared, "dropboxfs")
    shutil.copy(binary, copy)
    os.chmod(copy, 0o755)
    home = os.path.join(shared, "home")
    os.mkdir(home)
    os.chmod(home, 0o777)
    fake = small_fake(fake_factory)
    env = env_for(fake, token=None, extra={"HOME": str(home), "XDG_CONFIG_HOME": str(home)})
    as_nobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    waiting = subprocess.Popen([*as_nobody, copy, "auth", "--app-key", "k"], env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    control = subprocess.Popen([*as_nobody, "sleep", "30"])
    try:
        waiting.stdout.readline()  # "1. Open this address ...": it now waits for the code on stdin
        # setpriv changes its user, then runs sleep: between the two the kernel also gives its /proc
        # files to root (a changed user makes a process not dumpable until its next exec).
        wait_until(lambda: open(f"/proc/{control.pid}/comm").read().strip() == "sleep", timeout=10,
                   message="setpriv to run sleep")
        assert os.stat(f"/proc/{control.pid}/environ").st_uid == 65534
        assert os.stat(f"/proc/{waiting.pid}/status").st_uid == 0
        with open(f"/proc/{waiting.pid}/status") as f:
            assert any(line.startswith("Uid:\t65534") for line in f)
        assert os.stat(f"/proc/{waiting.pid}/environ").st_uid == 0
    finally:
        for p in (waiting, control):
            p.kill()
            p.wait()
        shutil.rmtree(shared, ignore_errors=True)
