"""fstab and the mount helper. For an fstab line of type fuse.dropboxfs, mount(8)
runs `/sbin/mount.fuse SOURCE MOUNTPOINT -o OPTIONS -t fuse.dropboxfs` (mount.fuse is mount.fuse3),
which runs `dropboxfs SOURCE MOUNTPOINT -o OPTIONS` found on PATH, with the options it does not
handle itself. These tests give /sbin/mount.fuse3 that same argv, with a PATH whose `dropboxfs` is
the built binary, against the fake: SOURCE names the profile, fstab's own options are ignored,
dropboxfs's long options work as -o items, rw (which mount(8) adds to a line without ro) mounts
read-only with a warning, and a typo fails before anything is sent."""

import os

import pytest

from helpers import c_locale, env_for, is_mounted, mount_info, pids_of_daemon, process_gone, run, unmount, wait_until
from test_profiles import profile_env, sign_in_with_args
from test_auth import Home

HELPER = "/sbin/mount.fuse3"
FSTAB_OPTIONS = "ro,noauto,nofail,_netdev,user,users,x-systemd.automount,x-systemd.idle-timeout=10min"


@pytest.fixture
def path_with_dropboxfs(binary, tmp_path):
    """A PATH whose first folder has `dropboxfs` (a link to the built binary), as /usr/bin would."""
    if not os.path.exists(HELPER):
        pytest.fail(f"{HELPER} is missing (package fuse3)")
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "dropboxfs").symlink_to(binary)
    return f"{folder}:{os.environ.get('PATH', '/usr/bin:/bin')}"


@pytest.fixture
def fake(fake_factory):
    fake = fake_factory()
    fake.add_file("/hello.txt", b"hello\n")
    fake.add_file("/folder/inside.txt", b"inside\n")
    return fake


def source_of(mountpoint):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if f" {mountpoint} " in line:
                return line.split(" - ")[1].split()[:2]
    return None


def unmount_and_wait(path):
    pids = pids_of_daemon(path)
    assert unmount(path).returncode == 0
    for pid in pids:
        wait_until(lambda: process_gone(pid), timeout=15, message="the daemon to exit")


def helper(source, mountpoint, options, env):
    """What mount(8) runs for `SOURCE MOUNTPOINT fuse.dropboxfs OPTIONS` in fstab."""
    return run(HELPER, source, mountpoint, "-o", options, "-t", "fuse.dropboxfs", env=env, timeout=60)


def test_fstab_line_with_a_token(fake, path_with_dropboxfs, tmp_path, background_mounts):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    background_mounts.append(mnt)
    env = env_for(fake, extra={"PATH": path_with_dropboxfs, "XDG_CACHE_HOME": str(tmp_path / "cache"),
                               "XDG_STATE_HOME": str(tmp_path / "state")})
    r = helper("dropboxfs", mnt, FSTAB_OPTIONS + ",cache_size=64M,attr_timeout=10m,log_level=debug", env)
    assert r.returncode == 0, r
    # Mounted when the helper returns (mount(8) and systemd rely on that).
    assert is_mounted(mnt)
    assert sorted(os.listdir(mnt)) == ["folder", "hello.txt"]
    assert run("cat", mnt / "folder/inside.txt").stdout == b"inside\n"
    assert source_of(mnt) == ["fuse.dropboxfs", "dropboxfs"]
    unmount_and_wait(mnt)
    log = (tmp_path / "state" / "dropboxfs" / "dropboxfs.log").read_text()
    assert "[debug]" in log and "unmounted" in log and "[error]" not in log, log


