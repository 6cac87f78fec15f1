"""Mounting a shared link (`mount --shared-link URL [--link-password-file F]`): the link's folders
listed one at a time (never recursively), its files read through get_shared_link_file and checked,
a link to one file shown as a folder holding it, each refusal of a link named with its exit code,
and a change on the server seen once a folder's listing is older than --dir-cache-time.

`DROPBOXFS_SHARED_LINK_ENTRIES` (default 5000) sets the size of the big link's tree, e.g. 50000 for
a longer run."""

import hashlib
import os
import re
import subprocess

from helpers import (compare_records, env_for, expected_entries, find_records, is_mounted, run,
                     wait_until)

ENTRIES = int(os.environ.get("DROPBOXFS_SHARED_LINK_ENTRIES", "5000"))
SECRET = "correct horse battery staple"


def link_calls(fake):
    return [e for e in fake.log() if e["route"] == "files/list_folder"]


def test_find_du_and_sha256sum_of_a_big_folder_link(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", str(ENTRIES), "--seed", "11")
    url = fake.share("")["url"]
    tree = fake.tree()
    m = mount_factory(fake, "--shared-link", url)
    entries = expected_entries(tree)
    assert len(entries) > ENTRIES * 0.9, len(entries)
    compare_records(find_records(m.path), entries)
    # Listed folder by folder: never a recursive listing, never the reader's own account.
    calls = link_calls(fake)
    assert calls and all(not c["arg"]["recursive"] for c in calls), calls[:5]
    folders = sum(1 for e in entries.values() if e.kind == "d")
    assert len(calls) <= folders * 2, (len(calls), folders)
    # du: the files' and links' bytes plus what the folders say of themselves.
    du = run("du", "-sb", m.path, timeout=120)
    assert du.returncode == 0, du.stderr
    folder_bytes = run("find", m.path, "-type", "d", "-printf", r"%s\n", timeout=120).stdout.split()
    want = sum(e.size for e in entries.values() if e.kind != "d") + sum(int(s) for s in folder_bytes)
    assert int(du.stdout.split()[0]) == want
    # sha256sum of a sample of files with plain names equals the fake's bytes.
    plain = sorted(rel for rel, e in entries.items()
                   if e.kind == "f" and re.fullmatch(rb"[A-Za-z0-9 ._/()-]+", rel) and e.size > 0)
    sample = plain[:: max(1, len(plain) // 12)][:12]
    assert len(sample) >= 5, len(plain)
    out = run("sha256sum", *[os.path.join(m.path, rel.decode()) for rel in sample], timeout=120)
    assert out.returncode == 0, out.stderr
    got = {line[66:]: line[:64] for line in out.stdout.decode().splitlines()}
    for rel in sample:
        want_hash = hashlib.sha256(fake.content(entries[rel].tree["path_display"])).hexdigest()
        assert got[os.path.join(m.path, rel.decode())] == want_hash, rel
    assert any(e["route"] == "sharing/get_shared_link_file" for e in fake.log())
    assert not any(e["route"] == "files/download" for e in fake.log())


def test_single_file_link_is_a_folder_holding_the_file(fake_factory, mount_factory):
    fake = fake_factory()
    data = bytes(range(256)) * 300
    fake.add_file("/Reports/q3.bin", data=data)
    fake.add_file("/Reports/other.txt", data=b"not in the link")
    url = fake.share("/Reports/q3.bin")["url"]
    m = mount_factory(fake, "--shared-link", url)
    assert os.listdir(m.path) == ["q3.bin"]
    assert os.stat(os.path.join(m.path, "q3.bin")).st_size == len(data)
    with open(os.path.join(m.path, "q3.bin"), "rb") as f:
        f.seek(1000)
        assert f.read(5000) == data[1000:6000]
        f.seek(0)
        assert f.read() == data
    # A link has no history to show: the hidden views are not there (not an EIO from a listing
    # the link refuses).
    for hidden in (".dropboxfs-versions", ".dropboxfs-deleted"):
        assert not os.path.exists(os.path.join(m.path, hidden)), hidden


def test_password_link_mounts_with_the_password(fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    fake.add_file("/Vault/a.txt", data=b"inside\n")
    url = fake.share("/Vault", password=SECRET)["url"]
    pw = tmp_path / "pw"
    pw.write_text(SECRET + "\n")
    m = mount_factory(fake, "--shared-link", url, "--link-password-file", str(pw))
    with open(os.path.join(m.path, "a.txt"), "rb") as f:
        assert f.read() == b"inside\n"
    assert SECRET not in m.log_text()
    assert "rlkey" not in m.log_text()


def refused(binary, fake, tmp_path, url, *extra):
    mnt = tmp_path / "refused"
    mnt.mkdir(exist_ok=True)
    env = env_for(fake, extra={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    r = subprocess.run(
        [binary, "mount", str(mnt), "--foreground",
         "--shared-link", url, *extra], env=env, capture_output=True, timeout=60)
    assert not is_mounted(str(mnt))
    return r.returncode, r.stderr.decode(errors="replace") + r.stdout.decode(errors="replace")


def test_each_refusal_is_named_with_its_exit_code(binary, fake_factory, tmp_path):
    fake = fake_factory()
    fake.add_file("/Vault/a.txt", data=b"x")
    locked = fake.share("/Vault", password=SECRET)["url"]
    wrong = tmp_path / "wrong"
    wrong.write_text("not the password\n")
    code, text = refused(binary, fake, tmp_path, locked, "--link-password-file", str(wrong))
    assert code == 9 and "wrong password" in text, (code, text)
    assert "not the password" not in text and "rlkey" not in text
    code, text = refused(binary, fake, tmp_path, locked)
    assert code == 10 and "needs a password" in text, (code, text)
    expired = fake.share("/Vault", expires_in=-60)["url"]
    code, text = refused(binary, fake, tmp_path, expired)
    assert code == 8 and "expired" in text, (code, text)
    odd = fake.share("/Vault", unsupported=True)["url"]
    code, text = refused(binary, fake, tmp_path, odd)
    assert code == 11 and "cannot mount" in text, (code, text)
    code, text = refused(binary, fake, tmp_path, "not a url")
    assert code == 2 and "--shared-link" in text, (code, text)
    code, text = refused(binary, fake, tmp_path, locked, "--link-password-file", str(tmp_path / "missing"))
    assert code == 2 and "password file" in text, (code, text)


def test_a_change_appears_after_the_listing_lifetime(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/Live/sub/old.txt", data=b"first\n")
    url = fake.share("/Live", expires_in=7 * 86400)["url"]
    m = mount_factory(fake, "--shared-link", url, "--dir-cache-time", "1s", "--attr-timeout", "1s")
    wait_until(lambda: "the shared link expires at 20" in m.log_text(), timeout=10, message="the expiry in the log")
    sub = os.path.join(m.path, "sub")
    assert os.listdir(sub) == ["old.txt"]
    fake.add_file("/Live/sub/new.txt", data=b"added\n")
    fake.add_file("/Live/sub/old.txt", data=b"second version\n")
    wait_until(lambda: sorted(os.listdir(sub)) == ["new.txt", "old.txt"], timeout=15,
               message="the new file to appear after the listing lifetime")

    def current():
        with open(os.path.join(sub, "old.txt"), "rb") as f:
            return f.read() == b"second version\n"
    wait_until(current, timeout=15, message="the new version to be read")
    fake.delete("/Live/sub/new.txt")
    wait_until(lambda: os.listdir(sub) == ["old.txt"], timeout=15, message="the deleted file to go")


def test_a_file_manager_gets_thumbnails_of_a_links_photos(fake_factory, mount_factory, tmp_path):
    from test_thumbnails import cache_name, file_manager, png_text, written
    photos = 6
    fake = fake_factory("--photos", str(photos))
    url = fake.share("/Camera Uploads")["url"]
    m = mount_factory(fake, "--shared-link", url, "--thumbnail-sizes", "normal")
    mount = os.path.realpath(m.path)
    fake.reset_stats()
    r = run(file_manager(tmp_path), mount)
    assert r.returncode == 0, r.stderr
    names = [f"IMG_{i:04d}.jpg" for i in range(1, photos + 1)]
    wait_until(lambda: len(written(tmp_path)) >= photos, timeout=20, message=f"{photos} thumbnails")
    assert written(tmp_path) == sorted(cache_name(os.path.join(mount, n)) for n in names)
    folder = tmp_path / "xdg-cache" / "thumbnails" / "normal"
    for n in names:
        text = png_text((folder / cache_name(os.path.join(mount, n))).read_bytes())
        assert text[b"Thumb::URI"].decode().endswith("/" + n)
    routes = fake.stats()["routes"]
    assert routes.get("files/get_thumbnail_v2", 0) == photos, routes
    assert routes.get("sharing/get_shared_link_file", 0) == 0 and routes.get("files/download", 0) == 0, routes


def test_damaged_bytes_of_a_link_are_caught_by_the_content_hash(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/L/photo.jpg", size=3 * 2**20, seed=5)
    fake.add_file("/L/bad.bin", size=2**20, seed=6)
    url = fake.share("/L")["url"]
    m = mount_factory(fake, "--shared-link", url, "--no-disk-cache", allowed_log=("do not match",))
    want = hashlib.sha256(fake.content("/L/photo.jpg")).hexdigest()
    fake.add_fault("sharing/get_shared_link_file", "flip", count=1)
    r = run("sha256sum", os.path.join(m.path, "photo.jpg"), timeout=60)
    assert r.returncode == 0 and r.stdout.split()[0].decode() == want, r.stderr
    assert "downloading the whole file once more" in m.log_text()
    fake.clear_faults()
    fake.add_fault("sharing/get_shared_link_file", "flip", count=0)
    r = run("cat", os.path.join(m.path, "bad.bin"), timeout=60)
    assert r.returncode != 0 and b"Input/output error" in r.stderr
