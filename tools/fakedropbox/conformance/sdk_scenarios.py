"""SDK-side half of the conformance test: run with the official `dropbox` SDK.

Exists as a separate script because the SDK reads DROPBOX_API_HOST & co. once
at import: test_sdk_conformance.py runs `python sdk_scenarios.py SCENARIO` in
a subprocess whose environment points every Dropbox host at the fake (TLS,
REQUESTS_CA_BUNDLE = the fake's CA).  Each scenario raises on any mismatch.
Control calls use CONTROL_URL / CONTROL_CA.
"""

import base64
import json
import os
import ssl
import sys
import threading
import time
import urllib.request

import dropbox
from dropbox import files, users
from dropbox.common import PathRoot
from dropbox.exceptions import ApiError, AuthError, PathRootError

CTRL = os.environ["CONTROL_URL"]
CTX = ssl.create_default_context(cafile=os.environ["CONTROL_CA"])


def ctl(method, path, obj=None, raw=False):
    data = None if obj is None else json.dumps(obj).encode()
    req = urllib.request.Request(CTRL + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=CTX) as r:
        body = r.read()
    return body if raw else json.loads(body)


def put(path, data):
    return ctl("POST", "/_control/files", {"path": path, "content_b64": base64.b64encode(data).decode()})


def dbx(**kw):
    return dropbox.Dropbox("test-token", **kw)


def list_all(d, path, recursive, limit=None):
    r = d.files_list_folder(path, recursive=recursive, limit=limit)
    entries, pages = list(r.entries), 1
    while r.has_more:
        r = d.files_list_folder_continue(r.cursor)
        entries += r.entries
        pages += 1
    return entries, r.cursor, pages


def check_order(entries):
    seen = set()
    for e in entries:
        parent = e.path_lower.rpartition("/")[0]
        assert parent == "" or parent in seen, e.path_lower
        seen.add(e.path_lower)


# ---- scenarios ---------------------------------------------------------------------

def scenario_list_recursive_paged():
    d = dbx()
    entries, cursor, pages = list_all(d, "", True, limit=97)
    tree = ctl("GET", "/_control/tree")["entries"]
    assert len(entries) == len(tree), (len(entries), len(tree))
    assert pages >= len(tree) // 97, pages
    check_order(entries)
    kinds = {type(e) for e in entries}
    assert kinds == {files.FileMetadata, files.FolderMetadata}, kinds
    by = {e.path_lower: e for e in entries}
    for t in tree:
        e = by[t["path_lower"]]
        if t["tag"] == "file":
            assert e.rev == t["rev"] and e.size == t["size"] and e.content_hash == t["content_hash"]
            assert e.id == t["id"]
            if t["symlink_target"]:
                assert e.symlink_info.target == t["symlink_target"]
    sub = next(e for e in entries if isinstance(e, files.FolderMetadata) and "/" in e.path_lower[1:])
    r = d.files_list_folder(sub.path_display, recursive=True)
    assert r.entries[0].path_lower == sub.path_lower


def scenario_continue_after_mutations():
    d = dbx()
    put("/m/a.txt", b"a")
    put("/m/b.txt", b"b")
    ctl("POST", "/_control/folders", {"path": "/m/sub"})
    entries, cursor, _ = list_all(d, "/m", True)
    assert [e.name for e in entries] == ["m", "a.txt", "b.txt", "sub"]
    put("/m/new.txt", b"new")                      # add
    put("/m/a.txt", b"a, modified")                # modify
    ctl("POST", "/_control/delete", {"path": "/m/b.txt"})   # delete
    put("/m/sub/inner.txt", b"in")
    ctl("POST", "/_control/move", {"from": "/m/sub", "to": "/m/moved"})  # move
    r = d.files_list_folder_continue(cursor)
    got = [(type(e).__name__, e.path_lower) for e in r.entries]
    assert got == [("FileMetadata", "/m/new.txt"), ("FileMetadata", "/m/a.txt"),
                   ("DeletedMetadata", "/m/b.txt"), ("FileMetadata", "/m/sub/inner.txt"),
                   ("DeletedMetadata", "/m/sub"), ("FolderMetadata", "/m/moved"),
                   ("FileMetadata", "/m/moved/inner.txt")], got
    assert r.entries[1].size == len(b"a, modified")
    r2 = d.files_list_folder_continue(r.cursor)
    assert r2.entries == [] and not r2.has_more and r2.cursor


