"""Where a mount logs and how much, changed without a remount: --log-file is honoured in the
foreground too (the terminal is told once), and SIGUSR1 / SIGUSR2 make a running daemon's log one
step more or less detailed (they used to end it: their default action)."""

import os
import signal
import subprocess

from helpers import env_for, is_mounted, pids_of_daemon, run, unmount, wait_until


def test_log_file_in_the_foreground_and_the_level_by_signal(fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    fake.add_file("/a.txt", b"a\n")
    log = tmp_path / "mount.log"
    m = mount_factory(fake, "--log-file", str(log))
    wait_until(lambda: log.exists() and b"pid" in log.read_bytes(), timeout=10, message="the first log line in the file")
    said = m.log_text()
    assert f"logging to {log} (--log-file)" in said, said
    assert "[info]" not in said, "the log lines go to the file, not the terminal"

    def lines():
        return log.read_text().splitlines()

    assert not any("[debug]" in line for line in lines())
    m.process.send_signal(signal.SIGUSR1)
    wait_until(lambda: any("log level debug (was info; SIGUSR1)" in line for line in lines()), timeout=10,
               message="the level raised")
    before = len(lines())
    assert run("cat", os.path.join(m.path, "a.txt")).stdout == b"a\n"
    os.listdir(m.path)
    wait_until(lambda: any("[debug]" in line for line in lines()[before:]), timeout=10, message="debug lines")
    # One at a time: the kernel merges a signal sent again before the first was taken.
    m.process.send_signal(signal.SIGUSR2)
    wait_until(lambda: any("log level info (was debug; SIGUSR2)" in line for line in lines()), timeout=10,
               message="the level lowered")
    m.process.send_signal(signal.SIGUSR2)
    wait_until(lambda: any("log level warning (was info; SIGUSR2)" in line for line in lines()), timeout=10,
               message="the level lowered again")
    assert m.process.poll() is None, "the signals did not end the daemon"
    assert os.listdir(m.path) == ["a.txt"]


def test_a_log_file_that_cannot_be_opened_fails_the_foreground_mount(binary, fake_factory, tmp_path):
    fake = fake_factory()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    target = tmp_path / "elsewhere"
    target.write_text("")
    link = tmp_path / "link.log"
    link.symlink_to(target)
    r = run(binary, "mount", mnt, "--foreground", "--log-file", link, env=env_for(fake), timeout=30)
    assert r.returncode == 2 and b"cannot open the log file" in r.stderr and b"symbolic link" in r.stderr, r


def test_d_mounts_in_the_foreground_with_debug_lines(binary, fake_factory, tmp_path):
    """`dropboxfs mount MNT -d`, as with any libfuse program: it stays in the foreground (this
    process is the daemon) and logs debug lines; an unmount ends it with exit code 0."""
    fake = fake_factory()
    fake.add_file("/a.txt", b"a\n")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    env = env_for(fake, extra={"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path / "state")})
    log = open(tmp_path / "d.log", "wb")
    p = subprocess.Popen([binary, "mount", str(mnt), "-d"], env=env, stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL)
    try:
        wait_until(lambda: is_mounted(str(mnt)) or p.poll() is not None, timeout=20, message="the mount")
        assert p.poll() is None, "-d stays in the foreground"
        assert pids_of_daemon(str(mnt)) == [p.pid]
        assert os.listdir(mnt) == ["a.txt"]
        wait_until(lambda: b"[debug]" in (tmp_path / "d.log").read_bytes(), timeout=10, message="debug lines")
        assert unmount(str(mnt)).returncode == 0
        assert p.wait(timeout=15) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
            unmount(str(mnt))
        log.close()


def test_a_failure_with_a_log_file_in_the_foreground_is_said_on_the_terminal(binary, fake_factory, tmp_path):
    """The log goes to --log-file, but the one line that says why the mount failed is still seen
    where the command was typed."""
    fake = fake_factory()
    log = tmp_path / "mount.log"
    r = run(binary, "mount", tmp_path / "missing", "--foreground", "--log-file", log, env=env_for(fake), timeout=30)
    err = r.stderr.decode()
    assert r.returncode == 3 and "does not exist" in err.strip().splitlines()[-1], (r.returncode, err)
    assert f"logging to {log}" in err

