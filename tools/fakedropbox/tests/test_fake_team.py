"""--team: the team space root view and the member's home view
(Dropbox-API-Path-Root), cursors that keep their view, control paths."""

import json

import pytest

from fakedropbox.client import ControlError, FakeDropbox

HOME = "/Franz Ferdinand"


def root_header(f):
    return {"Dropbox-API-Path-Root": json.dumps({".tag": "root", "root": f.info()["root_namespace_id"]})}


def list_all(f, path="", recursive=False, headers=None, **kw):
    """list_folder + continue in one view (headers on every call)."""
    out = f.rpc("files/list_folder", dict(path=path, recursive=recursive, **kw), headers=headers)
    assert out.status == 200, out.text
    out = out.json()
    entries = list(out["entries"])
    while out["has_more"]:
        out = f.rpc("files/list_folder/continue", {"cursor": out["cursor"]}, headers=headers).json()
        entries += out["entries"]
    return entries, out["cursor"]


def cont(f, cursor, headers=None):
    r = f.rpc("files/list_folder/continue", {"cursor": cursor}, headers=headers)
    assert r.status == 200, r.text
    return r.json()


def changes(out):
    return [(e[".tag"], e["path_display"]) for e in out["entries"]]


def latest(f, path="", headers=None, recursive=True):
    r = f.rpc("files/list_folder/get_latest_cursor", {"path": path, "recursive": recursive},
              headers=headers)
    assert r.status == 200, r.text
    return r.json()["cursor"]


def longpoll(f, cursor, timeout=1, headers=None):
    r = f.rpc("files/list_folder/longpoll", {"cursor": cursor, "timeout": timeout},
              token=None, headers=headers)
    assert r.status == 200, r.text
    return r.json()["changes"]


@pytest.fixture(scope="module")
def team_sample():
    """--team --sample-account; tests using it must not mutate it."""
    with FakeDropbox.start("--team", "--sample-account", "--quiet") as f:
        yield f


@pytest.fixture
def team(start):
    """A fresh --team account: empty home folder, the two team folders."""
    return start("--team", "--quiet")


# ---- what each view lists -------------------------------------------------------

def test_home_view_is_the_non_team_account(team_sample, sample):
    info = team_sample.info()
    home_headers = [None, {"Dropbox-API-Path-Root": '"home"'},
                    {"Dropbox-API-Path-Root": json.dumps({".tag": "home"})},
                    {"Dropbox-API-Path-Root": json.dumps(
                        {".tag": "namespace_id", "namespace_id": info["home_namespace_id"]})}]
    plain, _ = list_all(sample, "", recursive=True, limit=2000)
    assert len(plain) > 5000
    for h in home_headers:
        got, _ = list_all(team_sample, "", recursive=True, limit=2000, headers=h)
        # Same names, paths, sizes, hashes (and, as built, the same ids and revs).
        assert got == plain, h
    for path in ("", "/Documents", "/Photos/Trip to Zürich"):
        a = team_sample.rpc("files/list_folder", {"path": path}).json()["entries"]
        assert a == sample.rpc("files/list_folder", {"path": path}).json()["entries"], path
    assert not any("franz" in e["path_lower"] or e["path_lower"].startswith(("/marketing", "/engineering"))
                   for e in plain)


