"""Two accounts on one server (--second-account): a token signs in to one account, and each
account has its own identity, tree, cursors and contents. Without the flag: one account, as ever."""

import json
import subprocess
import sys

import pytest

from fakedropbox.client import ControlError, FakeDropbox, PKG_PARENT


@pytest.fixture
def two():
    with FakeDropbox.start("--sample-account", "--second-account", "--quiet") as f:
        yield f, f.as_account("b")


def account_id(fd, token):
    r = fd.rpc("users/get_current_account", None, token=token)
    assert r.status == 200, r
    return r.json()


def names(fd, token, path=""):
    entries, _ = fd.list_all(path, recursive=True, token=token)
    return sorted(e["path_lower"] for e in entries)


def test_single_account_by_default(fd):
    assert set(fd.info()) == {"instance", "account_id", "root_namespace_id", "home_namespace_id", "team"}
    assert fd.rpc("users/get_current_account", None, token="test-token-b").status == 401
    with pytest.raises(ControlError) as e:
        fd.as_account("b").info()
    assert e.value.status == 400 and "no account 'b'" in e.value.body


def test_each_token_signs_in_to_its_account(two):
    a, b = two
    acc_a, acc_b = account_id(a, "test-token"), account_id(a, "test-token-b")
    assert acc_a["account_id"] == a.info()["account_id"]
    assert acc_b["account_id"] == b.info()["account_id"]
    assert acc_a["account_id"] != acc_b["account_id"] and len(acc_b["account_id"]) == 40
    assert acc_a["email"] != acc_b["email"]
    assert acc_a["root_info"]["root_namespace_id"] != acc_b["root_info"]["root_namespace_id"]
    assert b.info()["accounts"] == ["a", "b"] and b.info()["account"] == "b"


def test_each_account_has_its_own_tree_and_contents(two):
    a, b = two
    assert names(a, "test-token-b") == []                 # b starts empty
    b.add_file("/only-b.txt", b"bytes of b")
    b.add_file("/Documents/shared-name.txt", b"b's version")
    a.add_file("/Documents/shared-name.txt", b"a's version")
    assert names(a, "test-token-b") == ["/documents", "/documents/shared-name.txt", "/only-b.txt"]
    assert "/only-b.txt" not in names(a, "test-token")
    assert a.download("/Documents/shared-name.txt", token="test-token").body == b"a's version"
    assert a.download("/Documents/shared-name.txt", token="test-token-b").body == b"b's version"
    assert a.download("/only-b.txt", token="test-token").status == 409
    assert b.content("/only-b.txt") == b"bytes of b"
    assert {e["path_lower"] for e in b.tree()} == {"/documents", "/documents/shared-name.txt", "/only-b.txt"}


def test_a_cursor_of_one_account_is_reset_in_the_other(two):
    a, b = two
    _, cursor_a = a.list_all("", token="test-token")
    r = a.rpc("files/list_folder/continue", {"cursor": cursor_a}, token="test-token-b")
    assert r.status == 409 and r.json()["error"][".tag"] == "reset"
    r = a.rpc("files/list_folder/continue", {"cursor": cursor_a}, token="test-token")
    assert r.status == 200


def test_longpoll_follows_the_cursor_s_account(two):
    a, b = two
    b.add_file("/first.txt", b"1")
    _, cursor_b = a.list_all("", token="test-token-b")
    a.add_file("/change-in-a.txt", b"a")                  # not b's change
    r = a.rpc("files/list_folder/longpoll", {"cursor": cursor_b, "timeout": 1}, token=None)
    assert r.status == 200 and r.json()["changes"] is False
    b.add_file("/change-in-b.txt", b"b")
    r = a.rpc("files/list_folder/longpoll", {"cursor": cursor_b, "timeout": 30}, token=None)
    assert r.status == 200 and r.json()["changes"] is True
    r = a.rpc("files/list_folder/continue", {"cursor": cursor_b}, token="test-token-b")
    assert [e["path_lower"] for e in r.json()["entries"]] == ["/change-in-b.txt"]


def test_tokens_added_for_an_account_and_second_token(start):
    f = start("--second-account", "--second-token", "tok-b1", "--second-token", "tok-b2", "--quiet")
    b = f.as_account("b")
    b.add_token("tok-b3")
    f.add_token("tok-a2")
    ids = {t: account_id(f, t)["account_id"] for t in ("tok-b1", "tok-b2", "tok-b3", "tok-a2", "test-token")}
    assert ids["tok-b1"] == ids["tok-b2"] == ids["tok-b3"] == b.info()["account_id"]
    assert ids["tok-a2"] == ids["test-token"] == f.info()["account_id"]
    assert f.rpc("users/get_current_account", None, token="test-token-b").status == 401


def test_second_token_needs_second_account():
    r = subprocess.run([sys.executable, "-m", "fakedropbox", "--second-token", "x"], cwd=PKG_PARENT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--second-token goes with --second-account" in r.stderr
