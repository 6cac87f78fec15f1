"""Test helper: start/stop a fakedropbox subprocess and call its control API.

Exists so pytest suites (this folder's and the mount tests) can write
``with FakeDropbox.start("--synthetic", "1000") as fd: fd.add_file(...)``.
Standard library only.
"""

import base64
import copy
import http.client
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

PKG_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ControlError(Exception):
    def __init__(self, status, body):
        super().__init__("control API error %s: %s" % (status, body))
        self.status, self.body = status, body


class ApiResponse:
    """A raw HTTP response from the fake: status, headers (lower-case keys), body."""

    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.body)

    @property
    def result(self):
        """Parsed Dropbox-API-Result header (download routes)."""
        return json.loads(self.headers["dropbox-api-result"])

    def __repr__(self):
        return "<ApiResponse %d %r>" % (self.status, self.body[:200])


class FakeDropbox:
    """A running fakedropbox server (subprocess)."""

    def __init__(self, proc, port, scheme, workdir, cafile=None, log_path=None):
        self.proc = proc
        self.port = port
        self.scheme = scheme
        self.url = "%s://127.0.0.1:%d" % (scheme, port)
        self.host = "127.0.0.1:%d" % port
        self.workdir = workdir
        self.cafile = cafile
        self.log_path = log_path
        self._final_log = None
        if scheme == "https":
            self._ctx = ssl.create_default_context(cafile=cafile) if cafile else ssl._create_unverified_context()
        else:
            self._ctx = None

    # ---- lifecycle ----------------------------------------------------------------
    @classmethod
    def start(cls, *cli_args, python=None, timeout=120, env=None):
        """Start ``python -m fakedropbox --port 0 --port-file F *cli_args`` and
        wait until it accepts connections.  stderr goes to ``.log_path``."""
        args = [str(a) for a in cli_args]
        workdir = tempfile.mkdtemp(prefix="fakedropbox-")
        port_file = os.path.join(workdir, "port")
        log_path = os.path.join(workdir, "server.log")
        e = dict(os.environ if env is None else env)
        e["PYTHONPATH"] = PKG_PARENT + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
        cmd = [python or sys.executable, "-m", "fakedropbox"]
        if "--port" not in args:
            cmd += ["--port", "0"]
        cmd += ["--port-file", port_file] + args
        if "--exit-with-parent" not in args:
            # A test run killed by its timeout leaves no server behind.
            cmd += ["--exit-with-parent", str(os.getpid())]
        log = open(log_path, "wb")
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=e,
                                start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while not os.path.exists(port_file):
            if proc.poll() is not None:
                with open(log_path, errors="replace") as f:
                    raise RuntimeError("fakedropbox exited with %s:\n%s" % (proc.returncode, f.read()))
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("fakedropbox did not start within %ss" % timeout)
            time.sleep(0.02)
        with open(port_file) as f:
            port = int(f.read().strip())
        tls = "--make-certs" in args or "--tls-cert" in args
        cafile = None
        if "--make-certs" in args:
            cafile = os.path.join(args[args.index("--make-certs") + 1], "ca.pem")
        return cls(proc, port, "https" if tls else "http", workdir, cafile, log_path)

    def stop(self):
        """Stop the server and remove its temp dir (the log is kept in memory,
        see server_log(); set FAKEDROPBOX_KEEP_TMP=1 to keep the dir)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._final_log is None and os.path.isdir(self.workdir):
            self._final_log = self.server_log()
            if not os.environ.get("FAKEDROPBOX_KEEP_TMP"):
                shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def server_log(self):
        """The server's stderr so far (or, after stop(), all of it)."""
        if self._final_log is not None:
            return self._final_log
        with open(self.log_path, errors="replace") as f:
            return f.read()

    # ---- raw HTTP --------------------------------------------------------------------
    account = "a"   # the account the control calls are about (accounts.py); see as_account

    def as_account(self, key):
        """This server's client whose control calls (add_file, tree, content, info, add_token...)
        are about account `key` (``"b"`` with --second-account); faults, config and stats are
        shared. The same server: stopping either stops it."""
        other = copy.copy(self)
        other.account = key
        return other

    namespace = None   # a shared folder the file calls are about (sharedfolders.py); see in_namespace

    def in_namespace(self, shared_folder_id):
        """This server's client whose file calls (add_file, mkdir, delete, move, content, tree)
        change the shared folder `shared_folder_id` of this client's account."""
        other = copy.copy(self)
        other.namespace = shared_folder_id
        return other

    def _call(self, method, path, obj=None, raw=False):
        if self.account != "a" and path.startswith("/_control/"):
            path += ("&" if "?" in path else "?") + urllib.parse.urlencode({"account": self.account})
        if self.namespace is not None and path.startswith("/_control/"):
            path += ("&" if "?" in path else "?") + urllib.parse.urlencode({"namespace": self.namespace})
        data = None if obj is None else json.dumps(obj).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=120, context=self._ctx) as r:
                body = r.read()
        except urllib.error.HTTPError as e:
            raise ControlError(e.code, e.read().decode("utf-8", "replace"))
        return body if raw else json.loads(body)

    def request(self, method, path, body=None, headers=None, timeout=60):
        """One raw HTTP request on a fresh connection -> ApiResponse."""
        if self.scheme == "https":
            conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=self._ctx)
        else:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            data = r.read()
            return ApiResponse(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
        finally:
            conn.close()

    def rpc(self, route, arg=None, token="test-token", headers=None, timeout=60):
        """POST /2/<route> with a JSON argument (None -> body 'null')."""
        h = {"Content-Type": "application/json"}
        if token is not None:
            h["Authorization"] = "Bearer " + token
        h.update(headers or {})
        return self.request("POST", "/2/" + route, json.dumps(arg).encode(), h, timeout)

    def download(self, path=None, arg=None, token="test-token", range=None, headers=None,
                 route="files/download", get=False):
        """files/download (or export) by Dropbox-API-Arg header, or GET ?arg= if get."""
        a = arg if arg is not None else {"path": path}
        h = {}
        if token is not None:
            h["Authorization"] = "Bearer " + token
        if range:
            h["Range"] = range
        h.update(headers or {})
        if get:
            q = urllib.parse.urlencode({"arg": json.dumps(a, ensure_ascii=False)})
            return self.request("GET", "/2/%s?%s" % (route, q), None, h)
        h["Dropbox-API-Arg"] = json.dumps(a)
        return self.request("POST", "/2/" + route, b"", h)

    def list_all(self, path="", recursive=False, token="test-token", **kw):
        """list_folder + continue until has_more is false -> (entries, cursor)."""
        arg = dict(path=path, recursive=recursive, **kw)
        r = self.rpc("files/list_folder", arg, token=token)
        if r.status != 200:
            raise ControlError(r.status, r.text)
        out = r.json()
        entries = list(out["entries"])
        while out["has_more"]:
            r = self.rpc("files/list_folder/continue", {"cursor": out["cursor"]}, token=token)
            if r.status != 200:
                raise ControlError(r.status, r.text)
            out = r.json()
            entries += out["entries"]
        return entries, out["cursor"]

    # ---- control API -------------------------------------------------------------------
    def add_file(self, path, data=None, size=None, seed=None, **extra):
        """Create/overwrite a file from bytes ``data`` or synthetic ``size``/``seed``.
        extra: symlink_target, export_as, client_modified, server_modified, restricted (its
        downloads answer path/restricted_content)."""
        obj = {"path": path}
        if data is not None:
            if isinstance(data, str):
                data = data.encode("utf-8")
            obj["content_b64"] = base64.b64encode(data).decode()
        elif size is not None:
            obj["size"] = size
            obj["seed"] = 0 if seed is None else seed
        else:
            obj["content_b64"] = ""
        obj.update(extra)
        return self._call("POST", "/_control/files", obj)

    def mkdir(self, path, access=None):
        """A folder and its parents; ``access`` "traverse_only" or "no_access" gives it that
        access level."""
        obj = {"path": path}
        if access is not None:
            obj["access"] = access
        return self._call("POST", "/_control/folders", obj)

    def delete(self, path):
        return self._call("POST", "/_control/delete", {"path": path})

    def move(self, src, dst):
        return self._call("POST", "/_control/move", {"from": src, "to": dst})

    def revisions(self, path):
        """The fake's own record of ``path``'s history, newest first (control API)."""
        return self._call("GET", "/_control/revisions?" + urllib.parse.urlencode({"path": path}))

    def expire_revision(self, rev):
        """Forget an old revision, as Dropbox does when its retention ends."""
        return self._call("POST", "/_control/expire_revision", {"rev": rev})["expired"]

    def reset_cursors(self):
        return self._call("POST", "/_control/reset_cursors", {})

    def content(self, path):
        return self._call("GET", "/_control/content?" + urllib.parse.urlencode({"path": path}), raw=True)

    def tree(self, hashes=True):
        return self._call("GET", "/_control/tree" + ("" if hashes else "?hashes=0"))["entries"]

    def add_shared_folder(self, name, access_type="viewer", mounted_at=None, readable=True,
                          is_team_folder=False):
        """A folder shared with this account (sharedfolders.py) -> its SharedFolderMetadata;
        ``mounted_at`` adds it to the account's Dropbox at that path, ``readable=False`` makes
        its namespace answer no_permission."""
        obj = {"name": name, "access_type": access_type, "readable": readable,
               "is_team_folder": is_team_folder}
        if mounted_at is not None:
            obj["mounted_at"] = mounted_at
        return self._call("POST", "/_control/shared_folders", obj)

    def unshare_folder(self, shared_folder_id):
        return self._call("POST", "/_control/shared_folders/unshare", {"shared_folder_id": shared_folder_id})

    def shared_folders(self):
        return self._call("GET", "/_control/shared_folders")

    def share(self, path, password=None, expires_in=None, unsupported=False):
        """A shared link to `path` (links.py) -> {"url", ...}."""
        obj = {"path": path, "unsupported": unsupported}
        if password is not None:
            obj["password"] = password
        if expires_in is not None:
            obj["expires_in"] = expires_in
        return self._call("POST", "/_control/shared_links", obj)

    def update_link(self, url, **fields):
        """A link's new `password` or `expires_in` (seconds from now; None: never)."""
        return self._call("POST", "/_control/shared_links/update", dict(fields, url=url))

    def add_fault(self, route, kind, **params):
        rule = {"route": route, "kind": kind}
        rule.update(params)
        return self._call("POST", "/_control/faults", rule)["added"]

    def add_faults(self, rules):
        return self._call("POST", "/_control/faults", {"rules": rules})["added"]

    def faults(self):
        return self._call("GET", "/_control/faults")["rules"]

    def release_holds(self, route=None):
        """Lets the requests held by `hold` rules (on `route`, or all) go on; returns those rules."""
        return self._call("POST", "/_control/faults/release", {} if route is None else {"route": route})["released"]

    def clear_faults(self):
        """Removes every fault; returns the removed rules with their final `fired` counts."""
        return self._call("DELETE", "/_control/faults")["rules"]

    def config(self, **kw):
        return self._call("POST", "/_control/config", kw)

    def add_token(self, token, expires_in=None, scopes=None):
        obj = {"token": token}
        if expires_in is not None:
            obj["expires_in"] = expires_in
        if scopes is not None:
            obj["scopes"] = list(scopes)
        return self._call("POST", "/_control/tokens", obj)

    def revoke_refresh_tokens(self):
        return self._call("POST", "/_control/revoke_refresh_tokens", {})

    def stats(self):
        return self._call("GET", "/_control/stats")

    def reset_stats(self):
        return self._call("POST", "/_control/stats/reset", {})

    def log(self):
        return self._call("GET", "/_control/log")

    def info(self):
        return self._call("GET", "/_control/info")
