"""Several accounts: `--profile NAME` (or DROPBOXFS_PROFILE) on auth, mount and
status gives each account its own sign-in, cache folder (content cache and stored trees), log file
and default mount point ~/dropbox-NAME. Two accounts, each on its own fake Dropbox, are signed in
and mounted side by side, in the background with every default path, as a user would."""

import json
import os
import stat

import pytest


from helpers import is_mounted, pids_of_daemon, process_gone, run, unmount, wait_until
from test_auth import Home, sign_in


def profile_env(home, target, profile=None, token=None):
    extra = {"XDG_STATE_HOME": str(home.root / "state")}
    if profile is not None:
        extra["DROPBOXFS_PROFILE"] = profile
    return home.env(target, token=token, extra=extra)


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def two_accounts(fake_factory):
    personal = fake_factory()
    personal.add_file("/personal.txt", b"mine\n")
    personal.add_file("/Photos/cat.png", b"png\n")
    work = fake_factory()
    work.add_file("/work.txt", b"company\n")
    work.add_file("/Projects/plan.md", b"# plan\n")
    return personal, work


def stop_background(paths):
    for path in paths:
        pids = pids_of_daemon(path)
        if is_mounted(path):
            unmount(path)
        for pid in pids:
            wait_until(lambda: process_gone(pid), timeout=15, message=f"daemon {pid} to exit")


def test_two_accounts_side_by_side(binary, two_accounts, tmp_path, background_mounts):
    personal, work = two_accounts
    home = Home(tmp_path / "user")
    # Sign in: one with --profile, one with DROPBOXFS_PROFILE.
    for name, fake, how in (("personal", personal, "flag"), ("work", work, "variable")):
        env = profile_env(home, fake, profile=name if how == "variable" else None)
        r = sign_in_with_args(binary, env, ["--profile", name] if how == "flag" else [])
        assert r.returncode == 0, r
        assert f"(profile {name})" in r.out and f"--profile {name}" in r.out, r.out
    profiles = home.folder / "profiles"
    for name in ("personal", "work"):
        credentials = profiles / name / "credentials.json"
        assert credentials.exists() and mode(credentials) == 0o600 and mode(credentials.parent) == 0o700
        assert json.loads(credentials.read_text())["refresh_token"]
    assert not home.credentials.exists(), "a profile's sign-in went to the default profile's file"

    # Mount both in the background with every default: ~/dropbox-personal and ~/dropbox-work.
    mounts = {name: home.home / f"dropbox-{name}" for name in ("personal", "work")}
    background_mounts.extend(mounts.values())
    for name, fake in (("personal", personal), ("work", work)):
        r = run(binary, "mount", "--profile", name, env=profile_env(home, fake), timeout=30)
        assert r.returncode == 0, r
        assert f"(profile {name})" in r.stdout.decode() and str(mounts[name]) in r.stdout.decode(), r.stdout
    assert sorted(os.listdir(mounts["personal"])) == ["Photos", "personal.txt"]
    assert sorted(os.listdir(mounts["work"])) == ["Projects", "work.txt"]
    assert run("cat", mounts["work"] / "Projects/plan.md").stdout == b"# plan\n"
    assert run("cat", mounts["personal"] / "personal.txt").stdout == b"mine\n"
    # The mount table names each by its profile.
    for name, path in mounts.items():
        with open("/proc/self/mountinfo") as f:
            line = next(line for line in f if f" {path} " in line)
        assert line.split(" - ")[1].split()[:2] == ["fuse.dropboxfs", name], line

    # status per profile: its own sign-in.
    for name, fake in (("personal", personal), ("work", work)):
        r = run(binary, "status", "--profile", name, env=profile_env(home, fake))
        out = r.stdout.decode()
        assert r.returncode == 0, r
        assert str(profiles / name / "credentials.json") in out, out
        # Every mount of the user, each with the profile it belongs to.
        for other, path in mounts.items():
            assert any(line.startswith(f"mount:       {path} (profile {other}): ") for line in out.splitlines()), out
    r = run(binary, "status", "--json", *mounts.values(), env=profile_env(home, work))
    assert {mount["path"]: mount["profile"] for mount in json.loads(r.stdout)["mounts"]} == {
        str(path): name for name, path in mounts.items()}, r.stdout

    stop_background(mounts.values())
    # Each profile's own cache (stored tree, content) and log.
    cache = home.cache / "dropboxfs" / "profiles"
    for name in ("personal", "work"):
        trees = list((cache / name / "trees").glob("*.db"))
        assert len(trees) == 1, (name, list((cache / name).rglob("*")))
        log = home.root / "state" / "dropboxfs" / f"dropboxfs-{name}.log"
        # A mount with the default mount point does not name it on its command line, so
        # stop_background cannot find its pid to wait for: wait for its last log line instead.
        wait_until(lambda: log.exists() and "unmounted" in log.read_text(), timeout=15,
                   message=f"the {name} daemon to log its unmount")
    assert not (home.cache / "dropboxfs" / "trees").exists(), "the default profile's folder was used"

    # Signing one out leaves the other.
    r = run(binary, "auth", "--sign-out", "--profile", "work", env=profile_env(home, work))
    assert r.returncode == 0, r
    assert not (profiles / "work" / "credentials.json").exists()
    assert (profiles / "personal" / "credentials.json").exists()
    r = run(binary, "mount", "--profile", "work", "--foreground", env=profile_env(home, work))
    assert r.returncode == 4 and b"dropboxfs auth --profile work" in r.stderr, r


def sign_in_with_args(binary, env, extra_args):
    """test_auth.sign_in() with extra arguments after `auth --app-key KEY`."""
    return sign_in(binary, env, app_key="fakeappkey", extra_args=extra_args)


@pytest.mark.parametrize("name", ["", "../up", "a/b", "-dash", "_under", "white space", "x" * 65, "café"])
@pytest.mark.parametrize("command", [["mount", "--foreground"], ["status"], ["auth", "--sign-out"]])
def test_bad_profile_names_are_usage_errors(binary, fake_factory, tmp_path, name, command):
    fake = fake_factory()
    home = Home(tmp_path / "user")
    for env in (profile_env(home, fake), profile_env(home, fake, profile=name)):
        args = list(command) + ([] if "DROPBOXFS_PROFILE" in env else ["--profile", name])
        if "DROPBOXFS_PROFILE" in env and name == "":
            continue  # an empty variable means no profile
        r = run(binary, *args, env=env)
        assert r.returncode == 2, (args, r)
        assert b"profile name" in r.stderr, r.stderr
    assert fake.stats()["total"] == 0
    assert not (home.folder / "profiles").exists()


def test_a_profile_mount_with_a_token(binary, fake_factory, mount_factory, tmp_path):
    """A token still works with a profile: the profile then gives the cache and the mount point."""
    fake = fake_factory()
    fake.add_file("/a.txt", b"a\n")
    m = mount_factory(fake, "--profile", "tok")
    assert os.listdir(m.path) == ["a.txt"]
    m.unmount()
    assert list((tmp_path / "xdg-cache" / "dropboxfs" / "profiles" / "tok" / "trees").glob("*.db"))