def scenario_get_metadata():
    d = dbx()
    md = put("/g/file.txt", b"hello world")
    m = d.files_get_metadata("/g/file.txt")
    assert isinstance(m, files.FileMetadata)
    assert m.rev == md["rev"] and m.size == 11 and m.content_hash == md["content_hash"]
    assert m.server_modified.year >= 2020
    f = d.files_get_metadata("/g")
    assert isinstance(f, files.FolderMetadata)
    assert d.files_get_metadata(m.id).path_lower == "/g/file.txt"
    assert d.files_get_metadata("rev:" + m.rev).rev == m.rev
    ctl("POST", "/_control/delete", {"path": "/g/file.txt"})
    dm = d.files_get_metadata("/g/file.txt", include_deleted=True)
    assert isinstance(dm, files.DeletedMetadata)


def scenario_ranged_download():
    d = dbx()
    put("/d/data.bin", bytes(range(256)) * 64)
    md, resp = d.files_download("/d/data.bin", extra_headers={"Range": "bytes=7-11"})
    assert resp.status_code == 206 and resp.content == bytes([7, 8, 9, 10, 11])
    assert md.size == 256 * 64 and md.name == "data.bin"
    md, resp = d.files_download("/d/data.bin", extra_headers={"Range": "bytes=16000-"})
    assert resp.content == (bytes(range(256)) * 64)[16000:]
    md, resp = d.files_download("/d/data.bin")
    assert resp.content == ctl("GET", "/_control/content?path=/d/data.bin", raw=True)
    big = ctl("POST", "/_control/files", {"path": "/d/big.bin", "size": 5 * 1024 * 1024 + 7, "seed": 9})
    md, resp = d.files_download("/d/big.bin", extra_headers={"Range": "bytes=4194300-4194310"})
    full = ctl("GET", "/_control/content?path=/d/big.bin", raw=True)
    assert resp.content == full[4194300:4194311]
    assert md.content_hash == big["content_hash"]
    # The SDK's own content hasher agrees with the fake's content_hash.
    from dropbox.content_hash import DropboxContentHasher
    h = DropboxContentHasher()
    h.update(full)
    assert h.hexdigest() == big["content_hash"]


def scenario_longpoll():
    d = dbx()
    ctl("POST", "/_control/folders", {"path": "/lp"})
    cursor = d.files_list_folder_get_latest_cursor("/lp").cursor

    def later():
        time.sleep(1.0)
        put("/lp/new.txt", b"x")

    threading.Thread(target=later).start()
    t0 = time.monotonic()
    r = d.files_list_folder_longpoll(cursor, timeout=30)
    assert r.changes is True and time.monotonic() - t0 < 10
    r = d.files_list_folder_continue(cursor)
    assert [e.name for e in r.entries] == ["new.txt"]


def scenario_account():
    d = dbx()
    a = d.users_get_current_account()
    assert isinstance(a, users.FullAccount) and len(a.account_id) == 40
    assert a.root_info.root_namespace_id == a.root_info.home_namespace_id
    u = d.users_get_space_usage()
    assert u.allocation.is_individual() and u.allocation.get_individual().allocated == 2 * 1024 ** 4


