"""Sign-in and credentials: `dropboxfs auth` (OAuth 2 + PKCE, code pasted on stdin), the
stored refresh token (folder 0700, file 0600, never wider for an instant), mounting with it,
refreshing access tokens (early with a short lifetime; exactly once for many requests rejected
together), a revoked sign-in, a missing scope, `dropboxfs status`, `dropboxfs auth --sign-out`, and
that no token ever appears in any output.

The fake's /_control/stats count only /2/ API requests, so the /oauth2/token requests (code
exchanges and refresh grants) are counted by `RecordingProxy`, a small HTTP proxy between the
product and the fake that also records which access token each API request carried and every token
the fake issued. To make the access token a running mount holds expire server-side, the test reads
it from the proxy and re-registers it at the fake with `expires_in: 0` (POST /_control/tokens), so
the fake itself answers 401 expired_access_token for it.
"""

import html
import http.client
import http.server
import json
import os
import re
import shutil
import stat
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import Mount, unmount_all
from helpers import (closed_port, env_for, expected_entries, is_mounted, run, wait_for_fill,
                     unmount, wait_until)

APP_KEY = "fakeappkey"
ACCOUNT_NAME = "Franz Ferdinand (Personal)"
ACCOUNT_EMAIL = "franz@example.com"
# The fake issues access tokens as "sl." + secrets.token_urlsafe(48) (fakedropbox/oauth.py).
ACCESS_TOKEN_RE = re.compile(rb"sl\.[A-Za-z0-9_\-]{8,}")
AUTH_CODE_RE = re.compile(r'<code id="auth-code">([^<]+)</code>')
AUTHORIZE_URL_RE = re.compile(r"https?://\S*/oauth2/authorize\S*")


# ---- a recording proxy in front of the fake -------------------------------------------------------

_HOP_HEADERS = {"host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "expect",
                "content-length", "te", "upgrade"}


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self._forward()

    def do_POST(self):
        self._forward()

    def _forward(self):
        proxy = self.server.proxy
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS]
        conn = http.client.HTTPConnection("127.0.0.1", proxy.target_port, timeout=600)
        try:
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            conn.putheader("Host", f"127.0.0.1:{proxy.target_port}")
            for k, v in headers:
                conn.putheader(k, v)
            if self.command == "POST" or body:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body if body else None)
            resp = conn.getresponse()
            data = resp.read()
        except OSError:
            self.close_connection = True
            return
        finally:
            conn.close()
        proxy.record(self.command, self.path, self.headers.get("Authorization"), body, resp.status, data)
        self.send_response_only(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in _HOP_HEADERS:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:
            self.close_connection = True


class RecordingProxy:
    """Forwards every request to the fake and records: each API request's route, bearer token and
    status; each /oauth2/token request's grant type and status; every token the fake issued."""

    def __init__(self, fake):
        self.fake = fake
        self.target_port = fake.port
        self.lock = threading.Lock()
        self.api = []       # (route, token or None, status)
        self.grants = []    # (grant_type, status)
        self.issued = set()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ProxyHandler)
        self.server.daemon_threads = True
        self.server.proxy = self
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def record(self, method, path, authorization, body, status, data):
        route = urllib.parse.urlsplit(path).path
        with self.lock:
            if route.startswith("/2/"):
                token = None
                if authorization and authorization.startswith("Bearer "):
                    token = authorization[len("Bearer "):]
                self.api.append((route[3:], token, status))
            elif route == "/oauth2/token":
                form = {k: v[-1] for k, v in urllib.parse.parse_qs(body.decode("utf-8", "replace")).items()}
                self.grants.append((form.get("grant_type"), status))
                if status == 200:
                    reply = json.loads(data)
                    for key in ("access_token", "refresh_token"):
                        if reply.get(key):
                            self.issued.add(reply[key])

    def refreshes(self, status=200):
        """Refresh grants answered with `status` (None: all of them)."""
        with self.lock:
            return sum(1 for g, s in self.grants if g == "refresh_token" and (status is None or s == status))

    def api_requests(self):
        with self.lock:
            return list(self.api)

    def tokens_used(self, since=0):
        """Access tokens sent on API requests (from the `since`-th on), in first-use order."""
        seen = []
        for _, token, _ in self.api_requests()[since:]:
            if token and token not in seen:
                seen.append(token)
        return seen

    def expire_used_tokens(self):
        """Makes every access token the product has used so far expire at the fake (it then
        answers 401 expired_access_token for them). Returns them."""
        tokens = self.tokens_used()
        for token in tokens:
            self.fake.add_token(token, expires_in=0)
        return tokens

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy_factory():
    proxies = []

    def start(fake):
        p = RecordingProxy(fake)
        proxies.append(p)
        return p

    yield start
    for p in proxies:
        p.close()


