"""Team spaces: a member of a Dropbox team space sees the whole team space, the team folders beside
their own folder (at root_info.home_path), as the Dropbox website shows it; `--home-only` mounts just
their own folder. Driven against the fake with --team, whose account has a team space with
/Marketing and /Engineering beside the member's folder /Franz Ferdinand, which holds what a
non-team fake of the same options holds. Remote changes in both appear within 5 seconds.
"""

import hashlib
import os

from helpers import compare_records, env_for, expected_entries, find_records, poll_assert, run, wait_for_fill

HOME = "Franz Ferdinand"


def member_entries(team_fake):
    """The entries of the member's own folder, with paths relative to it (the fake's control tree
    of a team fake holds the whole team space)."""
    prefix = "/" + HOME
    inside = []
    for e in team_fake.tree():
        if e["path_display"].startswith(prefix + "/"):
            inside.append(dict(e, path_display=e["path_display"][len(prefix):],
                               path_lower=e["path_lower"][len(prefix):]))
    return inside


def test_the_mount_shows_the_whole_team_space(fake_factory, mount_factory):
    fake = fake_factory("--team", "--sample-account")
    m = mount_factory(fake)
    wait_for_fill(m.path, fake)
    assert sorted(os.listdir(m.path)) == sorted([HOME, "Engineering", "Marketing"])
    assert run("cat", f"{m.path}/Marketing/Plan.txt").stdout == b"marketing plan\n"
    assert run("cat", f"{m.path}/Engineering/Design.md").stdout == b"# design\n"
    # The member's folder holds exactly its content, with the right sizes and bytes.
    compare_records(find_records(f"{m.path}/{HOME}"), expected_entries(member_entries(fake)))
    files = [e for e in member_entries(fake) if e["tag"] == "file" and not e.get("symlink_target")]
    assert files
    for e in files[:5]:
        want = hashlib.sha256(fake.content(f"/{HOME}{e['path_display']}")).hexdigest()
        got = run("sha256sum", f"{m.path}/{HOME}{e['path_display']}").stdout.split()[0].decode()
        assert got == want, e["path_display"]
    assert "team space" in m.log_text()


def test_home_only_mounts_just_the_members_folder(fake_factory, mount_factory):
    fake = fake_factory("--team", "--sample-account")
    m = mount_factory(fake, "--home-only")
    wait_for_fill(m.path, fake)
    compare_records(find_records(m.path), expected_entries(member_entries(fake)))
    assert not os.path.exists(f"{m.path}/Marketing")
    assert "only your own folder" in m.log_text()


def test_changes_in_team_folders_and_the_members_folder_appear(fake_factory, mount_factory):
    fake = fake_factory("--team", "--sample-account")
    m = mount_factory(fake)
    wait_for_fill(m.path, fake)
    assert not os.path.exists(f"{m.path}/Marketing/Budget.txt")  # cached as absent
    fake.add_file("/Marketing/Budget.txt", b"budget\n")
    fake.add_file(f"/{HOME}/from elsewhere.txt", b"mine\n")
    fake.delete("/Engineering/Design.md")

    def check():
        assert run("cat", f"{m.path}/Marketing/Budget.txt").stdout == b"budget\n"
        assert run("cat", f"{m.path}/{HOME}/from elsewhere.txt").stdout == b"mine\n"
        assert os.listdir(f"{m.path}/Engineering") == []

    poll_assert(check, timeout=5.0, what="team-space changes in the mount")


def test_status_names_the_team_space(fake_factory, binary):
    fake = fake_factory("--team", "--sample-account")
    r = run(binary, "status", env=env_for(fake))
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "team space" in out and f"/{HOME}" in out and "--home-only" in out
    plain = fake_factory("--sample-account")
    assert "team space" not in run(binary, "status", env=env_for(plain)).stdout.decode()
