"""Error shapes, statuses and headers (docs/DROPBOX-API.md, "Hosts and request
styles", "Errors")."""

import json
import re


def _common_headers(r):
    assert re.fullmatch(r"[0-9a-f]{32}", r.headers["x-dropbox-request-id"])
    assert r.headers["date"].endswith(" GMT")


def test_success_headers(sample):
    r = sample.rpc("files/list_folder", {"path": ""})
    assert r.status == 200
    assert r.headers["content-type"] == "application/json"
    _common_headers(r)


def test_missing_authorization_is_plain_400(sample):
    r = sample.rpc("files/list_folder", {"path": ""}, token=None)
    assert r.status == 400
    assert r.headers["content-type"].startswith("text/plain")
    assert r.text.startswith('Error in call to API function "files/list_folder": ')
    assert "Authorization" in r.text
    _common_headers(r)


def test_malformed_authorization_is_plain_400(sample):
    for value in ("Basic abc", "Bearer", "bearer", "Token x", "Bearer a b"):
        r = sample.rpc("files/list_folder", {"path": ""}, token=None,
                       headers={"Authorization": value})
        assert r.status == 400, value
        assert r.headers["content-type"].startswith("text/plain")
        assert 'Invalid authorization value in HTTP header "Authorization"' in r.text


def test_unknown_token_is_json_401(sample):
    r = sample.rpc("files/list_folder", {"path": ""}, token="nope")
    assert r.status == 401
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["error"] == {".tag": "invalid_access_token"}
    assert body["error_summary"].startswith("invalid_access_token/")
    _common_headers(r)


def test_expired_token_401(fd):
    import time
    fd.add_token("short", expires_in=1.5)
    assert fd.rpc("files/list_folder", {"path": ""}, token="short").status == 200
    time.sleep(1.6)
    r = fd.rpc("files/list_folder", {"path": ""}, token="short")
    assert r.status == 401
    assert r.json()["error"] == {".tag": "expired_access_token"}
    assert r.json()["error_summary"].startswith("expired_access_token/")


def test_missing_scope_401(fd):
    fd.add_token("meta", scopes=["files.metadata.read"])
    assert fd.rpc("files/list_folder", {"path": ""}, token="meta").status == 200
    r = fd.download("/x", token="meta")
    assert r.status == 401
    assert r.json()["error"] == {".tag": "missing_scope", "required_scope": "files.content.read"}
    assert r.json()["error_summary"].startswith("missing_scope/")
    r = fd.rpc("users/get_current_account", None, token="meta")
    assert r.json()["error"]["required_scope"] == "account_info.read"


def test_not_found_409(sample):
    r = sample.rpc("files/get_metadata", {"path": "/does/not/exist"})
    assert r.status == 409
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"error_summary": "path/not_found/..",
                        "error": {".tag": "path", "path": {".tag": "not_found"}}}
    _common_headers(r)


def test_not_folder_and_not_file(sample):
    r = sample.rpc("files/list_folder", {"path": "/Documents/Welcome.txt"})
    assert r.status == 409 and r.json()["error"]["path"] == {".tag": "not_folder"}
    r = sample.download("/Documents")
    assert r.status == 409 and r.json()["error"]["path"] == {".tag": "not_file"}


def test_slash_root_rejected_in_list_folder(sample):
    r = sample.rpc("files/list_folder", {"path": "/"})
    assert r.status == 400
    assert r.headers["content-type"].startswith("text/plain")
    assert "empty string" in r.text


def test_get_metadata_root_rejected(sample):
    for p in ("", "/"):
        r = sample.rpc("files/get_metadata", {"path": p})
        assert r.status == 400, p
        assert "The root folder is unsupported." in r.text


def test_bad_path_pattern_400(sample):
    r = sample.rpc("files/list_folder", {"path": "Documents"})
    assert r.status == 400 and "did not match pattern" in r.text


def test_rpc_content_type_checks(sample):
    h = {"Authorization": "Bearer test-token", "Content-Type": "application/x-www-form-urlencoded"}
    r = sample.request("POST", "/2/files/list_folder", b'{"path":""}', h)
    assert r.status == 400 and 'Bad HTTP "Content-Type" header' in r.text
    h["Content-Type"] = "application/json"
    r = sample.request("POST", "/2/users/get_current_account", b"", h)
    assert r.status == 400 and "could not decode input as JSON" in r.text
    r = sample.request("POST", "/2/files/list_folder", b"{not json", h)
    assert r.status == 400 and "could not decode input as JSON" in r.text
    h["Content-Type"] = "application/json; charset=utf-8"
    assert sample.request("POST", "/2/users/get_space_usage", b"null", h).status == 200


def test_void_route_without_body_or_content_type(sample):
    r = sample.request("POST", "/2/users/get_current_account", b"",
                       {"Authorization": "Bearer test-token"})
    assert r.status == 200 and r.headers["content-type"] == "application/json"