def test_root_view_lists_home_and_team_folders(team_sample):
    rh = root_header(team_sample)
    top = team_sample.rpc("files/list_folder", {"path": ""}, headers=rh).json()["entries"]
    assert [(e[".tag"], e["name"], e["path_lower"], e["path_display"]) for e in top] == [
        ("folder", "Engineering", "/engineering", "/Engineering"),
        ("folder", "Franz Ferdinand", "/franz ferdinand", "/Franz Ferdinand"),
        ("folder", "Marketing", "/marketing", "/Marketing")]
    ns = {"Dropbox-API-Path-Root": json.dumps(
        {".tag": "namespace_id", "namespace_id": team_sample.info()["root_namespace_id"]})}
    assert team_sample.rpc("files/list_folder", {"path": ""}, headers=ns).json()["entries"] == top
    everything, _ = list_all(team_sample, "", recursive=True, limit=2000, headers=rh)
    home, _ = list_all(team_sample, "", recursive=True, limit=2000)
    by = {e["path_lower"]: e for e in everything}
    assert by["/marketing/plan.txt"]["path_display"] == "/Marketing/Plan.txt"
    assert by["/marketing/plan.txt"]["size"] == len(b"marketing plan\n")
    assert by["/engineering/design.md"]["path_display"] == "/Engineering/Design.md"
    assert by["/engineering/design.md"]["size"] == len(b"# design\n")
    # Team folders are shared folders: they and their entries carry sharing_info, as on Dropbox;
    # entries of the member's folder carry none.
    assert by["/marketing"]["sharing_info"] == {
        "read_only": True, "shared_folder_id": "84528192421", "traverse_only": False, "no_access": False}
    assert by["/marketing/plan.txt"]["sharing_info"]["read_only"] is True
    assert by["/marketing/plan.txt"]["sharing_info"]["parent_shared_folder_id"] == "84528192421"
    assert by["/engineering/design.md"]["sharing_info"]["read_only"] is False
    assert all("sharing_info" not in e for e in home)
    # The root view holds the home view's entries under /Franz Ferdinand.
    assert len(everything) == len(home) + 1 + 4
    for e in home:
        full = by["/franz ferdinand" + e["path_lower"]]
        assert full["path_display"] == HOME + e["path_display"]
        assert full["id"] == e["id"] and full.get("content_hash") == e.get("content_hash")
    # Parents first, as in any recursive listing.
    seen = set()
    for e in everything:
        assert e["path_lower"].rpartition("/")[0] in seen | {""}
        seen.add(e["path_lower"])
    # A recursive listing of the home folder in the root view starts with it.
    sub = team_sample.rpc("files/list_folder", {"path": HOME, "recursive": True, "limit": 3},
                          headers=rh).json()["entries"]
    assert sub[0][".tag"] == "folder" and sub[0]["path_display"] == HOME
    # The home folder is the home view's root: not an entry, not a path.
    assert team_sample.rpc("files/list_folder", {"path": HOME}).status == 409
    assert team_sample.rpc("files/list_folder", {"path": "/Marketing"}).status == 409


