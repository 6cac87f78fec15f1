"""The /_control/ JSON API used by tests to mutate and inspect the fake.

Exists so tests can add/modify/delete/move entries (journalled, so cursors see
them), fetch raw content, inject faults, change runtime config, add tokens and
read request statistics.  No auth; never counted in API stats.  ``?account=b``
(with --second-account) makes the tree, content, info and token calls about
account b; faults, config and stats are shared.
"""

import base64
import json
import urllib.parse

from . import revisions
from .adversarial import ModeError, modes_text, parse_modes
from . import links, sharedfolders
from .content import Source
from .faults import FaultError
from .httpio import Reply, json_reply, text_reply
from .paging import PagingError, parse_cost, parse_max_page, parse_tiny
from .tree import TreeError


class ControlError(Exception):
    def __init__(self, status, msg):
        super().__init__(msg)
        self.status, self.msg = status, msg


def _err(status, msg):
    return json_reply({"error": msg}, status)


def _body(raw):
    if not raw:
        return {}
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise ControlError(400, "body is not valid JSON")
    if not isinstance(obj, dict):
        raise ControlError(400, "body must be a JSON object")
    return obj


def _str(obj, key):
    v = obj.get(key)
    if not isinstance(v, str) or not v:
        raise ControlError(400, "missing string field %r" % key)
    return v


def add_file(st, obj):
    path = _str(obj, "path")
    extra = {}
    if obj.get("symlink_target"):
        extra["symlink"] = str(obj["symlink_target"])
    if obj.get("export_as"):
        extra["export_as"] = str(obj["export_as"])
        extra["export_options"] = list(obj.get("export_options") or [extra["export_as"]])
        if obj.get("export_size") is not None:
            if not isinstance(obj["export_size"], int) or obj["export_size"] < 0:
                raise ControlError(400, "export_size must be a non-negative integer")
            extra["export_size"] = obj["export_size"]
    if obj.get("client_modified") is not None:
        extra["client_modified"] = int(obj["client_modified"])
    if obj.get("restricted"):
        extra["restricted"] = True
    if "content_b64" in obj:
        try:
            data = base64.b64decode(obj["content_b64"], validate=True)
        except Exception:
            raise ControlError(400, "content_b64 is not valid base64")
        src = Source("bytes", data, len(data))
        content = data
    elif "size" in obj:
        size, seed = obj.get("size"), obj.get("seed", 0)
        if not isinstance(size, int) or size < 0 or not isinstance(seed, int) or seed < 0:
            raise ControlError(400, "size and seed must be non-negative integers")
        src = Source("synth", seed, size)
        content = seed
    else:
        raise ControlError(400, "give content_b64, or size (and seed)")
    digest = None if "export_as" in extra else src.content_hash()
    tree = st.tree
    with tree.lock:
        _refuse_under_no_access(st, path)
        try:
            node = tree.put_file(path, content, src.size, digest, extra=extra or None,
                                 mtime=obj.get("server_modified"))
        except TreeError as e:
            raise ControlError(409, str(e))
        return tree.metadata(node)


ACCESS_LEVELS = ("traverse_only", "no_access")


def _refuse_under_no_access(st, path):
    """A folder this account may not open shows no contents (Dropbox lists none), so the fake
    holds none: adding below one is refused. Caller holds the lock."""
    parts = [p for p in path.split("/") if p]
    for i in range(1, len(parts)):
        node, _ = st.tree.resolve("/" + "/".join(parts[:i]), st.root_ns, st.home_ns)
        if node is not None and (node.extra or {}).get("access") == "no_access":
            raise ControlError(409, "%s is a no_access folder: it holds nothing" % "/".join(parts[:i]))


def add_folder(st, obj):
    """POST /_control/folders {"path", "access"?}: a folder (and its parents); ``access``
    "traverse_only" or "no_access" gives it that level in its sharing_info."""
    path = _str(obj, "path")
    access = obj.get("access")
    if access is not None and access not in ACCESS_LEVELS:
        raise ControlError(400, "access must be one of %s" % ", ".join(ACCESS_LEVELS))
    tree = st.tree
    with tree.lock:
        _refuse_under_no_access(st, path)
        try:
            node = tree.mkdir(path)
        except TreeError as e:
            raise ControlError(409, str(e))
        if access is not None:
            node.extra = dict(node.extra or {}, access=access)
        return tree.metadata(node)