def scenario_account_team():
    d = dbx()
    a = d.users_get_current_account()
    assert a.account_type.is_business()
    assert a.root_info.root_namespace_id != a.root_info.home_namespace_id
    assert a.root_info.home_path
    assert a.team is not None and a.team.name
    u = d.users_get_space_usage()
    assert u.allocation.is_team()
    t = u.allocation.get_team()
    assert t.user_within_team_space_limit_type.is_off() and t.allocated > 0
    # path root: the team root is accepted, another one is a PathRootError (422)
    d.with_path_root(PathRoot.root(a.root_info.root_namespace_id)).files_list_folder("")
    try:
        d.with_path_root(PathRoot.root("123")).files_list_folder("")
    except PathRootError as e:
        assert e.error.is_invalid_root()
    else:
        raise AssertionError("expected PathRootError")


def scenario_errors():
    d = dbx()
    try:
        d.files_get_metadata("/nope/nothing")
    except ApiError as e:
        assert e.error.is_path() and e.error.get_path().is_not_found(), e.error
        assert e.user_message_text is None
    else:
        raise AssertionError("expected ApiError")
    ctl("POST", "/_control/folders", {"path": "/errs"})
    try:
        d.files_download("/errs")
    except ApiError as e:
        assert e.error.is_path() and e.error.get_path().is_not_file()
    else:
        raise AssertionError("expected ApiError")
    cursor = d.files_list_folder("").cursor
    ctl("POST", "/_control/reset_cursors", {})
    try:
        d.files_list_folder_continue(cursor)
    except ApiError as e:
        assert e.error.is_reset()
    else:
        raise AssertionError("expected reset")
    try:
        dropbox.Dropbox("wrong-token").files_list_folder("")
    except AuthError as e:
        assert e.error.is_invalid_access_token()
    else:
        raise AssertionError("expected AuthError")
    # 429 with retry_after: the SDK waits and retries by itself
    ctl("POST", "/_control/faults", {"route": "files/list_folder", "kind": "429json", "retry_after": 1})
    t0 = time.monotonic()
    d.files_list_folder("")
    assert time.monotonic() - t0 >= 0.9
    ctl("POST", "/_control/faults", {"route": "files/list_folder", "kind": "429text", "retry_after": 1})
    d.files_list_folder("")
    # 5xx: retried with backoff
    ctl("POST", "/_control/faults", {"route": "files/get_metadata", "kind": "503"})
    d.files_get_metadata("/errs")
    ctl("DELETE", "/_control/faults")


def scenario_oauth_refresh():
    from dropbox import DropboxOAuth2FlowNoRedirect
    import re
    flow = DropboxOAuth2FlowNoRedirect("fakeappkey", use_pkce=True, token_access_type="offline")
    url = flow.start()
    assert url.startswith("https://%s/oauth2/authorize?" % os.environ["DROPBOX_WEB_HOST"]), url
    with urllib.request.urlopen(url, context=CTX) as r:
        code = re.search(r'<code id="auth-code">([^<]+)</code>', r.read().decode()).group(1)
    res = flow.finish(code)
    assert res.access_token.startswith("sl.") and res.refresh_token
    assert res.account_id == dbx().users_get_current_account().account_id
    ctl("POST", "/_control/config", {"access_token_ttl": 1})
    d = dropbox.Dropbox(oauth2_refresh_token=res.refresh_token, app_key="fakeappkey")
    d.files_list_folder("")
    first = d._oauth2_access_token
    time.sleep(1.2)
    d._oauth2_access_token_expiration = None  # let the SDK learn expiry from the 401
    d.files_list_folder("")                   # 401 expired -> refresh -> retry
    assert d._oauth2_access_token != first
    ctl("POST", "/_control/revoke_refresh_tokens", {})
    time.sleep(1.2)
    try:
        d.files_list_folder("")
    except AuthError as e:
        assert e.error.is_invalid_access_token()
    else:
        raise AssertionError("expected AuthError after refresh token revocation")