# ---- running the command line ---------------------------------------------------------------------

class Home:
    """A private HOME / XDG_CONFIG_HOME / XDG_CACHE_HOME for one simulated user."""

    def __init__(self, root, config=None):
        self.root = Path(root)
        self.home = self.root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.config = Path(config) if config is not None else self.root / "config"
        self.cache = self.root / "cache"

    @property
    def folder(self):
        return self.config / "dropboxfs"

    @property
    def credentials(self):
        return self.folder / "credentials.json"

    def env(self, target, token=None, extra=None):
        """Environment for the CLI: every endpoint at `target` (fake, proxy or URL), no app key,
        and DROPBOXFS_ACCESS_TOKEN only when `token` is given."""
        url = target if isinstance(target, str) else target.url
        env = env_for(url, token=token, extra={
            "HOME": str(self.home), "XDG_CONFIG_HOME": str(self.config), "XDG_CACHE_HOME": str(self.cache),
            "LC_ALL": "C", "LANG": "C", **(extra or {})})
        env.pop("DROPBOXFS_APP_KEY", None)
        return env

    def stored(self):
        return json.loads(self.credentials.read_text())


@pytest.fixture
def home(tmp_path):
    return Home(tmp_path / "user")


class SignIn:
    def __init__(self, returncode, stdout, stderr, code, url):
        self.returncode, self.stdout, self.stderr, self.code, self.url = returncode, stdout, stderr, code, url

    @property
    def out(self):
        return self.stdout.decode(errors="replace")

    @property
    def err(self):
        return self.stderr.decode(errors="replace")

    def __repr__(self):
        return f"<auth rc={self.returncode} stdout={self.out!r} stderr={self.err!r}>"


def fetch_code(url):
    """Opens the authorize page (the fake approves at once) and returns the code it shows."""
    with urllib.request.urlopen(url, timeout=10) as r:
        page = r.read().decode()
    m = AUTH_CODE_RE.search(page)
    assert m, f"no auth code on the authorize page: {page[:300]!r}"
    return html.unescape(m.group(1))


def sign_in(binary, env, paste=None, app_key=APP_KEY, umask=-1, timeout=30, extra_args=()):
    """`dropboxfs auth --app-key KEY [extra_args]` scripted: reads stdout up to the authorize
    address, opens it, and writes the code shown there (or `paste(code)`) plus a newline to stdin.
    No terminal: stdin is a pipe and the process has its own session (no controlling terminal)."""
    args = [binary, "auth"] + (["--app-key", app_key] if app_key else []) + list(extra_args)
    p = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         bufsize=0, start_new_session=True, umask=umask)
    killer = threading.Timer(timeout, p.kill)
    killer.start()
    try:
        head = b""
        url = None
        while url is None:
            line = p.stdout.readline()
            if not line:
                break
            head += line
            m = AUTHORIZE_URL_RE.search(line.decode(errors="replace"))
            if m:
                url = m.group(0)
        if url is None:
            out, err = p.communicate()
            return SignIn(p.returncode, head + out, err, None, None)
        code = fetch_code(url)
        text = code if paste is None else paste(code)
        out, err = p.communicate(input=text.encode() + b"\n")
        return SignIn(p.returncode, head + out, err, code, url)
    finally:
        killer.cancel()


def signed_in(binary, home, target):
    r = sign_in(binary, home.env(target))
    assert r.returncode == 0, r
    assert home.credentials.exists(), r
    return r


def cli(binary, home, target, *args, token=None, extra=None, timeout=60):
    return run(binary, *args, env=home.env(target, token=token, extra=extra), timeout=timeout)


