"""Access levels through a real mount (docs/SEMANTICS.md, "Access levels"): a team folder this
account may not open shows mode 000 and answers EACCES without a request (or is left out with
--hide-no-access); a traverse-only folder shows only its folders; a file whose content Dropbox
blocks answers EACCES, is asked of Dropbox once, and is reported in one log line."""

import errno
import hashlib
import os
import stat

import pytest

from helpers import run, wait_for_fill


def account(fake_factory):
    fake = fake_factory()
    fake.locked_id = fake.mkdir("/team/Locked", access="no_access")["id"]
    fake.mkdir("/team/Pass", access="traverse_only")
    fake.add_file("/team/Pass/Open/a.txt", b"open to this member\n")
    fake.add_file("/team/Pass/unreadable.txt", b"x")
    fake.add_file("/team/Plain/b.txt", b"plain\n")
    fake.add_file("/blocked.mp3", size=300_000, seed=5, restricted=True)
    return fake


def listings_of(fake, *names):
    """The list_folder requests for a folder named by its path_lower or its id."""
    return [e for e in fake.log() if e["route"] == "files/list_folder"
            and (e.get("arg") or {}).get("path", "").lower() in names]


def test_levels_show_and_answer_as_documented(fake_factory, mount_factory):
    fake = account(fake_factory)
    m = mount_factory(fake)
    wait_for_fill(m.path, fake)
    team = os.path.join(m.path, "team")

    assert sorted(os.listdir(team)) == ["Locked", "Pass", "Plain"]
    locked = os.path.join(team, "Locked")
    st = os.stat(locked)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0, oct(st.st_mode)
    assert os.getxattr(locked, "user.dropbox.access") == b"no_access"
    r = run("ls", locked)
    assert r.returncode != 0 and b"Permission denied" in r.stderr, r.stderr
    with pytest.raises(PermissionError):
        os.stat(os.path.join(locked, "anything"))
    assert listings_of(fake, "/team/locked", fake.locked_id.lower()) == [], "never listed"

    passing = os.path.join(team, "Pass")
    assert os.getxattr(passing, "user.dropbox.access") == b"traverse_only"
    assert os.listdir(passing) == ["Open"], "only what can be traversed"
    assert not os.path.exists(os.path.join(passing, "unreadable.txt"))
    r = run("cat", os.path.join(passing, "Open", "a.txt"))
    assert r.returncode == 0 and r.stdout == b"open to this member\n"

    # find and du walk past the closed folder with one complaint, and see everything else.
    r = run("find", m.path)
    assert r.returncode == 1 and b"Locked" in r.stderr, (r.returncode, r.stderr)
    assert os.path.join(team, "Plain", "b.txt").encode() in r.stdout.split(b"\n")


def test_blocked_content_answers_eacces_once_asked(fake_factory, mount_factory):
    fake = account(fake_factory)
    m = mount_factory(fake)
    wait_for_fill(m.path, fake)
    blocked = os.path.join(m.path, "blocked.mp3")
    assert os.stat(blocked).st_size == 300_000, "still listed with its size"
    fake.reset_stats()
    for _ in range(3):
        r = run("sha256sum", blocked)
        assert r.returncode != 0 and b"Permission denied" in r.stderr, r.stderr
    downloads = fake.stats()["routes"].get("files/download", 0)
    assert 1 <= downloads <= 4, f"asked once (a first read may fetch its parts at once): {downloads}"
    lines = [line for line in m.log_text().splitlines() if "blocked.mp3" in line]
    assert len(lines) == 1 and "restricted_content" in lines[0], lines
    # Everything else still reads.
    r = run("sha256sum", os.path.join(m.path, "team", "Plain", "b.txt"))
    assert r.stdout.split()[0].decode() == hashlib.sha256(b"plain\n").hexdigest()


def test_folders_without_access_can_be_hidden(fake_factory, mount_factory):
    fake = account(fake_factory)
    m = mount_factory(fake, "--hide-no-access")
    wait_for_fill(m.path, fake)
    team = os.path.join(m.path, "team")
    assert sorted(os.listdir(team)) == ["Pass", "Plain"]
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(team, "Locked"))
    r = run("find", m.path)
    assert r.returncode == 0, r.stderr
    with pytest.raises(OSError) as caught:
        os.listdir(os.path.join(team, "Locked"))
    assert caught.value.errno == errno.ENOENT
