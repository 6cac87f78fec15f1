"""Access tokens, refresh tokens and the OAuth 2 PKCE endpoints.

Exists to emulate docs/DROPBOX-API.md, "OAuth 2 with PKCE": /oauth2/authorize
(approves at once), /oauth2/token (authorization_code with S256 PKCE,
refresh_token), token expiry and scopes, and auth/token/revoke.  Has its own
small lock (``TokenStore.lock``), independent of the tree lock.
"""

import base64
import hashlib
import html
import secrets
import threading
import time
import urllib.parse

from .httpio import JSON_CT, Reply, dumps

ALL_SCOPES = ("account_info.read", "files.metadata.read", "files.content.read")


class Token:
    __slots__ = ("expires", "scopes", "grant", "account")

    def __init__(self, expires=None, scopes=None, grant=None, account="a"):
        self.expires, self.scopes, self.grant = expires, scopes, grant
        self.account = account      # the key of the account it signs in to (accounts.py)


class TokenStore:
    def __init__(self, tokens, app_key, ttl, account_id, uid):
        self.lock = threading.Lock()
        self.access = {t: Token() for t in tokens}
        self.refresh = {}      # refresh token -> {"scopes", "revoked"}
        self.codes = {}        # code -> dict
        self.app_key = app_key
        self.ttl = ttl
        self.account_id = account_id
        self.uid = uid

    def add(self, token, expires_in=None, scopes=None, account="a"):
        with self.lock:
            exp = None if expires_in is None else time.time() + float(expires_in)
            self.access[token] = Token(exp, None if scopes is None else frozenset(scopes),
                                       account=account)

    def account_of(self, token):
        """The key of the account `token` signs in to ("a" for an unknown one)."""
        with self.lock:
            t = self.access.get(token)
            return "a" if t is None else t.account

    def check(self, token, scope):
        """None if ok, else (tag, extra fields) for a 401."""
        with self.lock:
            t = self.access.get(token)
            if t is None:
                return "invalid_access_token", {}
            if t.expires is not None and time.time() >= t.expires:
                return "expired_access_token", {}
            if scope and t.scopes is not None and scope not in t.scopes:
                return "missing_scope", {"required_scope": scope}
            return None

    def revoke(self, token):
        """auth/token/revoke: the token, its refresh token and its siblings."""
        with self.lock:
            t = self.access.pop(token, None)
            if t is not None and t.grant is not None:
                g = self.refresh.get(t.grant)
                if g is not None:
                    g["revoked"] = True
                for k in [k for k, v in self.access.items() if v.grant == t.grant]:
                    del self.access[k]

    def revoke_all_refresh(self):
        with self.lock:
            for g in self.refresh.values():
                g["revoked"] = True

    def _issue(self, scopes, grant):
        tok = "sl." + secrets.token_urlsafe(48)
        self.access[tok] = Token(time.time() + self.ttl, frozenset(scopes), grant)
        return tok

    # ---- HTTP endpoints --------------------------------------------------------
    def authorize(self, query):
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(query, keep_blank_values=True).items()}
        problem = None
        if q.get("client_id") != self.app_key:
            problem = "Invalid client_id: %r" % q.get("client_id")
        elif q.get("response_type") != "code":
            problem = "Unsupported response_type (expected 'code')"
        elif not q.get("code_challenge"):
            problem = "Missing code_challenge (PKCE is required)"
        elif q.get("code_challenge_method", "plain") != "S256":
            problem = "Unsupported code_challenge_method (expected 'S256')"
        elif q.get("token_access_type", "offline") not in ("offline", "online", "legacy"):
            problem = "Invalid token_access_type"
        if problem:
            page = "<!doctype html><html><body><h1>Error (400)</h1><p>%s</p></body></html>" % html.escape(problem)
            return Reply(400, [("Content-Type", "text/html; charset=utf-8")], page.encode())
        scopes = q.get("scope", "").split() or list(ALL_SCOPES)
        bad = [s for s in scopes if s not in ALL_SCOPES]
        if bad:
            page = "<!doctype html><html><body><h1>Error (400)</h1><p>Invalid scope %s</p></body></html>" % html.escape(" ".join(bad))
            return Reply(400, [("Content-Type", "text/html; charset=utf-8")], page.encode())
        if q.get("include_granted_scopes") == "user":
            scopes = list(ALL_SCOPES)
        code = secrets.token_urlsafe(32)
        with self.lock:
            self.codes[code] = {"challenge": q["code_challenge"], "client_id": q["client_id"],
                                "redirect_uri": q.get("redirect_uri"), "scopes": scopes,
                                "offline": q.get("token_access_type", "offline") != "online",
                                "expires": time.time() + 600}
        if q.get("redirect_uri"):
            params = {"code": code}
            if "state" in q:
                params["state"] = q["state"]
            sep = "&" if "?" in q["redirect_uri"] else "?"
            loc = q["redirect_uri"] + sep + urllib.parse.urlencode(params)
            return Reply(302, [("Location", loc), ("Content-Type", "text/html; charset=utf-8")],
                         b"<html><body>Redirecting</body></html>")
        page = ("<!doctype html><html><head><title>API Request Authorization - fakedropbox</title></head>"
                "<body><h1>fakedropbox</h1><p>Enter this code into your app:</p>"
                '<code id="auth-code">%s</code></body></html>' % html.escape(code))
        return Reply(200, [("Content-Type", "text/html; charset=utf-8")], page.encode())

    @staticmethod
    def _oauth_error(err, desc, status=400):
        return Reply(status, [("Content-Type", JSON_CT)],
                     dumps({"error": err, "error_description": desc}))

    def token(self, form, basic_client_id=None):
        """/oauth2/token with a parsed form dict."""
        grant_type = form.get("grant_type")
        client_id = form.get("client_id") or basic_client_id
        if grant_type not in ("authorization_code", "refresh_token"):
            return self._oauth_error("unsupported_grant_type",
                                     "grant_type must be authorization_code or refresh_token")
        if client_id != self.app_key:
            return self._oauth_error("invalid_client", "Invalid client_id or client_secret")
        if grant_type == "authorization_code":
            code = form.get("code")
            verifier = form.get("code_verifier")
            if not code:
                return self._oauth_error("invalid_request", "No code provided")
            with self.lock:
                c = self.codes.pop(code, None)  # single use, even on failure
                if c is None or time.time() > c["expires"]:
                    return self._oauth_error("invalid_grant", "code doesn't exist or has expired")
                if c["redirect_uri"] and form.get("redirect_uri") != c["redirect_uri"]:
                    return self._oauth_error("invalid_grant", "redirect_uri mismatch")
                if not verifier:
                    return self._oauth_error("invalid_request", "No code_verifier provided")
                want = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
                if want != c["challenge"]:
                    return self._oauth_error("invalid_grant", "invalid code verifier")
                grant = None
                body = {"token_type": "bearer", "expires_in": int(self.ttl),
                        "scope": " ".join(c["scopes"]), "account_id": self.account_id,
                        "uid": self.uid}
                if c["offline"]:
                    grant = secrets.token_urlsafe(48)
                    self.refresh[grant] = {"scopes": c["scopes"], "revoked": False}
                    body["refresh_token"] = grant
                body["access_token"] = self._issue(c["scopes"], grant)
            return Reply(200, [("Content-Type", JSON_CT)], dumps(body))
        rt = form.get("refresh_token")
        with self.lock:
            g = self.refresh.get(rt or "")
            if g is None or g["revoked"]:
                return self._oauth_error("invalid_grant", "refresh token is invalid or revoked")
            scopes = g["scopes"]
            if form.get("scope"):
                want = form["scope"].split()
                if any(s not in scopes for s in want):
                    return self._oauth_error("invalid_scope", "scope not granted")
                scopes = want
            body = {"access_token": self._issue(scopes, rt), "token_type": "bearer",
                    "expires_in": int(self.ttl)}
        return Reply(200, [("Content-Type", JSON_CT)], dumps(body))
