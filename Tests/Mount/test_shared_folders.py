"""`mount --shared-folders`: the folders shared with the account that it has not added, read-only
under "Shared with me" at the top of the mount, each read through its own namespace
(Dropbox-API-Path-Root namespace_id); a folder the account added is in its own Dropbox and is not
shown twice; changes inside a shared folder, and folders shared or unshared, appear once a listing
is older than --dir-cache-time; a namespace the account may not read answers EACCES; the account's
own tree keeps following its changes (and survives a cursor reset) beside it."""

import errno
import hashlib
import os

import pytest

from helpers import compare_records, expected_entries, find_records, poll_assert, run, wait_for_fill

VIEW = "Shared with me"


def shared_account(fake):
    """The account's own files, two folders shared and not added (nested files), one added."""
    fake.add_file("/own/notes.txt", data=b"mine\n")
    photos = fake.add_shared_folder("Photos")["shared_folder_id"]
    ns = fake.in_namespace(photos)
    ns.add_file("/2024/beach.jpg", size=300_000, seed=3)
    ns.add_file("/2024/summer/sun.jpg", size=70_000, seed=4)
    ns.add_file("/readme.txt", data=b"photos of the trip\n")
    docs = fake.add_shared_folder("Docs", access_type="editor")["shared_folder_id"]
    nd = fake.in_namespace(docs)
    nd.add_file("/plan.md", data=b"# plan\n")
    nd.add_file("/deep/er/still/file.bin", size=5000, seed=9)
    fake.add_shared_folder("Team", mounted_at="/Team")
    fake.add_file("/Team/roster.txt", data=b"alice\nbob\n")
    return {"Photos": photos, "Docs": docs}


def test_shared_folders_are_shown_and_read_through_their_namespaces(fake_factory, mount_factory):
    fake = fake_factory()
    ids = shared_account(fake)
    m = mount_factory(fake, "--shared-folders")
    view = os.path.join(m.path, VIEW)
    assert sorted(os.listdir(m.path)) == sorted(["own", "Team", VIEW])
    # The added folder is in the account's tree, not again in the view.
    assert os.listdir(view) == ["Docs", "Photos"]
    assert os.listdir(os.path.join(m.path, "Team")) == ["roster.txt"]
    for name, sid in ids.items():
        ns = fake.in_namespace(sid)
        entries = expected_entries(ns.tree())
        folder = os.path.join(view, name)
        compare_records(find_records(folder), entries)
        du = run("du", "-sb", folder, timeout=60)
        assert du.returncode == 0, du.stderr
        folder_bytes = run("find", folder, "-type", "d", "-printf", r"%s\n").stdout.split()
        want = sum(e.size for e in entries.values() if e.kind == "f") + sum(int(s) for s in folder_bytes)
        assert int(du.stdout.split()[0]) == want
        files = sorted(rel for rel, e in entries.items() if e.kind == "f")
        out = run("sha256sum", *[os.path.join(folder, rel.decode()) for rel in files], timeout=60)
        assert out.returncode == 0, out.stderr
        got = {line[66:]: line[:64] for line in out.stdout.decode().splitlines()}
        for rel in files:
            want_hash = hashlib.sha256(ns.content("/" + rel.decode())).hexdigest()
            assert got[os.path.join(folder, rel.decode())] == want_hash, rel
    # Read-only, as the rest of the mount.
    with pytest.raises(OSError) as e:
        open(os.path.join(view, "Photos", "new.txt"), "w")
    assert e.value.errno == errno.EROFS
    assert os.getxattr(os.path.join(view, "Photos"), "user.dropbox.shared_folder_id").decode() == ids["Photos"]
    routes = fake.stats()["routes"]
    assert routes.get("sharing/list_folders", 0) >= 1, routes
    assert not any(r.startswith("sharing/mount") for r in routes), routes


def test_pins_and_history_are_not_offered_in_the_view(binary, fake_factory, mount_factory):
    fake = fake_factory()
    shared_account(fake)
    m = mount_factory(fake, "--shared-folders")
    photos = os.path.join(m.path, VIEW, "Photos")
    r = run(binary, "pin", photos)
    assert r.returncode != 0 and b"not kept offline" in r.stderr, (r.returncode, r.stdout, r.stderr)
    assert not os.path.exists(os.path.join(photos, ".dropboxfs-versions"))
    assert not os.path.exists(os.path.join(photos, "2024", ".dropboxfs-deleted"))


def test_changes_and_shares_appear_after_the_lifetime(fake_factory, mount_factory):
    fake = fake_factory()
    ids = shared_account(fake)
    m = mount_factory(fake, "--shared-folders", "--dir-cache-time", "1s")
    view = os.path.join(m.path, VIEW)
    photos = os.path.join(view, "Photos")
    readme = os.path.join(photos, "readme.txt")
    with open(readme, "rb") as f:
        assert f.read() == b"photos of the trip\n"
    ns = fake.in_namespace(ids["Photos"])
    ns.add_file("/readme.txt", data=b"a second version\n")
    ns.add_file("/added.txt", data=b"new\n")

    def changed():
        with open(readme, "rb") as f:
            assert f.read() == b"a second version\n"
        with open(os.path.join(photos, "added.txt"), "rb") as f:
            assert f.read() == b"new\n"
        assert "added.txt" in os.listdir(photos)
    poll_assert(changed, timeout=15, what="the changed and the added file")

    fresh = fake.add_shared_folder("Fresh")["shared_folder_id"]
    fake.in_namespace(fresh).add_file("/hello.txt", data=b"hello\n")
    fake.unshare_folder(ids["Docs"])

    def shares():
        assert os.listdir(view) == ["Fresh", "Photos"]
        with open(os.path.join(view, "Fresh", "hello.txt"), "rb") as f:
            assert f.read() == b"hello\n"
    poll_assert(shares, timeout=15, what="the newly shared folder, and the unshared one gone")
    assert not os.path.exists(os.path.join(view, "Docs", "plan.md"))