def refresh_grant(fake, refresh_token):
    """POST /oauth2/token grant_type=refresh_token directly at the fake: (status, JSON reply)."""
    form = urllib.parse.urlencode({"grant_type": "refresh_token", "refresh_token": refresh_token,
                                   "client_id": APP_KEY}).encode()
    req = urllib.request.Request(fake.url + "/oauth2/token", data=form, method="POST",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def mode_of(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


# ---- mounts with the stored sign-in ---------------------------------------------------------------

@pytest.fixture
def auth_mounts(binary, tmp_path):
    """Foreground mounts run with a Home's environment (by default no DROPBOXFS_ACCESS_TOKEN, so
    the stored sign-in is used). Unmounted at teardown; `[error]` lines fail the test unless
    listed in `allowed_log`."""
    mounts = []

    def start(home, target, *args, token=None, allowed_log=()):
        index = len(mounts)
        mountpoint = tmp_path / f"amnt{index}"
        mountpoint.mkdir()
        extra = {"HOME": str(home.home), "XDG_CONFIG_HOME": str(home.config),
                 "XDG_CACHE_HOME": str(home.cache)}
        url = target if isinstance(target, str) else target.url
        m = Mount(binary, url, mountpoint, args, extra, tmp_path / f"adaemon{index}.log", token=token)
        m.allowed_log = allowed_log
        mounts.append(m)
        return m

    yield start
    unmount_all(mounts)


def visible_tree(fake):
    return expected_entries(fake.tree())


def children(entries, rel):
    """Names (bytes) of the entries directly inside folder `rel`."""
    prefix = rel + b"/" if rel else b""
    return {r[len(prefix):] for r in entries if r and r.startswith(prefix) and b"/" not in r[len(prefix):]}


def independent_folders(entries, count):
    """`count` folders none of which is inside another, and the set of their ancestors (which the
    test lists first, so that opening a target costs exactly one listing of the target)."""
    targets, ancestors = [], set()
    for rel in sorted(r for r, e in entries.items() if e.kind == "d" and r):
        parts = rel.split(b"/")
        chain = {b"/".join(parts[:i]) for i in range(1, len(parts))}
        if rel in ancestors or chain & set(targets):
            continue
        targets.append(rel)
        ancestors |= chain
        if len(targets) == count:
            break
    assert len(targets) == count, f"only {len(targets)} independent folders in the tree"
    return targets, sorted(ancestors, key=len)


def in_mount(mount, rel):
    """The path of `rel` (bytes) inside the mount, as a str that helpers.run passes through."""
    return os.fsdecode(os.path.join(os.fsencode(mount.path), rel))


def listdir(mount, rel):
    return set(os.listdir(os.path.join(os.fsencode(mount.path), rel)))


# ---- sign-in ----------------------------------------------------------------------------------------

class FolderObserver:
    """Polls a folder as fast as it can while a command runs; records every mode it saw for the
    folder and for each entry in it (temporary files included)."""

    def __init__(self, folder):
        self.folder = str(folder)
        self.stop = threading.Event()
        self.folder_modes = set()
        self.entries = {}   # name -> set of modes seen
        self.polls = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            self.polls += 1
            try:
                self.folder_modes.add(stat.S_IMODE(os.lstat(self.folder).st_mode))
                with os.scandir(self.folder) as it:
                    for entry in it:
                        try:
                            mode = stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode)
                        except FileNotFoundError:
                            continue
                        self.entries.setdefault(entry.name, set()).add(mode)
            except (FileNotFoundError, NotADirectoryError):
                pass

    def finish(self):
        self.stop.set()
        self.thread.join(10)

    def wide(self):
        """Everything seen readable, writable or searchable by group or others."""
        bad = [("<folder>", oct(m)) for m in self.folder_modes if m & 0o077]
        bad += [(name, oct(m)) for name, modes in self.entries.items() for m in modes if m & 0o077]
        return bad


def assert_private(home):
    assert mode_of(home.folder) == 0o700, f"{home.folder} has mode {oct(mode_of(home.folder))}"
    assert mode_of(home.credentials) == 0o600, f"{home.credentials} has mode {oct(mode_of(home.credentials))}"
    assert os.listdir(home.folder) == ["credentials.json"], f"left behind: {os.listdir(home.folder)}"


def test_sign_in_scripted_pkce_flow(binary, fake_factory, home):
    """The whole flow without a terminal: the address is printed, the code from the authorize page
    is read from stdin, the account is named, and the app key and a working refresh token are
    stored privately. The process runs with umask 000, so the modes come from the product itself."""
    fake = fake_factory("--sample-account")
    observer = FolderObserver(home.folder)
    try:
        r = sign_in(binary, home.env(fake), umask=0)
    finally:
        observer.finish()
    assert r.returncode == 0, r
    assert f"Signed in as {ACCOUNT_NAME} <{ACCOUNT_EMAIL}>" in r.out, r
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(r.url).query)
    assert q["client_id"] == [APP_KEY] and q["code_challenge_method"] == ["S256"], r.url
    assert q["token_access_type"] == ["offline"], r.url
    stored = home.stored()
    assert stored["app_key"] == APP_KEY, stored
    assert stored["refresh_token"], stored
    status, reply = refresh_grant(fake, stored["refresh_token"])
    assert status == 200 and reply["access_token"], (status, reply)
    assert_private(home)
    assert observer.polls > 10, "the observer did not run"
    assert not observer.wide(), f"group/others could read something during auth: {observer.wide()}"
    for name in observer.entries:
        assert name == "credentials.json" or re.fullmatch(r"\.credentials\.\d+\.tmp", name), \
            f"unexpected file {name!r} appeared in {home.folder}"