def test_metadata_and_download_in_both_views(team_sample):
    rh = root_header(team_sample)
    home_md = team_sample.rpc("files/get_metadata", {"path": "/Documents/Welcome.txt"}).json()
    root_md = team_sample.rpc("files/get_metadata", {"path": HOME + "/Documents/Welcome.txt"},
                              headers=rh).json()
    assert home_md["path_display"] == "/Documents/Welcome.txt"
    assert home_md["path_lower"] == "/documents/welcome.txt"
    assert root_md["path_display"] == HOME + "/Documents/Welcome.txt"
    assert root_md["path_lower"] == "/franz ferdinand/documents/welcome.txt"
    assert {k: v for k, v in root_md.items() if not k.startswith("path_")} == \
        {k: v for k, v in home_md.items() if not k.startswith("path_")}
    # by id, each view answers with its own paths
    by_id = team_sample.rpc("files/get_metadata", {"path": home_md["id"]}, headers=rh).json()
    assert by_id == root_md
    assert team_sample.rpc("files/get_metadata", {"path": home_md["id"]}).json() == home_md
    # downloads: body, ranges and Dropbox-API-Result paths
    r = team_sample.download("/Documents/Welcome.txt")
    assert r.status == 200 and r.body == b"Welcome to your fake Dropbox!\n"
    assert r.result["path_display"] == "/Documents/Welcome.txt"
    r = team_sample.download("/Documents/Welcome.txt", range="bytes=11-14")
    assert r.status == 206 and r.body == b"your" and r.result["path_lower"] == "/documents/welcome.txt"
    r = team_sample.download(HOME + "/Documents/Welcome.txt", range="bytes=-9", headers=rh)
    assert r.status == 206 and r.body == b"Dropbox!\n"
    assert r.result["path_display"] == HOME + "/Documents/Welcome.txt"
    r = team_sample.download("/Marketing/Plan.txt", headers=rh)
    assert r.status == 200 and r.body == b"marketing plan\n"
    assert r.result["path_lower"] == "/marketing/plan.txt"
    r = team_sample.download("/Engineering/Design.md", headers=rh, range="bytes=2-")
    assert r.status == 206 and r.body == b"design\n"
    assert r.headers["content-range"] == "bytes 2-8/9"
    r = team_sample.rpc("files/get_metadata", {"path": "/Engineering/Design.md"}, headers=rh).json()
    assert r["content_hash"] == team_sample.download("/Engineering/Design.md", headers=rh).result["content_hash"]
    # rev: in the home view gives home paths
    r = team_sample.download("rev:" + home_md["rev"])
    assert r.status == 200 and r.result["path_display"] == "/Documents/Welcome.txt"
    # export (non-downloadable files) reports the view's paths too
    r = team_sample.download("/Documents/Project plan.paper", route="files/export")
    assert r.status == 200 and r.result["file_metadata"]["path_display"] == "/Documents/Project plan.paper"
    r = team_sample.download(HOME + "/Documents/Project plan.paper", route="files/export", headers=rh)
    assert r.result["file_metadata"]["path_display"] == HOME + "/Documents/Project plan.paper"
    # the view's root is never an entry
    for h in (None, rh):
        assert team_sample.rpc("files/get_metadata", {"path": ""}, headers=h).status == 400


def test_team_folder_entries_are_not_found_in_the_home_view(team_sample):
    rh = root_header(team_sample)
    info = team_sample.info()
    folder = team_sample.rpc("files/get_metadata", {"path": "/Marketing"}, headers=rh).json()
    plan = team_sample.rpc("files/get_metadata", {"path": "/Marketing/Plan.txt"}, headers=rh).json()
    not_found = {".tag": "path", "path": {".tag": "not_found"}}
    for p in (plan["id"], folder["id"] + "/Plan.txt", "rev:" + plan["rev"], "/Marketing/Plan.txt",
              "ns:%s/Marketing/Plan.txt" % info["root_namespace_id"]):
        r = team_sample.rpc("files/get_metadata", {"path": p})
        assert r.status == 409 and r.json()["error"] == not_found, p
        r = team_sample.download(p)
        assert r.status == 409 and r.json()["error"] == not_found, p
    r = team_sample.rpc("files/list_folder", {"path": folder["id"]})
    assert r.status == 409 and r.json()["error"] == not_found
    # the same arguments work in the root view
    assert team_sample.download(plan["id"], headers=rh).body == b"marketing plan\n"
    assert team_sample.rpc("files/list_folder", {"path": folder["id"]}, headers=rh).status == 200
    # ns: of the home namespace is the home folder, in either view
    home_ns = "ns:%s/Documents/Welcome.txt" % info["home_namespace_id"]
    assert team_sample.rpc("files/get_metadata", {"path": home_ns}).json()["path_display"] == \
        "/Documents/Welcome.txt"
    assert team_sample.rpc("files/get_metadata", {"path": home_ns}, headers=rh).json()["path_display"] == \
        HOME + "/Documents/Welcome.txt"
    # the home folder's own id lists the home view's root
    home_id = team_sample.rpc("files/get_metadata", {"path": HOME}, headers=rh).json()["id"]
    assert team_sample.rpc("files/list_folder", {"path": home_id}).json()["entries"] == \
        team_sample.rpc("files/list_folder", {"path": ""}).json()["entries"]