def scenario_sample_account():
    d = dbx()
    entries, _, _ = list_all(d, "", True, limit=2000)
    names = {e.name for e in entries}
    assert "Café ☕.txt" in names and "日本語のファイル.txt" in names
    paper = next(e for e in entries if e.name == "Project plan.paper")
    assert paper.is_downloadable is False and paper.export_info.export_as == "html"
    md, resp = d.files_export(paper.path_lower)
    assert md.export_metadata.name.endswith(".html") and b"<html" in resp.content
    link = next(e for e in entries if isinstance(e, files.FileMetadata) and e.symlink_info)
    assert link.symlink_info.target


def scenario_synthetic():
    d = dbx()
    entries, _, _ = list_all(d, "", True, limit=2000)
    check_order(entries)
    assert len(entries) > 1500


def scenario_thumbnails():
    """files_get_thumbnail_batch goes to the content host as an RPC call."""
    ctl("POST", "/_control/files", {"path": "/Pics/a.jpg", "size": 3000000, "seed": 4})
    put("/Pics/readme.txt", b"not an image")
    d = dbx()
    res = d.files_get_thumbnail_batch([
        files.ThumbnailArg("/Pics/a.jpg", format=files.ThumbnailFormat.png,
                           size=files.ThumbnailSize.w128h128),
        files.ThumbnailArg("/Pics/a.jpg"),
        files.ThumbnailArg("/Pics/readme.txt"),
        files.ThumbnailArg("/Pics/missing.jpg")])
    png, jpeg, txt, missing = res.entries
    assert png.is_success() and png.get_success().metadata.name == "a.jpg"
    assert base64.b64decode(png.get_success().thumbnail)[:8] == b"\x89PNG\r\n\x1a\n"
    assert base64.b64decode(jpeg.get_success().thumbnail)[:2] == b"\xff\xd8"
    assert txt.get_failure().is_unsupported_extension()
    assert missing.get_failure().get_path().is_not_found()
    try:
        d.files_get_thumbnail_batch([files.ThumbnailArg("/Pics/a.jpg")] * 26)
    except ApiError as e:
        assert e.error.is_too_many_files()
    else:
        raise AssertionError("expected too_many_files")


def scenario_revisions():
    """files_list_revisions (both modes, before_rev paging), include_deleted listings with
    DeletedMetadata, and rev: downloads, through the SDK's validation."""
    for i in range(4):
        put("/hist/note.txt", b"version %d" % i)
    put("/hist/doomed.txt", b"last words")
    ctl("POST", "/_control/delete", {"path": "/hist/doomed.txt"})
    d = dbx()
    first = d.files_list_revisions("/hist/note.txt", limit=2)
    assert isinstance(first, files.ListRevisionsResult) and not first.is_deleted
    assert first.has_more and len(first.entries) == 2
    rest = d.files_list_revisions("/hist/note.txt", limit=100, before_rev=first.entries[-1].rev)
    revs = first.entries + rest.entries
    assert [d.files_download("rev:" + e.rev)[1].content for e in revs] == \
        [b"version %d" % i for i in (3, 2, 1, 0)]
    by_id = d.files_list_revisions(revs[0].id, mode=files.ListRevisionsMode.id, limit=100)
    assert [e.rev for e in by_id.entries] == [e.rev for e in revs]
    try:
        d.files_list_revisions(revs[0].id, mode=files.ListRevisionsMode.id, before_rev=revs[0].rev)
    except ApiError as e:
        assert e.error.is_before_rev_not_supported()
    else:
        raise AssertionError("expected before_rev_not_supported")
    gone = d.files_list_revisions("/hist/doomed.txt")
    assert gone.is_deleted and gone.server_deleted is not None
    assert d.files_download("rev:" + gone.entries[0].rev)[1].content == b"last words"
    listed = d.files_list_folder("/hist", include_deleted=True).entries
    tombs = [e for e in listed if isinstance(e, files.DeletedMetadata)]
    assert [t.name for t in tombs] == ["doomed.txt"]
    try:
        d.files_list_revisions("/hist/never.txt")
    except ApiError as e:
        assert e.error.is_path() and e.error.get_path().is_not_found()
    else:
        raise AssertionError("expected path/not_found")


