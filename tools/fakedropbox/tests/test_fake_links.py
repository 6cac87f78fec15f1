"""Shared links (links.py): listings without paths, paging, ranged files, passwords, expiry,
moves and deletions of the target, and the cursor after the last page."""

import json


def link_list(fd, url, path="", password=None, limit=None):
    sl = {"url": url}
    if password is not None:
        sl["password"] = password
    arg = {"path": path, "shared_link": sl}
    if limit:
        arg["limit"] = limit
    r = fd.rpc("files/list_folder", arg)
    assert r.status == 200, r
    page = r.json()
    entries, pages = list(page["entries"]), 1
    while page["has_more"]:
        page = fd.rpc("files/list_folder/continue", {"cursor": page["cursor"]}).json()
        entries += page["entries"]
        pages += 1
    return entries, page["cursor"], pages


def link_file(fd, url, path=None, password=None, range=None):
    arg = {"url": url}
    if path is not None:
        arg["path"] = path
    if password is not None:
        arg["link_password"] = password
    return fd.download(arg=arg, route="sharing/get_shared_link_file", range=range)


def error_tag(r):
    assert r.status == 409, r
    return r.json()["error"][".tag"]


def test_folder_link_pages_without_paths(fd):
    for i in range(7):
        fd.add_file("/S/f%d.txt" % i, data=b"x" * i)
    fd.mkdir("/S/Sub")
    url = fd.share("/S")["url"]
    entries, cursor, pages = link_list(fd, url, limit=3)
    assert pages == 3
    assert sorted(e["name"] for e in entries) == ["Sub"] + ["f%d.txt" % i for i in range(7)]
    assert all("path_lower" not in e and "path_display" not in e for e in entries)
    files = {e["name"]: e for e in entries if e[".tag"] == "file"}
    tree = {t["name"]: t for t in fd.tree() if t["tag"] == "file"}
    for name, e in files.items():
        assert (e["rev"], e["size"], e["content_hash"]) == (tree[name]["rev"], tree[name]["size"],
                                                            tree[name]["content_hash"])
    # After the last page: empty while nothing changed, reset once the tree changed.
    r = fd.rpc("files/list_folder/continue", {"cursor": cursor})
    assert r.status == 200 and r.json()["entries"] == [] and not r.json()["has_more"]
    fd.add_file("/S/new.txt", data=b"n")
    assert error_tag(fd.rpc("files/list_folder/continue", {"cursor": cursor})) == "reset"


def test_recursive_is_refused(fd):
    fd.mkdir("/S")
    url = fd.share("/S")["url"]
    r = fd.rpc("files/list_folder", {"path": "", "recursive": True, "shared_link": {"url": url}})
    assert r.status == 400 and "non-recursive" in r.text


def test_ranged_file_and_directory_error(fd):
    data = bytes(range(256)) * 8
    fd.add_file("/S/d/blob.bin", data=data)
    url = fd.share("/S")["url"]
    r = link_file(fd, url, "/d/blob.bin", range="bytes=100-299")
    assert r.status == 206 and r.body == data[100:300]
    md = r.result
    assert md[".tag"] == "file" and md["url"] == url and md["size"] == len(data) and "path_lower" not in md
    assert error_tag(link_file(fd, url, "/d")) == "shared_link_is_directory"
    assert error_tag(link_file(fd, url)) == "shared_link_is_directory"
    assert error_tag(link_file(fd, url, "/d/none")) == "shared_link_not_found"


def test_file_link_lists_as_the_file(fd):
    fd.add_file("/one.txt", data=b"single")
    url = fd.share("/one.txt")["url"]
    entries, _, _ = link_list(fd, url)
    assert [e["name"] for e in entries] == ["one.txt"]
    r = link_file(fd, url)
    assert r.status == 200 and r.body == b"single"
    md = fd.rpc("sharing/get_shared_link_metadata", {"url": url}).json()
    assert md[".tag"] == "file" and md["size"] == 6 and md["link_permissions"]["resolved_visibility"][".tag"] == "public"


def test_password_expiry_and_unsupported(fd):
    fd.add_file("/S/a.txt", data=b"a")
    url = fd.share("/S", password="secret")["url"]
    meta = lambda **kw: fd.rpc("sharing/get_shared_link_metadata", dict(kw, url=url))
    assert error_tag(meta()) == "shared_link_access_denied"
    assert error_tag(meta(link_password="nope")) == "shared_link_access_denied"
    assert meta(link_password="secret").json()["name"] == "S"
    r = fd.rpc("files/list_folder", {"path": "", "shared_link": {"url": url, "password": "nope"}})
    assert error_tag(r) == "shared_link_access_denied"
    assert error_tag(link_file(fd, url, "/a.txt", password="nope")) == "shared_link_access_denied"
    fd.update_link(url, expires_in=-1)
    assert error_tag(meta(link_password="secret")) == "shared_link_not_found"
    fd.update_link(url, expires_in=3600)
    assert "expires" in meta(link_password="secret").json()
    odd = fd.share("/S", unsupported=True)["url"]
    assert error_tag(fd.rpc("sharing/get_shared_link_metadata", {"url": odd})) == "unsupported_link_type"
    assert error_tag(fd.rpc("sharing/get_shared_link_metadata", {"url": "https://www.dropbox.com/scl/fo/x"})) \
        == "shared_link_not_found"


def test_link_follows_moves_and_dies_with_its_target(fd):
    fd.add_file("/S/a.txt", data=b"a")
    url = fd.share("/S")["url"]
    fd.move("/S", "/T")
    assert [e["name"] for e in link_list(fd, url)[0]] == ["a.txt"]
    fd.delete("/T")
    assert error_tag(fd.rpc("sharing/get_shared_link_metadata", {"url": url})) == "shared_link_not_found"


def test_any_token_reads_another_accounts_link(start):
    fd = start("--quiet", "--second-account")
    b = fd.as_account("b")
    b.add_file("/Theirs/x.txt", data=b"from b")
    url = b.share("/Theirs")["url"]
    entries, _, _ = link_list(fd, url)        # account a's token
    assert [e["name"] for e in entries] == ["x.txt"]
    assert link_file(fd, url, "/x.txt").body == b"from b"


def test_thumbnail_of_a_file_in_a_link(fd):
    fd.add_file("/S/pic.jpg", size=200000, seed=5)
    fd.add_file("/S/a.txt", data=b"text")
    url = fd.share("/S", password="pw")["url"]

    def thumb(path, password="pw"):
        arg = {"resource": {".tag": "link", "url": url, "path": path, "password": password},
               "format": "png", "size": "w128h128"}
        return fd.download(arg=arg, route="files/get_thumbnail_v2")

    r = thumb("/pic.jpg")
    assert r.status == 200 and r.body[:8] == b"\x89PNG\r\n\x1a\n"
    assert r.result["link_metadata"]["url"] == url
    assert error_tag(thumb("/a.txt")) == "unsupported_extension"
    assert error_tag(thumb("/pic.jpg", password="no")) == "access_denied"
    assert error_tag(thumb("/none.jpg")) == "path"