def test_sign_in_creates_missing_parent_folders_privately(binary, fake_factory, tmp_path):
    fake = fake_factory("--sample-account")
    home = Home(tmp_path / "user", config=tmp_path / "does" / "not" / "exist" / "config")
    observer = FolderObserver(home.folder)
    try:
        r = sign_in(binary, home.env(fake), umask=0)
    finally:
        observer.finish()
    assert r.returncode == 0, r
    assert_private(home)
    assert not observer.wide(), f"group/others could read something during auth: {observer.wide()}"


def test_sign_in_narrows_an_older_wider_folder(binary, fake_factory, home):
    """A dropboxfs folder left 0755 by an older version (with a world-readable credentials file)
    becomes 0700, and the new credentials file is 0600."""
    fake = fake_factory("--sample-account")
    home.folder.mkdir(parents=True)
    os.chmod(home.folder, 0o755)
    home.credentials.write_text('{"app_key": "old", "refresh_token": "old-refresh-token"}')
    os.chmod(home.credentials, 0o644)
    r = sign_in(binary, home.env(fake), umask=0)
    assert r.returncode == 0, r
    assert_private(home)
    assert home.stored()["refresh_token"] != "old-refresh-token"


@pytest.mark.parametrize("case", ["wrong", "used", "empty"])
def test_sign_in_with_a_bad_code_fails_and_writes_nothing(binary, fake_factory, home, case):
    fake = fake_factory("--sample-account")
    before = None
    if case == "used":
        first = signed_in(binary, home, fake)
        before = home.credentials.read_bytes()
        r = sign_in(binary, home.env(fake), paste=lambda code: first.code)
    elif case == "wrong":
        r = sign_in(binary, home.env(fake), paste=lambda code: "not-the-code-" + code[:4])
    else:
        r = sign_in(binary, home.env(fake), paste=lambda code: "")
    assert r.returncode == 4, r
    assert r.out.count("Signed in") == 0, r
    err = r.err.lower()
    assert "code" in err, f"the message does not mention the code: {r.err!r}"
    if case != "empty":
        assert "dropboxfs auth" in r.err, f"the message does not say what to do: {r.err!r}"
    if before is None:
        assert not home.credentials.exists()
        assert not home.folder.exists() or os.listdir(home.folder) == [], os.listdir(home.folder)
    else:
        assert home.credentials.read_bytes() == before
        assert os.listdir(home.folder) == ["credentials.json"]


def test_sign_in_without_app_key_is_a_usage_error(binary, fake_factory, home):
    fake = fake_factory("--sample-account")
    r = run(binary, "auth", env=home.env(fake), input=b"", timeout=30)
    assert r.returncode == 2, r
    assert b"--app-key" in r.stderr, r.stderr
    assert not home.folder.exists()


# ---- using the stored sign-in -----------------------------------------------------------------------

def test_mount_uses_the_stored_sign_in(binary, fake_factory, proxy_factory, auth_mounts, background_mounts,
                                       home, tmp_path):
    fake = fake_factory("--sample-account")
    proxy = proxy_factory(fake)
    signed_in(binary, home, proxy)
    refreshes = proxy.refreshes()
    m = auth_mounts(home, proxy)
    root = listdir(m, b"")
    assert {b"Documents", b"Photos", b"Get Started with Dropbox.pdf"} <= root, root
    assert root == children(visible_tree(fake), b"")
    assert run("cat", os.path.join(m.path, "Documents", "Work", "notes.txt")).returncode == 0
    assert proxy.refreshes() > refreshes, "the mount did not get an access token by a refresh grant"
    assert fake.stats()["routes"].get("files/list_folder", 0) >= 1
    statuses = [s for _, _, s in proxy.api_requests()]
    assert 401 not in statuses, proxy.api_requests()

    # The background mode: the daemon reads the same stored sign-in.
    mnt = tmp_path / "bg"
    mnt.mkdir()
    background_mounts.append(mnt)
    r = cli(binary, home, proxy, "mount", mnt, "--log-file", tmp_path / "bg.log")
    assert r.returncode == 0, r
    assert ACCOUNT_EMAIL.encode() in r.stdout, r.stdout
    assert set(os.listdir(mnt)) == {n.decode() for n in root}


