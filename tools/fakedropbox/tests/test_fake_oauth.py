"""OAuth 2 PKCE flow, refresh, invalid_grant, revoke, token lifetime."""

import base64
import hashlib
import re
import secrets
import time
import urllib.parse


def pkce():
    verifier = "".join(secrets.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
                       for _ in range(128))
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def authorize(fd, challenge, **extra):
    q = {"client_id": "fakeappkey", "response_type": "code", "token_access_type": "offline",
         "code_challenge": challenge, "code_challenge_method": "S256"}
    q.update(extra)
    return fd.request("GET", "/oauth2/authorize?" + urllib.parse.urlencode(q))


def token(fd, **form):
    return fd.request("POST", "/oauth2/token", urllib.parse.urlencode(form).encode(),
                      {"Content-Type": "application/x-www-form-urlencoded"})


def get_code(fd, challenge, **extra):
    r = authorize(fd, challenge, **extra)
    assert r.status == 200
    m = re.search(r'<code id="auth-code">([^<]+)</code>', r.text)
    assert m
    return m.group(1)


def test_full_pkce_flow_and_refresh(fd):
    verifier, challenge = pkce()
    code = get_code(fd, challenge)
    r = token(fd, grant_type="authorization_code", code=code, client_id="fakeappkey", code_verifier=verifier)
    assert r.status == 200 and r.headers["content-type"] == "application/json"
    t = r.json()
    assert t["access_token"].startswith("sl.") and t["token_type"] == "bearer"
    assert t["expires_in"] == 14400 and t["refresh_token"]
    assert set(t["scope"].split()) == {"account_info.read", "files.metadata.read", "files.content.read"}
    acc = fd.rpc("users/get_current_account", None, token=t["access_token"]).json()
    assert t["account_id"] == acc["account_id"] and len(acc["account_id"]) == 40 and t["uid"]
    # code is single use
    r = token(fd, grant_type="authorization_code", code=code, client_id="fakeappkey", code_verifier=verifier)
    assert r.status == 400 and r.json()["error"] == "invalid_grant"
    # refresh: new access token, no new refresh token
    r = token(fd, grant_type="refresh_token", refresh_token=t["refresh_token"], client_id="fakeappkey")
    assert r.status == 200
    n = r.json()
    assert set(n) == {"access_token", "token_type", "expires_in"}
    assert n["access_token"] != t["access_token"]
    assert fd.rpc("files/list_folder", {"path": ""}, token=n["access_token"]).status == 200


def test_wrong_verifier_and_client(fd):
    verifier, challenge = pkce()
    code = get_code(fd, challenge)
    r = token(fd, grant_type="authorization_code", code=code, client_id="fakeappkey", code_verifier="x" * 64)
    assert r.status == 400 and r.json()["error"] == "invalid_grant"
    code = get_code(fd, challenge)
    r = token(fd, grant_type="authorization_code", code=code, client_id="other", code_verifier=verifier)
    assert r.status == 400 and r.json()["error"] == "invalid_client"
    r = token(fd, grant_type="password", client_id="fakeappkey")
    assert r.status == 400 and r.json()["error"] == "unsupported_grant_type"


def test_authorize_validation(fd):
    _, challenge = pkce()
    assert authorize(fd, challenge, client_id="wrong").status == 400
    assert authorize(fd, challenge, response_type="token").status == 400
    assert authorize(fd, challenge, code_challenge_method="plain").status == 400
    assert authorize(fd, "").status == 400


def test_redirect_uri(fd):
    verifier, challenge = pkce()
    r = authorize(fd, challenge, redirect_uri="http://127.0.0.1:9/cb", state="xyz")
    assert r.status == 302
    loc = urllib.parse.urlsplit(r.headers["location"])
    q = urllib.parse.parse_qs(loc.query)
    assert loc.path == "/cb" and q["state"] == ["xyz"]
    code = q["code"][0]
    r = token(fd, grant_type="authorization_code", code=code, client_id="fakeappkey",
              code_verifier=verifier, redirect_uri="http://127.0.0.1:9/cb")
    assert r.status == 200


def test_invalid_and_revoked_refresh_token(fd):
    r = token(fd, grant_type="refresh_token", refresh_token="bogus", client_id="fakeappkey")
    assert r.status == 400
    assert r.json() == {"error": "invalid_grant", "error_description": "refresh token is invalid or revoked"}
    verifier, challenge = pkce()
    t = token(fd, grant_type="authorization_code", code=get_code(fd, challenge), client_id="fakeappkey",
              code_verifier=verifier).json()
    fd.revoke_refresh_tokens()
    r = token(fd, grant_type="refresh_token", refresh_token=t["refresh_token"], client_id="fakeappkey")
    assert r.status == 400 and r.json()["error"] == "invalid_grant"


def test_issued_tokens_expire(fd):
    fd.config(access_token_ttl=1)
    verifier, challenge = pkce()
    t = token(fd, grant_type="authorization_code", code=get_code(fd, challenge), client_id="fakeappkey",
              code_verifier=verifier).json()
    assert t["expires_in"] == 1
    assert fd.rpc("files/list_folder", {"path": ""}, token=t["access_token"]).status == 200
    time.sleep(1.1)
    r = fd.rpc("files/list_folder", {"path": ""}, token=t["access_token"])
    assert r.status == 401 and r.json()["error"][".tag"] == "expired_access_token"


def test_scoped_grant(fd):
    verifier, challenge = pkce()
    code = get_code(fd, challenge, scope="account_info.read files.metadata.read")
    t = token(fd, grant_type="authorization_code", code=code, client_id="fakeappkey",
              code_verifier=verifier).json()
    assert fd.rpc("files/list_folder", {"path": ""}, token=t["access_token"]).status == 200
    r = fd.download("/x", token=t["access_token"])
    assert r.status == 401 and r.json()["error"] == {".tag": "missing_scope", "required_scope": "files.content.read"}


def test_online_access_has_no_refresh_token(fd):
    verifier, challenge = pkce()
    code = get_code(fd, challenge, token_access_type="online")
    t = token(fd, grant_type="authorization_code", code=code, client_id="fakeappkey",
              code_verifier=verifier).json()
    assert "refresh_token" not in t


def test_token_revoke(fd):
    verifier, challenge = pkce()
    t = token(fd, grant_type="authorization_code", code=get_code(fd, challenge), client_id="fakeappkey",
              code_verifier=verifier).json()
    r = fd.rpc("auth/token/revoke", None, token=t["access_token"])
    assert r.status == 200 and r.body == b"null"
    assert fd.rpc("files/list_folder", {"path": ""}, token=t["access_token"]).status == 401
    r = token(fd, grant_type="refresh_token", refresh_token=t["refresh_token"], client_id="fakeappkey")
    assert r.json()["error"] == "invalid_grant"


def test_cli_tokens_and_app_key(start):
    f = start("--quiet", "--token", "a1", "--token", "a2", "--app-key", "mykey")
    assert f.rpc("files/list_folder", {"path": ""}, token="a1").status == 200
    assert f.rpc("files/list_folder", {"path": ""}, token="a2").status == 200
    assert f.rpc("files/list_folder", {"path": ""}, token="test-token").status == 401
    _, challenge = pkce()
    assert authorize(f, challenge).status == 400
    assert authorize(f, challenge, client_id="mykey").status == 200