def tree_entries(st, with_hashes=True):
    tree = st.tree
    with tree.lock:
        nodes = list(tree.walk_all())
    if with_hashes:
        tree.ensure_hashes(nodes)
    out = []
    with tree.lock:
        cache = {}
        for n in nodes:
            pd, pl = tree.paths(n, cache)
            if n.children is not None:
                out.append({"tag": "folder", "path_display": pd, "path_lower": pl,
                            "name": n.name, "id": tree.metadata(n, cache, pd, pl)["id"],
                            "size": None, "rev": None, "content_hash": None,
                            "is_downloadable": None, "symlink_target": None})
            else:
                md = tree.metadata(n, cache, pd, pl)
                out.append({"tag": "file", "path_display": pd, "path_lower": pl,
                            "name": n.name, "id": md["id"], "size": md["size"],
                            "rev": md["rev"], "content_hash": md.get("content_hash"),
                            "is_downloadable": md["is_downloadable"],
                            "symlink_target": (n.extra or {}).get("symlink")})
    return out


def content(st, query):
    path = query.get("path")
    if not path:
        raise ControlError(400, "missing ?path=")
    tree = st.tree
    with tree.lock:
        if path.startswith("rev:"):
            kind, obj = tree.resolve_rev(path[4:])
            if kind is None:
                raise ControlError(404, "no such revision")
            src = obj.source if kind == "old" else tree.source_of(obj)
        else:
            node, _ = tree.resolve(path, st.root_ns, st.home_ns)
            if node is None or node.children is not None:
                raise ControlError(404, "no such file")
            src = tree.source_of(node)
    return Reply(200, [("Content-Type", "application/octet-stream")],
                 stream=src.iter_range(0, src.size), length=src.size)


def config(st, obj):
    if "latency_ms" in obj:
        st.latency_ms = float(obj["latency_ms"] or 0)
    if "bandwidth" in obj:
        st.bandwidth = int(obj["bandwidth"] or 0)
    if "zip_delay_ms" in obj:
        st.zip_delay_ms = float(obj["zip_delay_ms"] or 0)
    if "access_token_ttl" in obj:
        st.tokens.ttl = float(obj["access_token_ttl"])
    if "longpoll_backoff" in obj:
        st.longpoll_backoff = obj["longpoll_backoff"]
    if "quota_used" in obj:
        st.quota_used = obj["quota_used"]
    if "quota_allocated" in obj:
        st.quota_allocated = int(obj["quota_allocated"])
    modes = seed = None
    if "adversarial" in obj:
        try:
            modes = parse_modes(obj["adversarial"] or "")
        except ModeError as e:
            raise ControlError(400, str(e))
    if "adversarial_seed" in obj:
        seed = obj["adversarial_seed"]
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ControlError(400, "adversarial_seed must be an integer")
    paging = st.paging
    try:  # all checked before any is set
        max_page = parse_max_page(obj["max_page"]) if "max_page" in obj else paging.max_page
        tiny = parse_tiny(obj["tiny_pages"]) if "tiny_pages" in obj else paging.tiny
        cost = parse_cost(obj["page_cost_ms_per_1000"]) if "page_cost_ms_per_1000" in obj \
            else paging.cost_ms_per_1000
    except PagingError as e:
        raise ControlError(400, str(e))
    if modes is not None or seed is not None:
        st.set_adversarial(modes, seed)
    paging.max_page, paging.tiny, paging.cost_ms_per_1000 = max_page, tiny, cost
    out = {"latency_ms": st.latency_ms, "bandwidth": st.bandwidth, "zip_delay_ms": st.zip_delay_ms,
           "access_token_ttl": st.tokens.ttl, "longpoll_backoff": st.longpoll_backoff,
           "quota_used": st.quota_used, "quota_allocated": st.quota_allocated,
           "adversarial": modes_text(st.adv.modes), "adversarial_seed": st.adv.seed}
    out.update(paging.config())
    return out