def test_short_lived_tokens_are_refreshed_early_not_per_request(binary, fake_factory, proxy_factory,
                                                                auth_mounts, home):
    """Tokens from refresh grants live 8 s. While the mount is used for ~20 s no request may be
    rejected as expired, tokens must be renewed (at least once per lifetime), but not before every
    request: the product's 5-minute margin must not make a short-lived token useless."""
    ttl = 8
    fake = fake_factory("--synthetic", "3000", "--seed", "11", "--access-token-ttl", str(ttl))
    proxy = proxy_factory(fake)
    signed_in(binary, home, proxy)
    m = auth_mounts(home, proxy, "--no-prefetch", "--no-watch")
    entries = visible_tree(fake)
    folders = [rel for rel, e in entries.items() if e.kind == "d"]
    start_refreshes = proxy.refreshes()
    start_requests = len(proxy.api_requests())
    start = time.monotonic()
    duration = 20.0
    used = 0
    while time.monotonic() - start < duration:
        rel = folders[used % len(folders)]
        used += 1
        r = run("ls", "-la", in_mount(m, rel), timeout=30)
        assert r.returncode == 0, (rel, r.stderr, m.log_text()[-2000:])
        time.sleep(0.2)
    elapsed = time.monotonic() - start
    requests = proxy.api_requests()[start_requests:]
    refreshes = proxy.refreshes() - start_refreshes
    rejected = [q for q in requests if q[2] == 401]
    assert not rejected, f"{len(rejected)} requests were rejected: {rejected[:5]}"
    assert len(requests) >= 20, f"only {len(requests)} API requests in {elapsed:.0f} s: the test did not load the mount"
    assert refreshes >= int(elapsed // ttl), f"{refreshes} refreshes in {elapsed:.0f} s with {ttl} s tokens"
    bound = int(elapsed / 2) + 2
    assert refreshes <= bound, (
        f"{refreshes} refresh grants for {len(requests)} API requests in {elapsed:.0f} s with {ttl} s tokens "
        f"(expected at most {bound}: one per token lifetime or half-lifetime, not one per request)")


def test_expired_token_under_concurrency_refreshes_once(binary, fake_factory, proxy_factory, auth_mounts,
                                                        home):
    """The mount's access token expires server-side while 16 processes list 16 uncached folders at
    once: every command succeeds, and exactly one refresh grant replaces the token."""
    fake = fake_factory("--synthetic", "3000", "--seed", "5")
    proxy = proxy_factory(fake)
    signed_in(binary, home, proxy)
    mounted_at = len(proxy.api_requests())
    m = auth_mounts(home, proxy, "--no-prefetch", "--no-watch")
    entries = visible_tree(fake)
    targets, ancestors = independent_folders(entries, 16)
    listdir(m, b"")
    for rel in ancestors:
        listdir(m, rel)
    old = proxy.tokens_used(since=mounted_at)
    assert len(old) == 1, f"the mount used {len(old)} access tokens before the test"
    fake.config(latency_ms=300)  # every request of the burst is in flight when the first 401 comes
    proxy.expire_used_tokens()
    refreshes = proxy.refreshes(status=None)
    first = len(proxy.api_requests())
    procs = [subprocess.Popen(["ls", "-la", os.path.join(os.fsencode(m.path), rel)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for rel in targets]
    results = [(p.wait(timeout=60), p.stdout.read(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    fake.config(latency_ms=0)
    failed = [(rel, rc, err) for rel, (rc, _, err) in zip(targets, results) if rc != 0]
    assert not failed, f"{len(failed)} of 16 commands failed: {failed[:4]}\n{m.log_text()[-3000:]}"
    for rel in targets:
        assert listdir(m, rel) == children(entries, rel), rel
    burst = proxy.api_requests()[first:]
    rejected = [q for q in burst if q[2] == 401]
    assert len(rejected) >= 2, f"the burst was not concurrent ({len(rejected)} requests rejected)"
    assert all(token == old[0] for _, token, _ in rejected), "a fresh token was rejected"
    assert proxy.refreshes(status=None) - refreshes == 1, (
        f"{proxy.refreshes(status=None) - refreshes} refresh grants for one expiry "
        f"({len(rejected)} requests were rejected together)")


def test_revoked_sign_in(binary, fake_factory, proxy_factory, auth_mounts, background_mounts, home, tmp_path):
    """After the refresh token is revoked: a running mount whose token then expires keeps serving
    the folders it has listed and logs that `dropboxfs auth` must be run again; a fresh mount and
    `dropboxfs status` exit 4 with that advice."""
    fake = fake_factory("--synthetic", "3000", "--seed", "7")
    proxy = proxy_factory(fake)
    signed_in(binary, home, proxy)
    m = auth_mounts(home, proxy, "--no-prefetch", allowed_log=("dropboxfs auth",))
    entries = visible_tree(fake)
    (a, b, c), ancestors = independent_folders(entries, 3)
    listed = {rel: listdir(m, rel) for rel in [b""] + ancestors + [a, b]}

    fake.revoke_refresh_tokens()
    proxy.expire_used_tokens()
    r = run("ls", in_mount(m, c), timeout=30)
    assert r.returncode != 0, "an unlisted folder was listed although the sign-in is dead"
    assert proxy.refreshes(status=400) >= 1, proxy.grants
    wait_until(lambda: "dropboxfs auth" in m.log_text(), timeout=10,
               message="the daemon log to say to run `dropboxfs auth` again")
    for rel, names in listed.items():
        assert listdir(m, rel) == names, f"the listed folder {rel!r} is no longer served"
    assert m.process.poll() is None and is_mounted(m.path)

    r = cli(binary, home, proxy, "status")
    assert r.returncode == 4, r
    assert b"dropboxfs auth" in r.stderr, r.stderr

    mnt = tmp_path / "fresh"
    mnt.mkdir()
    background_mounts.append(mnt)
    r = cli(binary, home, proxy, "mount", mnt, "--log-file", tmp_path / "fresh.log")
    assert r.returncode == 4, r
    assert b"dropboxfs auth" in r.stderr, r.stderr
    assert not is_mounted(mnt)


def test_missing_scope_is_named(binary, fake_factory, background_mounts, home):
    """A token without files.metadata.read or without account_info.read: the mount is refused
    (exit 4) with the name of the scope to enable, before anything is mounted."""
    fake = fake_factory("--sample-account")
    fake.add_token("token-without-metadata", scopes=["account_info.read", "files.content.read"])
    fake.add_token("token-without-account", scopes=["files.metadata.read", "files.content.read"])

    unused = home.root / "unused"
    unused.mkdir()
    background_mounts.append(unused)
    r = cli(binary, home, fake, "mount", unused, token="token-without-account")
    assert r.returncode == 4, r
    assert b"account_info.read" in r.stderr, r.stderr

    mountpoint = home.root / "probe"
    mountpoint.mkdir()
    background_mounts.append(mountpoint)
    probe = subprocess.Popen([binary, "mount", str(mountpoint), "--foreground"],
                             env=home.env(fake, token="token-without-metadata"),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: probe.poll() is not None or is_mounted(mountpoint), timeout=20,
                   message="the mount to start or fail")
    finally:
        if probe.poll() is None:
            unmount(str(mountpoint))
        out = probe.communicate(timeout=15)[0]
    assert probe.returncode == 4 and not is_mounted(mountpoint), out
    assert b"files.metadata.read" in out, out


# ---- status and sign-out ----------------------------------------------------------------------------

def space_forms(n):
    """Ways a byte count may be shown: exact, or in binary units with one decimal."""
    forms = {str(n), f"{n:,}"}
    value, unit = float(n), 0
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    while value >= 1024 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    forms.add(f"{value:.1f} {units[unit]}")
    return forms


def test_status(binary, fake_factory, auth_mounts, home, tmp_path):
    used, allocated = 1610612736, 5 * 2**40   # 1.5 GiB of 5.0 TiB
    fake = fake_factory("--sample-account", "--quota-used", str(used), "--quota-allocated", str(allocated))

    r = cli(binary, home, fake, "status")
    assert r.returncode == 4, r
    assert b"dropboxfs auth" in r.stderr, r.stderr

    signed_in(binary, home, fake)
    r = cli(binary, home, fake, "status")
    out = r.stdout.decode()
    assert r.returncode == 0, r
    assert ACCOUNT_NAME in out and ACCOUNT_EMAIL in out, out
    space = [line for line in out.splitlines() if "used" in line]
    assert space, out
    assert any(f in space[0] for f in space_forms(used)), f"used {used} not shown: {space[0]!r}"
    assert any(f in space[0] for f in space_forms(allocated)), f"allocated {allocated} not shown: {space[0]!r}"
    assert "stored" in out and str(home.credentials) in out, out
    assert "DROPBOXFS_ACCESS_TOKEN" not in out, out

    # An explicit token wins over the stored sign-in, and the file over the variable.
    r = cli(binary, home, fake, "status", token="test-token")
    assert r.returncode == 0, r
    assert "DROPBOXFS_ACCESS_TOKEN" in r.stdout.decode() and str(home.credentials) not in r.stdout.decode(), r
    token_file = tmp_path / "token.txt"
    token_file.write_text("test-token\n")
    r = cli(binary, home, fake, "status", "--access-token-file", token_file, token="not-a-valid-token")
    assert r.returncode == 0, r
    assert str(token_file) in r.stdout.decode() and "DROPBOXFS_ACCESS_TOKEN" not in r.stdout.decode(), r

    # Active mounts: a readable line each, and with -v the daemon's raw status line under it.
    m = auth_mounts(home, fake)
    wait_for_fill(m.path, fake)
    xattr = os.getxattr(m.path, "user.dropboxfs.status").decode()
    assert xattr.split()[0] == "phase=watching", xattr
    r = cli(binary, home, fake, "status")
    assert r.returncode == 0, r
    lines = [line for line in r.stdout.decode().splitlines() if m.path in line]
    assert lines, f"the mount {m.path} is not listed: {r.stdout.decode()}"
    assert "complete:" in lines[0] and "following changes" in lines[0], lines[0]
    assert "phase=" not in r.stdout.decode(), r.stdout.decode()
    r = cli(binary, home, fake, "status", "-v")
    assert r.returncode == 0, r
    out = r.stdout.decode().splitlines()
    at = next(i for i, line in enumerate(out) if m.path in line)
    block = [line.strip() for line in out[at + 1 :]]
    block = block[: next((i for i, line in enumerate(block) if line.startswith("mount:")), len(block))]
    raw = [line for line in block if line.startswith("status: ")]
    assert raw and raw[0].startswith("status: phase=watching "), out

    # Unreachable: with a token, and with the stored sign-in (the refresh cannot be made).
    dead = f"http://127.0.0.1:{closed_port()}"
    r = cli(binary, home, dead, "status", token="test-token")
    assert r.returncode == 5, r
    r = cli(binary, home, dead, "status")
    assert r.returncode == 5, r


def test_sign_out_revokes_and_deletes(binary, fake_factory, home):
    fake = fake_factory("--sample-account")
    signed_in(binary, home, fake)
    refresh = home.stored()["refresh_token"]
    assert refresh_grant(fake, refresh)[0] == 200
    before = fake.stats()["routes"].get("auth/token/revoke", 0)
    r = cli(binary, home, fake, "auth", "--sign-out")
    assert r.returncode == 0, r
    assert fake.stats()["routes"].get("auth/token/revoke", 0) == before + 1
    assert not home.credentials.exists()
    status, reply = refresh_grant(fake, refresh)
    assert (status, reply.get("error")) == (400, "invalid_grant"), (status, reply)
    r = cli(binary, home, fake, "auth", "--sign-out")
    assert r.returncode == 0, r
    r = cli(binary, home, fake, "status")
    assert r.returncode == 4, r


def test_sign_out_purge_removes_what_the_profile_stored(binary, fake_factory, auth_mounts, home, tmp_path):
    """`auth --sign-out --purge`: the sign-in, the stored trees, the cached contents, the thumbnails
    the profile's mounts wrote (only those still ours) and its logs go, and each is reported; a
    file manager's own thumbnail and another profile's cache stay. Refused while mounted."""
    fake = fake_factory("--sample-account")
    fake.add_file("/Pictures/cat.jpg", size=4000, seed=3)
    signed_in(binary, home, fake)
    m = auth_mounts(home, fake)
    wait_for_fill(m.path, fake)
    assert run("cat", os.path.join(m.path, "Documents", "Work", "notes.txt")).returncode == 0
    manager = tmp_path / "bin" / "pcmanfm"
    manager.parent.mkdir()
    shutil.copy2(shutil.which("ls"), manager)
    assert run(manager, os.path.join(m.path, "Pictures")).returncode == 0
    normal, large = home.cache / "thumbnails" / "normal", home.cache / "thumbnails" / "large"
    wait_until(lambda: all(f.exists() and len(os.listdir(f)) == 1 for f in (normal, large)), timeout=20,
               message="our thumbnails, normal and large")
    theirs = normal / ("0" * 32 + ".png")
    theirs.write_bytes(b"a file manager's own thumbnail")
    cache = home.cache / "dropboxfs"
    other = cache / "profiles" / "work" / "content"
    other.mkdir(parents=True)
    (other / "kept").write_bytes(b"x")
    logs = home.root / "state" / "dropboxfs"
    logs.mkdir(parents=True)
    (logs / "dropboxfs.log").write_text("a log line\n")
    (logs / "dropboxfs.log.1").write_text("an older one\n")
    extra = {"XDG_STATE_HOME": str(home.root / "state")}

    r = cli(binary, home, fake, "auth", "--purge", extra=extra)
    assert r.returncode == 2 and b"--purge goes with --sign-out" in r.stderr, r
    r = cli(binary, home, fake, "auth", "--sign-out", "--purge", extra=extra)
    assert r.returncode == 1 and b"unmount it first" in r.stderr, r
    assert not home.credentials.exists(), "the sign-in goes first"
    assert any((cache / "trees").iterdir()) and any((cache / "content").iterdir()), "nothing else while mounted"
    m.unmount()

    r = cli(binary, home, fake, "auth", "--sign-out", "--purge", extra=extra)
    assert r.returncode == 0, r
    out = r.stdout.decode()
    for what in ("stored trees", "cached contents", "thumbnails: 2 files", "logs: 2 files"):
        assert f"removed {what}" in out, out.splitlines()
    assert not (cache / "trees").exists() and not (cache / "content").exists()
    assert not (cache / "thumbnails.ledger").exists()
    assert os.listdir(normal) == [theirs.name] and os.listdir(large) == [], "only our thumbnails went"
    assert not (logs / "dropboxfs.log").exists() and not (logs / "dropboxfs.log.1").exists()
    assert (other / "kept").exists(), "another profile's cache stays"


# ---- no token in any output -------------------------------------------------------------------------

def test_no_token_appears_in_any_output(binary, fake_factory, proxy_factory, background_mounts, home, tmp_path):
    """A whole session, every stdout/stderr and the daemon logs captured: no refresh token, no
    configured token, no issued access token (nor anything shaped like one) may appear."""
    static = "static-secret-token-5f2a9c"
    bogus = "bogus-secret-token-77e1d0"
    fake = fake_factory("--sample-account", "--token", static, "--access-token-ttl", "600")
    proxy = proxy_factory(fake)
    outputs = []   # (what, bytes)

    def record(what, r):
        outputs.append((what + " stdout", r.stdout))
        outputs.append((what + " stderr", r.stderr))
        return r

    r = sign_in(binary, home.env(proxy))
    outputs += [("auth stdout", r.stdout), ("auth stderr", r.stderr)]
    assert r.returncode == 0, r
    code = r.code
    refresh = home.stored()["refresh_token"]
    token_file = tmp_path / "token.txt"
    token_file.write_text(static + "\n")

    assert record("status", cli(binary, home, proxy, "status")).returncode == 0
    assert record("status env", cli(binary, home, proxy, "status", token=static)).returncode == 0
    assert record("status file", cli(binary, home, proxy, "status", "--access-token-file",
                                     token_file)).returncode == 0
    assert record("status bogus", cli(binary, home, proxy, "status", token=bogus)).returncode == 4
    (tmp_path / "unused").mkdir()
    background_mounts.append(tmp_path / "unused")
    assert record("mount bogus", cli(binary, home, proxy, "mount", tmp_path / "unused",
                                     token=bogus)).returncode == 4

    mnt = tmp_path / "mnt"
    mnt.mkdir()
    log_path = tmp_path / "debug.log"
    with open(log_path, "wb") as log:
        daemon = subprocess.Popen([binary, "mount", str(mnt), "--foreground", "--debug"], env=home.env(proxy),
                                  stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            wait_until(lambda: is_mounted(mnt) or daemon.poll() is not None, timeout=20, message="the mount")
            assert is_mounted(mnt), log_path.read_text()
            wait_for_fill(mnt, fake)
            record("ls -lR", run("ls", "-lR", mnt, timeout=60))
            for rel in ["Documents/Work/notes.txt", "Documents/Lorem ipsum.md", "Get Started with Dropbox.pdf",
                        "Documents/Project plan.paper"]:
                record("cat " + rel, run("cat", mnt / rel, timeout=30))
            record("getfattr root", run("getfattr", "-d", "-m", "-", mnt))
            record("getfattr file", run("getfattr", "-d", "-m", "-", mnt / "Documents/Work/notes.txt"))
            record("status mounted", cli(binary, home, proxy, "status"))
            # An expired token mid-session: the refresh path's log lines are captured too.
            refreshes = proxy.refreshes()
            proxy.expire_used_tokens()
            record("cat after expiry", run("cat", mnt / "Documents/Work/data.csv", timeout=30))
            assert proxy.refreshes() == refreshes + 1, "the expired token was not refreshed"
            record("unmount", unmount(mnt))
            daemon.wait(timeout=15)
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
            if is_mounted(mnt):
                subprocess.run(["fusermount3", "-uz", str(mnt)], capture_output=True, timeout=15)
    outputs.append(("mount --debug log", log_path.read_bytes()))
    assert b"[debug]" in log_path.read_bytes(), "the daemon did not log at debug level"

    assert record("sign-out", cli(binary, home, proxy, "auth", "--sign-out")).returncode == 0

    secrets = {refresh, static, bogus, code, *proxy.issued}
    assert len(proxy.issued) >= 3, "the session did not issue tokens"
    leaks = []
    for what, data in outputs:
        for secret in secrets:
            if secret and secret.encode() in data:
                leaks.append((what, secret[:6] + "..."))
        for m in ACCESS_TOKEN_RE.finditer(data):
            leaks.append((what, m.group(0)[:8].decode() + "..."))
    assert not leaks, f"tokens appear in the output: {leaks}"