def test_synthetic_home_view_matches_non_team(start):
    plain = start("--quiet", "--synthetic", "300", "--seed", "3")
    team = start("--quiet", "--team", "--synthetic", "300", "--seed", "3")
    a, _ = plain.list_all("", recursive=True, limit=2000)
    b, _ = team.list_all("", recursive=True, limit=2000)
    assert a == b
    f = max((e for e in a if e[".tag"] == "file" and e["is_downloadable"]), key=lambda e: e["size"])
    assert team.download(f["path_display"]).body == plain.download(f["path_display"]).body
    assert team.content(HOME + f["path_display"]) == plain.content(f["path_display"])


# ---- cursors and longpoll --------------------------------------------------------

def test_cursors_keep_their_view(team):
    rh = root_header(team)
    team.add_file(HOME + "/a.txt", b"a")
    home_cur = latest(team)
    root_cur = latest(team, headers=rh)
    flat_home = team.rpc("files/list_folder", {"path": ""}).json()["cursor"]
    team.add_file("/Marketing/New.txt", b"new")
    team.add_file(HOME + "/x.txt", b"x")
    team.mkdir(HOME + "/sub")
    team.add_file(HOME + "/sub/deep.txt", b"deep")
    # continue follows the cursor's view whatever header it carries
    for h in (None, rh):
        assert changes(cont(team, home_cur, headers=h)) == [
            ("file", "/x.txt"), ("folder", "/sub"), ("file", "/sub/deep.txt")]
        assert changes(cont(team, flat_home, headers=h)) == [("file", "/x.txt"), ("folder", "/sub")]
        assert changes(cont(team, root_cur, headers=h)) == [
            ("file", "/Marketing/New.txt"), ("file", HOME + "/x.txt"), ("folder", HOME + "/sub"),
            ("file", HOME + "/sub/deep.txt")]
    # deletes and overwrites
    cur = cont(team, home_cur)["cursor"]
    team.delete(HOME + "/sub")
    team.delete("/Marketing/New.txt")
    team.add_file(HOME + "/a.txt", b"a2")
    out = cont(team, cur)
    assert changes(out) == [("deleted", "/sub"), ("file", "/a.txt")]
    assert out["entries"][1]["size"] == 2
    # a listing made in the home view continues in the home view
    entries, cur = list_all(team, "", recursive=True)
    assert sorted(e["path_display"] for e in entries) == ["/a.txt", "/x.txt"]
    team.add_file("/Engineering/Other.md", b"o")
    assert cont(team, cur, headers=rh)["entries"] == []


def test_include_deleted_in_the_home_view(team):
    rh = root_header(team)
    team.add_file(HOME + "/gone.txt", b"g")
    team.delete(HOME + "/gone.txt")
    team.add_file("/Marketing/gone too.txt", b"g")
    team.delete("/Marketing/gone too.txt")
    out = team.rpc("files/list_folder", {"path": "", "include_deleted": True}).json()
    assert changes(out) == [("deleted", "/gone.txt")]
    out = team.rpc("files/list_folder", {"path": "", "recursive": True, "include_deleted": True},
                   headers=rh).json()
    assert ("deleted", HOME + "/gone.txt") in changes(out)
    assert ("deleted", "/Marketing/gone too.txt") in changes(out)
    r = team.rpc("files/get_metadata", {"path": "/gone.txt", "include_deleted": True}).json()
    assert r == {".tag": "deleted", "name": "gone.txt", "path_lower": "/gone.txt", "path_display": "/gone.txt"}
    r = team.rpc("files/get_metadata", {"path": HOME + "/gone.txt", "include_deleted": True},
                 headers=rh).json()
    assert r["path_display"] == HOME + "/gone.txt"
    r = team.rpc("files/get_metadata", {"path": "/Marketing/gone too.txt", "include_deleted": True})
    assert r.status == 409