def test_fstab_line_naming_a_profile(binary, fake, path_with_dropboxfs, tmp_path, background_mounts):
    """SOURCE is the profile: its stored sign-in, cache and log are used; the mount table shows
    SOURCE as the mount's source, as in the fstab line (mount -a and findmnt match on it)."""
    home = Home(tmp_path / "user")
    r = sign_in_with_args(binary, profile_env(home, fake), ["--profile", "work"])
    assert r.returncode == 0, r
    mnt = home.home / "dropbox-work"
    mnt.mkdir()
    background_mounts.append(mnt)
    env = profile_env(home, fake)
    env["PATH"] = path_with_dropboxfs
    r = helper("work", mnt, FSTAB_OPTIONS, env)
    assert r.returncode == 0, r
    assert sorted(os.listdir(mnt)) == ["folder", "hello.txt"]
    assert source_of(mnt) == ["fuse.dropboxfs", "work"]
    unmount_and_wait(mnt)
    assert list((home.cache / "dropboxfs" / "profiles" / "work" / "trees").glob("*.db"))
    assert (home.root / "state" / "dropboxfs" / "dropboxfs-work.log").exists()


def test_fstab_line_without_ro_mounts_read_only(fake, path_with_dropboxfs, tmp_path, background_mounts):
    """A plain fstab line (no ro): mount(8) adds rw to its options. The mount works, read-only all
    the same (ro in the mount table, EROFS on writes), with one warning on the terminal and in the
    log."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    background_mounts.append(mnt)
    env = env_for(fake, extra={"PATH": path_with_dropboxfs, "XDG_CACHE_HOME": str(tmp_path / "cache"),
                               "XDG_STATE_HOME": str(tmp_path / "state")})
    r = helper("dropboxfs", mnt, "rw,noauto,nofail,_netdev,user,users,x-systemd.automount", env)
    assert r.returncode == 0, r
    warning = "mount option rw ignored: the mount is read-only whatever rw asks"
    assert len([line for line in r.stderr.decode().splitlines() if warning in line]) == 1, r.stderr
    assert sorted(os.listdir(mnt)) == ["folder", "hello.txt"]
    fstype, options, _ = mount_info(mnt)
    assert fstype == "fuse.dropboxfs" and "ro" in options and "rw" not in options, options
    for command in (["touch", mnt / "hello.txt"], ["mkdir", mnt / "new"], ["rm", mnt / "hello.txt"]):
        w = run(*command, env=c_locale())
        assert w.returncode != 0 and b"Read-only file system" in w.stderr, (command, w)
    unmount_and_wait(mnt)
    log = (tmp_path / "state" / "dropboxfs" / "dropboxfs.log").read_text()
    assert len([line for line in log.splitlines() if warning in line]) == 1, log


@pytest.mark.parametrize("options,fragment", [
    ("ro,cache_sise=1G", "cache_sise"),
    ("ro,attr_timeout=forever", "--attr-timeout"),
])
def test_fstab_mistakes_fail_before_anything_is_sent(fake, path_with_dropboxfs, tmp_path, options, fragment):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    env = env_for(fake, extra={"PATH": path_with_dropboxfs, "XDG_STATE_HOME": str(tmp_path / "state")})
    r = helper("dropboxfs", mnt, options, env)
    assert r.returncode != 0, r
    assert fragment in r.stderr.decode(), r.stderr
    assert not is_mounted(mnt)
    assert fake.stats()["total"] == 0


def test_source_must_be_a_profile_name(fake, path_with_dropboxfs, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    env = env_for(fake, extra={"PATH": path_with_dropboxfs})
    r = helper("../etc", mnt, "ro", env)
    assert r.returncode != 0 and b"profile name" in r.stderr, r
    assert fake.stats()["total"] == 0


def test_helper_mode_without_mount_fuse3(binary, fake, tmp_path, background_mounts):
    """The same call made directly (as some tools do): `dropboxfs SOURCE MOUNTPOINT -o ...`."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    background_mounts.append(mnt)
    env = env_for(fake, extra={"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "c")})
    r = run(binary, "default", mnt, "-o", "ro,dev,suid", env=env, timeout=30)
    assert r.returncode == 0, r
    assert sorted(os.listdir(mnt)) == ["folder", "hello.txt"]
    assert source_of(mnt) == ["fuse.dropboxfs", "default"]
    unmount_and_wait(mnt)


def test_a_root_mount_with_setuid_runs_as_that_user_in_their_home(binary, fake, tmp_path):
    """An fstab line with setuid=USER, mounted by root: mount.fuse3 runs the daemon as USER through
    `su -` (a login environment: the helper is found on the login PATH, /usr/local/bin here). The
    daemon runs with USER's uid, keeps its cache and log in USER's home, owned by USER, and leaves
    nothing of root's there. A user opens /dev/fuse itself: Debian makes it 0666; where this
    machine left it root's alone, the test opens it to users while it runs, as Debian has it."""
    import pwd
    import shutil
    from pathlib import Path

    if os.geteuid() != 0:
        pytest.fail("this test mounts as root (CI runs as root)")
    for tool in ("useradd", "userdel", "su"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is needed")
    link = Path("/usr/local/bin/dropboxfs")
    if link.exists() or link.is_symlink():
        pytest.fail(f"{link} exists: this test puts the built binary there for the login PATH of su -")
    user = f"dbxfs{os.getpid() % 100000}"
    r = run("useradd", "--create-home", "--shell", "/bin/sh", user)
    assert r.returncode == 0, r
    mnt = None
    fuse_mode = os.stat("/dev/fuse").st_mode & 0o777
    try:
        os.chmod("/dev/fuse", 0o666)
        info = pwd.getpwnam(user)
        home = Path(info.pw_dir)
        link.symlink_to(binary)
        token = home / "token"
        token.write_text("test-token\n")
        os.chown(token, info.pw_uid, info.pw_gid)
        token.chmod(0o600)
        mnt = home / "dropbox"
        mnt.mkdir()
        os.chown(mnt, info.pw_uid, info.pw_gid)
        options = ",".join([
            "ro", "noauto", "_netdev", f"setuid={user}", f"access_token_file={token}",
            f"api_url={fake.url}", f"content_url={fake.url}", f"notify_url={fake.url}"])
        r = run(HELPER, "dropboxfs", mnt, "-o", options, "-t", "fuse.dropboxfs", timeout=60)
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert is_mounted(str(mnt))
        # Only its user reaches the mount (no allow_other), as with any FUSE mount.
        r = run("runuser", "-u", user, "--", "ls", mnt)
        assert r.returncode == 0 and r.stdout.split() == [b"folder", b"hello.txt"], r
        assert run("runuser", "-u", user, "--", "cat", mnt / "folder" / "inside.txt").stdout == b"inside\n"
        with pytest.raises(PermissionError):
            os.listdir(mnt)
        [pid] = pids_of_daemon(str(mnt))
        with open(f"/proc/{pid}/status") as f:
            uids = next(line for line in f if line.startswith("Uid:")).split()[1:]
        assert set(uids) == {str(info.pw_uid)}, uids
        cache = home / ".cache" / "dropboxfs"
        assert cache.is_dir() and cache.stat().st_uid == info.pw_uid
        rooted = []
        for folder, subfolders, files in os.walk(home):
            subfolders[:] = [d for d in subfolders if Path(folder, d) != mnt]  # root may not enter the mount
            rooted += [os.path.join(folder, n) for n in subfolders + files if os.lstat(os.path.join(folder, n)).st_uid == 0]
        assert rooted == [], rooted
        unmount_and_wait(mnt)
        mnt = None
    finally:
        if mnt is not None and is_mounted(str(mnt)):
            run("umount", "-l", mnt)
        if link.is_symlink():
            link.unlink()
        run("pkill", "-KILL", "-u", user)
        wait_until(lambda: run("userdel", "--remove", user).returncode in (0, 6), timeout=10,
                   message=f"the test user {user} removed")
        os.chmod("/dev/fuse", fuse_mode)