def test_a_namespace_the_account_may_not_read_answers_eacces(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_shared_folder("Locked", readable=False)
    fake.add_shared_folder("Open")
    m = mount_factory(fake, "--shared-folders")
    view = os.path.join(m.path, VIEW)
    assert os.listdir(view) == ["Locked", "Open"]
    for _ in range(2):
        r = run("ls", os.path.join(view, "Locked"))
        assert r.returncode != 0 and b"Permission denied" in r.stderr, r.stderr
    with pytest.raises(PermissionError):
        os.stat(os.path.join(view, "Locked", "anything"))
    assert os.listdir(os.path.join(view, "Open")) == []
    lines = [line for line in m.log_text().splitlines() if "no_permission" in line]
    assert len(lines) == 1, lines
    # Refused once, not asked again within the lifetime (60 s by default).
    refused = [e for e in fake.log() if e["route"] == "files/list_folder" and e["status"] == 422]
    assert len(refused) == 1, refused


def test_without_the_option_there_is_no_view_and_a_name_clash_has_one_rule(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/" + VIEW + "/mine.txt", data=b"of my own\n")
    first = fake.add_shared_folder("Same")["shared_folder_id"]
    second = fake.add_shared_folder("Same")["shared_folder_id"]
    fake.in_namespace(first).add_file("/one.txt", data=b"1\n")
    fake.in_namespace(second).add_file("/two.txt", data=b"2\n")
    plain = mount_factory(fake)
    assert os.listdir(plain.path) == [VIEW]
    assert os.listdir(os.path.join(plain.path, VIEW)) == ["mine.txt"]
    m = mount_factory(fake, "--shared-folders")
    # One entry of the name: the view wins, and the log says so once.
    assert os.listdir(m.path) == [VIEW]
    view = os.path.join(m.path, VIEW)
    suffixed = "Same (%s)" % second[-6:]
    assert os.listdir(view) == ["Same", suffixed]
    assert os.listdir(os.path.join(view, "Same")) == ["one.txt"]
    assert os.listdir(os.path.join(view, suffixed)) == ["two.txt"]
    assert "cannot be reached" in m.log_text()


def test_the_accounts_tree_follows_changes_and_resets_beside_the_view(fake_factory, mount_factory):
    fake = fake_factory()
    ids = shared_account(fake)
    m = mount_factory(fake, "--shared-folders")
    wait_for_fill(m.path, fake)
    view = os.path.join(m.path, VIEW)
    assert os.listdir(os.path.join(view, "Docs")) == ["deep", "plan.md"]
    fake.add_file("/own/later.txt", data=b"later\n")
    poll_assert(lambda: sorted(os.listdir(os.path.join(m.path, "own"))) == ["later.txt", "notes.txt"],
                timeout=15, what="the account's change (longpoll delta)")
    fake.reset_cursors()
    fake.add_file("/own/after-reset.txt", data=b"x\n")
    poll_assert(lambda: "after-reset.txt" in os.listdir(os.path.join(m.path, "own")),
                timeout=30, what="the refill after a cursor reset")
    assert VIEW in os.listdir(m.path)
    assert os.listdir(view) == ["Docs", "Photos"]
    with open(os.path.join(view, "Docs", "plan.md"), "rb") as f:
        assert f.read() == b"# plan\n"
    assert fake.in_namespace(ids["Docs"]).content("/plan.md") == b"# plan\n"


def test_without_the_sharing_permission_the_view_says_so(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/own/notes.txt", data=b"mine\n")
    fake.add_shared_folder("Photos")
    fake.add_token("no-sharing", scopes=["account_info.read", "files.metadata.read", "files.content.read"])
    m = mount_factory(fake, "--shared-folders", env_extra={"DROPBOXFS_ACCESS_TOKEN": "no-sharing"})
    assert os.listdir(os.path.join(m.path, "own")) == ["notes.txt"]
    for _ in range(2):
        r = run("ls", os.path.join(m.path, VIEW))
        assert r.returncode != 0 and b"Permission denied" in r.stderr, r.stderr
    lines = [line for line in m.log_text().splitlines() if "[warning]" in line and "sharing.read" in line]
    assert len(lines) == 1, m.log_text()
    assert fake.stats()["routes"].get("sharing/list_folders", 0) == 1


def test_nothing_of_the_view_is_stored_across_mounts(fake_factory, mount_factory):
    fake = fake_factory()
    ids = shared_account(fake)
    first = mount_factory(fake, "--shared-folders")
    wait_for_fill(first.path, fake)
    assert os.listdir(os.path.join(first.path, VIEW, "Docs")) == ["deep", "plan.md"]
    first.unmount()
    fake.in_namespace(ids["Docs"]).add_file("/while-away.txt", data=b"new\n")
    # The stored tree is the account's alone: without the option there is no view after a remount.
    plain = mount_factory(fake)
    assert sorted(os.listdir(plain.path)) == ["Team", "own"]
    plain.unmount()
    again = mount_factory(fake, "--shared-folders")
    assert os.listdir(os.path.join(again.path, VIEW, "Docs")) == ["deep", "plan.md", "while-away.txt"]