def test_old_revisions_stay_in_their_view(team):
    rh = root_header(team)
    old_home = team.add_file(HOME + "/v.txt", b"v1")
    team.add_file(HOME + "/v.txt", b"v2")
    old_team = team.add_file("/Marketing/Plan.txt", b"plan v2")
    team.add_file("/Marketing/Plan.txt", b"plan v3")
    r = team.download("rev:" + old_home["rev"])
    assert r.status == 200 and r.body == b"v1" and r.result["path_display"] == "/v.txt"
    r = team.rpc("files/get_metadata", {"path": "rev:" + old_home["rev"]}).json()
    assert r["path_lower"] == "/v.txt"
    assert team.download("rev:" + old_team["rev"]).status == 409
    r = team.download("rev:" + old_team["rev"], headers=rh)
    assert r.body == b"plan v2" and r.result["path_display"] == "/Marketing/Plan.txt"


def test_longpoll_per_view(team):
    rh = root_header(team)
    home_cur = latest(team)
    root_cur = latest(team, headers=rh)
    marketing_cur = latest(team, "/Marketing", headers=rh)
    team.add_file("/Marketing/New.txt", b"new")
    # a change outside the home view does not wake a home cursor (whatever the header)
    assert longpoll(team, home_cur) is False
    assert longpoll(team, home_cur, headers=rh) is False
    assert longpoll(team, root_cur) is True
    assert longpoll(team, marketing_cur) is True
    assert cont(team, home_cur)["entries"] == []
    home_cur2 = latest(team)
    team.add_file(HOME + "/mine.txt", b"m")
    assert longpoll(team, home_cur2, headers=rh) is True
    assert longpoll(team, marketing_cur) is True  # still has the earlier change
    marketing_cur = cont(team, marketing_cur)["cursor"]
    assert longpoll(team, marketing_cur) is False
    assert changes(cont(team, home_cur2)) == [("file", "/mine.txt")]


def test_moves_across_the_home_boundary(team):
    rh = root_header(team)
    team.add_file(HOME + "/Work/a.txt", b"a")
    team.add_file(HOME + "/Work/b/c.txt", b"c")
    home_cur = latest(team)
    root_cur = latest(team, headers=rh)
    flat_cur = latest(team, recursive=False)
    # a team file moved into the home folder appears as created there
    team.move("/Marketing/Plan.txt", HOME + "/Plan.txt")
    out = cont(team, home_cur)
    assert changes(out) == [("file", "/Plan.txt")]
    home_cur = out["cursor"]
    assert changes(cont(team, flat_cur)) == [("file", "/Plan.txt")]
    out = cont(team, root_cur)
    assert changes(out) == [("deleted", "/Marketing/Plan.txt"), ("file", HOME + "/Plan.txt")]
    root_cur = out["cursor"]
    r = team.download("/Plan.txt")
    assert r.body == b"marketing plan\n" and r.result["path_display"] == "/Plan.txt"
    # a home folder moved into a team folder is one deletion in the home view
    assert longpoll(team, home_cur) is False
    team.move(HOME + "/Work", "/Engineering/Work")
    assert longpoll(team, home_cur) is True
    out = cont(team, home_cur)
    assert changes(out) == [("deleted", "/Work")]
    home_cur = out["cursor"]
    assert changes(cont(team, root_cur)) == [
        ("deleted", HOME + "/Work"), ("folder", "/Engineering/Work"), ("file", "/Engineering/Work/a.txt"),
        ("folder", "/Engineering/Work/b"), ("file", "/Engineering/Work/b/c.txt")]
    # and back in, renamed: the whole subtree appears as created
    team.move("/Engineering/Work", HOME + "/Work 2")
    assert changes(cont(team, home_cur)) == [
        ("folder", "/Work 2"), ("file", "/Work 2/a.txt"), ("folder", "/Work 2/b"), ("file", "/Work 2/b/c.txt")]
    # a cursor on a folder that left the view: its folder is gone from the view
    sub_cur = latest(team, "/Work 2")
    team.move(HOME + "/Work 2", "/Marketing/Work 2")
    r = team.rpc("files/list_folder/continue", {"cursor": sub_cur})
    assert r.status == 409 and r.json()["error"] == {".tag": "path", "path": {".tag": "not_found"}}


