"""Access levels: folders whose sharing_info says traverse_only or no_access, and files whose
content Dropbox blocks (restricted_content)."""

import pytest

from fakedropbox.client import ControlError


def entries(f, path="", recursive=False):
    out = f.rpc("files/list_folder", {"path": path, "recursive": recursive})
    assert out.status == 200, out.text
    out = out.json()
    got = list(out["entries"])
    while out["has_more"]:
        out = f.rpc("files/list_folder/continue", {"cursor": out["cursor"]}).json()
        got += out["entries"]
    return {e["path_display"]: e for e in got}


def test_levels_are_in_sharing_info(fd):
    fd.mkdir("/team/Locked", access="no_access")
    fd.mkdir("/team/Pass", access="traverse_only")
    fd.add_file("/team/Pass/Open/a.txt", b"a")
    fd.mkdir("/team/Plain")
    listed = entries(fd, "/team")
    assert listed["/team/Locked"]["sharing_info"] == {"read_only": False, "traverse_only": False, "no_access": True}
    assert listed["/team/Pass"]["sharing_info"] == {"read_only": False, "traverse_only": True, "no_access": False}
    assert "sharing_info" not in listed["/team/Plain"]
    everything = entries(fd, "", recursive=True)
    assert everything["/team/Locked"]["sharing_info"]["no_access"] is True
    assert "/team/Pass/Open/a.txt" in everything


def test_a_folder_without_access_cannot_be_listed_and_holds_nothing(fd):
    fd.mkdir("/Locked", access="no_access")
    r = fd.rpc("files/list_folder", {"path": "/Locked"})
    assert r.status == 409
    assert r.json()["error"] == {".tag": "path", "path": {".tag": "restricted_content"}}
    with pytest.raises(ControlError):
        fd.add_file("/Locked/x.txt", b"x")
    with pytest.raises(ControlError):
        fd.mkdir("/Locked/sub")


def test_a_bad_level_is_refused(fd):
    with pytest.raises(ControlError):
        fd.mkdir("/x", access="owner")


def test_blocked_content_is_listed_but_not_served(fd):
    fd.add_file("/blocked.mp3", size=1000, restricted=True)
    assert "/blocked.mp3" in entries(fd)
    r = fd.download("/blocked.mp3")
    assert r.status == 409
    assert r.json()["error"] == {".tag": "path", "path": {".tag": "restricted_content"}}