def scenario_shared_links():
    """A shared link to a folder and one to a file, read through the SDK's sharing routes and
    list_folder with shared_link; the errors of a wrong password, an expired and an unsupported link."""
    from dropbox import sharing
    d = dbx()
    put("/Shared/a.txt", b"alpha")
    put("/Shared/sub/b.bin", bytes(range(256)) * 40)
    folder = ctl("POST", "/_control/shared_links", {"path": "/Shared", "password": "pw"})["url"]
    single = ctl("POST", "/_control/shared_links", {"path": "/Shared/a.txt"})["url"]
    md = d.sharing_get_shared_link_metadata(folder, link_password="pw")
    assert isinstance(md, sharing.FolderLinkMetadata) and md.name == "Shared", md
    assert md.link_permissions.resolved_visibility.is_password()
    link = files.SharedLink(folder, "pw")
    r = d.files_list_folder("", shared_link=link, limit=1)
    entries = list(r.entries)
    while r.has_more:
        r = d.files_list_folder_continue(r.cursor)
        entries += r.entries
    assert sorted(e.name for e in entries) == ["a.txt", "sub"], entries
    assert all(e.path_lower is None and e.path_display is None for e in entries)
    sub = d.files_list_folder("/sub", shared_link=link).entries
    assert [e.name for e in sub] == ["b.bin"] and sub[0].content_hash
    fmd, resp = d.sharing_get_shared_link_file(folder, path="/sub/b.bin", link_password="pw")
    assert isinstance(fmd, sharing.FileLinkMetadata) and fmd.size == 10240 and fmd.rev == sub[0].rev
    assert resp.content == bytes(range(256)) * 40
    fmd, resp = d.sharing_get_shared_link_file(single)
    assert fmd.name == "a.txt" and resp.content == b"alpha"
    only = d.files_list_folder("", shared_link=files.SharedLink(single)).entries
    assert [e.name for e in only] == ["a.txt"], only
    # A thumbnail of a file in the link, by PathOrLink; a file that is no image fails alone.
    ctl("POST", "/_control/files", {"path": "/Shared/pic.jpg", "size": 300000, "seed": 3})
    res = files.PathOrLink.link(files.SharedLinkFileInfo(folder, path="/pic.jpg", password="pw"))
    preview, resp = d.files_get_thumbnail_v2(res, format=files.ThumbnailFormat.png,
                                             size=files.ThumbnailSize.w128h128)
    assert resp.content[:8] == b"\x89PNG\r\n\x1a\n" and preview.link_metadata.url == folder
    try:
        d.files_get_thumbnail_v2(files.PathOrLink.link(files.SharedLinkFileInfo(folder, path="/a.txt", password="pw")))
    except ApiError as e:
        assert e.error.is_unsupported_extension(), e.error
    else:
        raise AssertionError("expected ApiError")
    expired = ctl("POST", "/_control/shared_links", {"path": "/Shared", "expires_in": -1})["url"]
    odd = ctl("POST", "/_control/shared_links", {"path": "/Shared", "unsupported": True})["url"]
    for call, check in [
        (lambda: d.sharing_get_shared_link_metadata(folder, link_password="wrong"),
         lambda e: e.is_shared_link_access_denied()),
        (lambda: d.sharing_get_shared_link_metadata(folder),
         lambda e: e.is_shared_link_access_denied()),
        (lambda: d.sharing_get_shared_link_metadata(expired), lambda e: e.is_shared_link_not_found()),
        (lambda: d.sharing_get_shared_link_metadata(odd), lambda e: e.is_unsupported_link_type()),
        (lambda: d.sharing_get_shared_link_file(folder, link_password="pw"),
         lambda e: e.is_shared_link_is_directory()),
        (lambda: d.files_list_folder("/nope", shared_link=link),
         lambda e: e.is_path() and e.get_path().is_not_found()),
    ]:
        try:
            call()
        except ApiError as e:
            assert check(e.error), e.error
        else:
            raise AssertionError("expected ApiError")