def handle(st, method, path, query_string, raw):
    """Dispatch one /_control/ request; returns a Reply."""
    q = {k: v[-1] for k, v in urllib.parse.parse_qs(query_string, keep_blank_values=True).items()}
    name = path[len("/_control/"):].strip("/")
    key = q.get("account", "a")
    if key not in st.accounts:
        return _err(400, "no account %r (this server has %s)" % (key, ", ".join(sorted(st.accounts))))
    st.use_account(key)     # tree, content, info and new tokens are this account's
    if q.get("namespace"):  # the file routes about one of its shared folders (sharedfolders.py)
        ns = st.shared.find(key, q["namespace"])
        if ns is None:
            return _err(404, "no shared folder %r" % q["namespace"])
        st.use_namespace(ns)
    tree = st.tree
    try:
        if method == "POST" and name == "files":
            return json_reply(add_file(st, _body(raw)))
        if method == "POST" and name == "folders":
            return json_reply(add_folder(st, _body(raw)))
        if method == "POST" and name == "delete":
            p = _str(_body(raw), "path")
            with tree.lock:
                try:
                    return json_reply(tree.delete(p))
                except TreeError as e:
                    raise ControlError(409, str(e))
        if method == "POST" and name == "move":
            obj = _body(raw)
            src, dst = _str(obj, "from"), _str(obj, "to")
            with tree.lock:
                try:
                    return json_reply(tree.move(src, dst))
                except TreeError as e:
                    raise ControlError(409, str(e))
        if method == "GET" and name == "revisions":
            return json_reply(revisions.history(st, q.get("path") or ""))
        if method == "POST" and name == "expire_revision":
            return json_reply({"expired": revisions.expire_revision(st, _str(_body(raw), "rev"))})
        if method == "POST" and name == "reset_cursors":
            with tree.lock:
                tree.reset_cursors()
                return json_reply({"epoch": tree.epoch})
        if method == "POST" and name in ("shared_links", "shared_links/update"):
            try:
                make = links.create if name == "shared_links" else links.change
                return json_reply(make(st, _body(raw)))
            except links.LinkError as e:
                raise ControlError(e.status, e.msg)
        if name in ("shared_folders", "shared_folders/unshare"):
            try:
                if method == "GET" and name == "shared_folders":
                    return json_reply([sharedfolders.describe(st, ns) for ns in st.shared.of(key)])
                if method == "POST":
                    make = sharedfolders.create if name == "shared_folders" else sharedfolders.unshare
                    return json_reply(make(st, _body(raw)))
            except sharedfolders.SharedFolderError as e:
                raise ControlError(e.status, e.msg)
        if method == "GET" and name == "content":
            return content(st, q)
        if method == "GET" and name == "tree":
            return json_reply({"entries": tree_entries(st, q.get("hashes", "1") != "0")})
        if method == "POST" and name == "faults/release":
            obj = _body(raw) if raw else {}
            route = obj.get("route")
            if route is not None and not isinstance(route, str):
                raise ControlError(400, "route must be a string")
            return json_reply({"released": st.faults.release(route)})
        if name == "faults":
            if method == "POST":
                try:
                    return json_reply({"added": st.faults.add(json.loads(raw or b"{}"))})
                except (FaultError, ValueError) as e:
                    raise ControlError(400, str(e))
            if method == "DELETE":
                return json_reply({"rules": st.faults.clear()})
            if method == "GET":
                return json_reply({"rules": st.faults.list()})
        if method == "POST" and name == "config":
            return json_reply(config(st, _body(raw)))
        if method == "GET" and name == "config":
            return json_reply(config(st, {}))
        if method == "POST" and name == "tokens":
            obj = _body(raw)
            tok = _str(obj, "token")
            scopes = obj.get("scopes")
            if scopes is not None and not (isinstance(scopes, list) and all(isinstance(s, str) for s in scopes)):
                raise ControlError(400, "scopes must be a list of strings")
            st.tokens.add(tok, obj.get("expires_in"), scopes, account=key)
            return json_reply({"token": tok, "expires_in": obj.get("expires_in"),
                               "scopes": scopes})
        if method == "POST" and name == "revoke_refresh_tokens":
            st.tokens.revoke_all_refresh()
            return json_reply({"revoked": True})
        if method == "GET" and name == "stats":
            return json_reply(st.stats())
        if method == "POST" and name == "stats/reset":
            st.reset_stats()
            return json_reply(st.stats())
        if method == "GET" and name == "log":
            with st.stats_lock:
                return json_reply(list(st.log))
        if method == "GET" and name == "info":
            info = {"instance": st.instance, "account_id": st.account_id,
                    "root_namespace_id": st.root_ns, "home_namespace_id": st.home_ns, "team": st.team}
            if len(st.accounts) > 1:
                info.update(account=key, accounts=sorted(st.accounts))
            return json_reply(info)
        return text_reply(404, "unknown control endpoint %s %s" % (method, path))
    except ControlError as e:
        return _err(e.status, e.msg)