def test_void_route_rejects_non_null(sample):
    r = sample.rpc("users/get_space_usage", {})
    assert r.status == 400 and r.headers["content-type"].startswith("text/plain")


def test_non_ascii_api_arg_header_400(sample):
    raw = '{"path": "/Documents/Café ☕.txt"}'.encode("utf-8")
    r = sample.request("POST", "/2/files/download", b"",
                       {"Authorization": "Bearer test-token", "Dropbox-API-Arg": raw})
    assert r.status == 400
    assert 'HTTP header "Dropbox-API-Arg": could not decode input as JSON' in r.text
    # The escaped form works.
    r = sample.request("POST", "/2/files/download", b"",
                       {"Authorization": "Bearer test-token",
                        "Dropbox-API-Arg": json.dumps({"path": "/Documents/Café ☕.txt"})})
    assert r.status == 200 and r.body == "Un café, s'il vous plaît.\n".encode()


def test_download_content_type_rules(sample):
    base = {"Authorization": "Bearer test-token", "Dropbox-API-Arg": '{"path":"/Documents/Welcome.txt"}'}
    for ct, ok in (("application/octet-stream", True), ("application/x-www-form-urlencoded", False),
                   ("application/json", False)):
        r = sample.request("POST", "/2/files/download", b"", dict(base, **{"Content-Type": ct}))
        assert (r.status == 200) == ok, ct
        if not ok:
            assert r.status == 400 and r.headers["content-type"].startswith("text/plain")


def test_missing_api_arg(sample):
    r = sample.request("POST", "/2/files/download", b"", {"Authorization": "Bearer test-token"})
    assert r.status == 400 and "Dropbox-API-Arg" in r.text


def test_longpoll_with_authorization_400(sample):
    cur = sample.rpc("files/list_folder/get_latest_cursor", {"path": ""}).json()["cursor"]
    r = sample.rpc("files/list_folder/longpoll", {"cursor": cur, "timeout": 1})
    assert r.status == 400
    assert "Your request includes an Authorization header, but this function does not use it." in r.text
    r = sample.rpc("files/list_folder/longpoll", {"cursor": cur, "timeout": 1}, token=None)
    assert r.status == 200 and r.json() == {"changes": False}


def test_path_root_header(sample):
    info = sample.info()
    ok = [json.dumps({".tag": "home"}),
          json.dumps({".tag": "root", "root": info["root_namespace_id"]}),
          json.dumps({".tag": "namespace_id", "namespace_id": info["home_namespace_id"]})]
    for v in ok:
        r = sample.rpc("files/list_folder", {"path": ""}, headers={"Dropbox-API-Path-Root": v})
        assert r.status == 200, v
    r = sample.rpc("files/list_folder", {"path": ""},
                   headers={"Dropbox-API-Path-Root": json.dumps({".tag": "root", "root": "999"})})
    assert r.status == 422
    assert r.headers["content-type"] == "application/json"
    err = r.json()["error"]
    assert err[".tag"] == "invalid_root"
    assert err["invalid_root"]["root_namespace_id"] == info["root_namespace_id"]
    r = sample.rpc("files/list_folder", {"path": ""},
                   headers={"Dropbox-API-Path-Root": json.dumps({".tag": "namespace_id", "namespace_id": "42"})})
    assert r.status == 422 and r.json()["error"] == {".tag": "no_permission"}
    r = sample.rpc("files/list_folder", {"path": ""}, headers={"Dropbox-API-Path-Root": "{bad"})
    assert r.status == 400


def test_bad_args_are_400(sample):
    for arg in ({"path": "", "limit": 0}, {"path": "", "limit": 2001}, {"path": "", "recursive": "yes"},
                {}, {"path": 5}):
        r = sample.rpc("files/list_folder", arg)
        assert r.status == 400, arg
        assert r.text.startswith('Error in call to API function "files/list_folder": request body: ')
    r = sample.rpc("files/list_folder/continue", {"cursor": "garbage"})
    assert r.status == 400 and "cursor" in r.text


def test_unknown_fields_ignored(sample):
    r = sample.rpc("files/list_folder", {"path": "", "include_restorable_info": False, "zzz_future": 1})
    assert r.status == 200


def test_unknown_route_and_method(sample):
    assert sample.rpc("files/nope", {}).status == 404
    r = sample.request("GET", "/2/files/list_folder", None, {"Authorization": "Bearer test-token"})
    assert r.status == 405
    assert "x-dropbox-request-id" in r.headers and "date" in r.headers


def test_control_errors(fd):
    from fakedropbox.client import ControlError
    import pytest
    with pytest.raises(ControlError) as e:
        fd.delete("/missing")
    assert e.value.status == 409
    with pytest.raises(ControlError) as e:
        fd.add_fault("*", "bogus")
    assert e.value.status == 400