# ---- path root header and control API ----------------------------------------------

def test_bad_path_root_headers(team):
    info = team.info()
    assert info["root_namespace_id"] != info["home_namespace_id"]
    r = team.rpc("files/list_folder", {"path": ""},
                 headers={"Dropbox-API-Path-Root": json.dumps({".tag": "root", "root": "999"})})
    assert r.status == 422 and r.headers["content-type"] == "application/json"
    assert r.json()["error"] == {".tag": "invalid_root", "invalid_root": {
        ".tag": "team", "root_namespace_id": info["root_namespace_id"],
        "home_namespace_id": info["home_namespace_id"], "home_path": HOME}}
    # the home namespace is not a valid "root"
    r = team.rpc("files/list_folder", {"path": ""}, headers={"Dropbox-API-Path-Root": json.dumps(
        {".tag": "root", "root": info["home_namespace_id"]})})
    assert r.status == 422 and r.json()["error"][".tag"] == "invalid_root"
    r = team.download("/x", headers={"Dropbox-API-Path-Root": json.dumps({".tag": "root", "root": "1"})})
    assert r.status == 422
    r = team.rpc("files/list_folder", {"path": ""}, headers={"Dropbox-API-Path-Root": json.dumps(
        {".tag": "namespace_id", "namespace_id": "42"})})
    assert r.status == 422 and r.json()["error"] == {".tag": "no_permission"}
    r = team.rpc("files/list_folder", {"path": ""}, headers={"Dropbox-API-Path-Root": "{bad"})
    assert r.status == 400
    r = team.rpc("files/list_folder", {"path": ""}, headers={"Dropbox-API-Path-Root": '{".tag": "nope"}'})
    assert r.status == 400
    acc = team.rpc("users/get_current_account", None).json()["root_info"]
    assert acc == {".tag": "team", "root_namespace_id": info["root_namespace_id"],
                   "home_namespace_id": info["home_namespace_id"], "home_path": HOME}


def test_control_api_uses_full_paths(team):
    tree = team.tree()
    assert [(e["tag"], e["path_display"]) for e in tree] == [
        ("folder", "/Engineering"), ("file", "/Engineering/Design.md"), ("folder", HOME),
        ("folder", "/Marketing"), ("file", "/Marketing/Plan.txt")]
    assert team.content("/Marketing/Plan.txt") == b"marketing plan\n"
    assert team.content("/Engineering/Design.md") == b"# design\n"
    md = team.add_file(HOME + "/x.txt", b"x")
    assert md["path_display"] == HOME + "/x.txt"
    assert team.rpc("files/get_metadata", {"path": "/x.txt"}).json()["id"] == md["id"]
    assert team.content(HOME + "/x.txt") == b"x" and team.content(md["id"]) == b"x"
    assert any(e["path_lower"] == "/franz ferdinand/x.txt" for e in team.tree())
    assert set(team.info()) == {"instance", "account_id", "root_namespace_id", "home_namespace_id", "team"}
    # the home folder stays
    for call in (lambda: team.delete(HOME), lambda: team.move(HOME, "/Elsewhere"),
                 lambda: team.move(HOME, "/franz ferdinand"), lambda: team.add_file(HOME, b"file")):
        with pytest.raises(ControlError) as e:
            call()
        assert e.value.status == 409
    assert team.rpc("files/get_metadata", {"path": "/x.txt"}).status == 200
    # team folders themselves can change
    team.delete("/Engineering")
    assert [e["name"] for e in team.rpc("files/list_folder", {"path": ""}, headers=root_header(team))
            .json()["entries"]] == ["Franz Ferdinand", "Marketing"]