def scenario_access_levels():
    """sharing_info's traverse_only and no_access decode as the SDK's FolderSharingInfo; a
    no_access folder's listing and a blocked file's download are LookupError restricted_content."""
    ctl("POST", "/_control/folders", {"path": "/team/Locked", "access": "no_access"})
    ctl("POST", "/_control/folders", {"path": "/team/Pass", "access": "traverse_only"})
    ctl("POST", "/_control/files", {"path": "/blocked.bin", "content_b64": "AAEC", "restricted": True})
    d = dbx()
    got = {e.name: e for e in d.files_list_folder("/team").entries}
    assert got["Locked"].sharing_info.no_access and not got["Locked"].sharing_info.traverse_only
    assert got["Pass"].sharing_info.traverse_only and not got["Pass"].sharing_info.no_access
    for call in (lambda: d.files_list_folder("/team/Locked"), lambda: d.files_download("/blocked.bin")):
        try:
            call()
        except ApiError as e:
            assert e.error.is_path() and e.error.get_path().is_restricted_content(), e.error
        else:
            raise AssertionError("expected restricted_content")


def scenario_shared_folders():
    """sharing_list_folders (+ continue) decode as the SDK's SharedFolderMetadata, path_lower only
    for the folder the account added; a folder not added is listed and read through
    with_path_root(PathRoot.namespace_id(...)); an unreadable namespace is PathRootError
    no_permission."""
    from dropbox import sharing
    made = [ctl("POST", "/_control/shared_folders", {"name": "Project %d" % i}) for i in range(3)]
    added = ctl("POST", "/_control/shared_folders", {"name": "Added", "mounted_at": "/Added",
                                                     "access_type": "editor"})
    locked = ctl("POST", "/_control/shared_folders", {"name": "Locked", "readable": False})
    sid = made[0]["shared_folder_id"]
    for path, data in (("/a.txt", b"alpha"), ("/sub/b.bin", bytes(range(200)))):
        ctl("POST", "/_control/files?namespace=" + sid,
            {"path": path, "content_b64": base64.b64encode(data).decode()})
    d = dbx()
    r = d.sharing_list_folders(limit=2)
    got = list(r.entries)
    pages = 1
    while r.cursor:
        r = d.sharing_list_folders_continue(r.cursor)
        got += r.entries
        pages += 1
    assert pages == 3, pages
    assert all(isinstance(e, sharing.SharedFolderMetadata) for e in got)
    assert [e.shared_folder_id for e in got] == [m["shared_folder_id"] for m in made + [added, locked]]
    assert [e.path_lower for e in got] == [None, None, None, "/added", None]
    assert got[3].access_type.is_editor() and got[0].access_type.is_viewer()
    assert not got[0].is_team_folder and got[0].preview_url and got[0].time_invited
    assert got[0].policy.acl_update_policy.is_owner()
    ns = d.with_path_root(PathRoot.namespace_id(sid))
    entries, _, _ = list_all(ns, "", True, limit=1)
    assert sorted(e.path_display for e in entries) == ["/a.txt", "/sub", "/sub/b.bin"], entries
    top = ns.files_list_folder("").entries
    assert sorted(e.name for e in top) == ["a.txt", "sub"]
    md, resp = ns.files_download("/sub/b.bin")
    assert resp.content == bytes(range(200)) and md.size == 200
    md, resp = ns.files_download("rev:" + md.rev)
    assert resp.content == bytes(range(200))
    assert d.files_list_folder("").entries[0].name == "Added", "the account's own tree"
    try:
        d.with_path_root(PathRoot.namespace_id(locked["shared_folder_id"])).files_list_folder("")
    except PathRootError as e:
        assert e.error.is_no_permission(), e.error
    else:
        raise AssertionError("expected PathRootError no_permission")


if __name__ == "__main__":
    globals()["scenario_" + sys.argv[1]]()
    print("OK")
