"""Shared links: links to folders and files of an account's tree, read by anyone who has one.

Exists to serve what a shared-link mount reads (docs/DROPBOX-API.md, "Shared links"):
``sharing/get_shared_link_metadata``, ``files/list_folder`` with ``shared_link`` (and its
``continue``), ``sharing/get_shared_link_file`` (ranged) and ``files/get_thumbnail_v2`` of a
file in a link (a PathOrLink ``link`` resource).  A link is made through the control
API (``POST /_control/shared_links``) on a folder or file of one account; any valid token may then
read it, as on Dropbox, where the link need not be in the reader's own Dropbox.

What Dropbox does and the fake copies:
- listings through a link are non-recursive only, and their entries carry no ``path_lower`` or
  ``path_display`` (the link is not in the reader's Dropbox); a link to a file lists as that file;
- errors are the SharedLinkError union: ``shared_link_not_found`` (no such link, its target is
  gone, or it expired: Dropbox's union has no tag of its own for expiry),
  ``shared_link_access_denied`` (a password link without the right password),
  ``unsupported_link_type`` (a link the API cannot read, made here with ``unsupported``), and
  ``shared_link_is_directory`` from get_shared_link_file on a folder;
- a link follows its target when it is moved or renamed, and dies with it.

A link's cursor (``lk1.`` + JSON) names the link, the folder path inside it, the offset reached
and the tree's journal length; ``continue`` after the last page answers an empty page while the
tree is unchanged and ``reset`` once it changed (the fake keeps no per-link change feed; Dropbox
documents none either, so clients poll).  Links live in ``LinkTable`` (its own lock); the tree is
read under its ``tree.lock``.
"""

import base64
import json
import secrets
import threading
import time

from .httpio import JSON_CT, Reply, header_json, json_reply, lookup_error, page_body, entry_json, route_error
from .tree import fmt_time

CURSOR_PREFIX = "lk1."
DEFAULT_LIMIT = 500


class Link:
    __slots__ = ("url", "account", "node", "password", "expires", "unsupported")

    def __init__(self, url, account, node, password, expires, unsupported):
        self.url, self.account, self.node = url, account, node
        self.password, self.expires, self.unsupported = password, expires, unsupported


class LinkTable:
    """Every link of the server, by URL.  ``lock`` guards ``links``."""

    def __init__(self):
        self.lock = threading.Lock()
        self.links = {}

    def add(self, link):
        with self.lock:
            self.links[link.url] = link

    def get(self, url):
        with self.lock:
            return self.links.get(url)

    def update(self, url, **fields):
        with self.lock:
            link = self.links.get(url)
            if link is None:
                return None
            for k, v in fields.items():
                setattr(link, k, v)
            return link


class LinkError(Exception):
    """A control-API request about links that cannot be done: (status, message)."""

    def __init__(self, status, msg):
        super().__init__(msg)
        self.status, self.msg = status, msg


# ---- control API ---------------------------------------------------------------------------------

def create(st, obj):
    """POST /_control/shared_links {path, password?, expires_in?, unsupported?} -> the link.

    ``expires_in`` is seconds from now (negative: already expired)."""
    path = obj.get("path")
    if not isinstance(path, str):
        raise LinkError(400, "path must be a string")
    password = obj.get("password")
    if password is not None and not isinstance(password, str):
        raise LinkError(400, "password must be a string")
    expires_in = obj.get("expires_in")
    if expires_in is not None and (isinstance(expires_in, bool) or not isinstance(expires_in, (int, float))):
        raise LinkError(400, "expires_in must be a number of seconds")
    tree = st.tree
    with tree.lock:
        node, err = tree.resolve(path, st.root_ns, st.home_ns)
        if node is None:
            raise LinkError(409, "no such entry: %s (%s)" % (path, err))
        kind = "fo" if node.children is not None else "fi"
        name = node.name or "root"
    url = "https://www.dropbox.com/scl/%s/%s/%s?rlkey=%s&dl=0" % (
        kind, secrets.token_hex(12), _url_name(name), secrets.token_hex(10))
    expires = None if expires_in is None else time.time() + expires_in
    st.links.add(Link(url, st.account.key, node, password, expires, bool(obj.get("unsupported"))))
    return _describe(st.links.get(url))


def change(st, obj):
    """POST /_control/shared_links/update {url, password?, expires_in?}: a new password or expiry."""
    url = obj.get("url")
    if not isinstance(url, str):
        raise LinkError(400, "url must be a string")
    fields = {}
    if "password" in obj:
        fields["password"] = obj["password"]
    if "expires_in" in obj:
        fields["expires"] = None if obj["expires_in"] is None else time.time() + obj["expires_in"]
    link = st.links.update(url, **fields)
    if link is None:
        raise LinkError(404, "no such link")
    return _describe(link)


def _describe(link):
    return {"url": link.url, "account": link.account, "password": link.password is not None,
            "expires": None if link.expires is None else fmt_time(int(link.expires)),
            "unsupported": link.unsupported}


def _url_name(name):
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:40] or "link"


# ---- resolving a link ----------------------------------------------------------------------------

def _arg_error(msg):
    from .routes_files import ArgError    # routes_files imports this module
    return ArgError(msg)


def _not_found():
    return route_error({".tag": "shared_link_not_found"})


def _open(st, url, password, check_password=True):
    """-> (link, tree) or an error Reply.  Sets the request thread's account to the link's
    owner, whose tree the link reads."""
    if not isinstance(url, str) or not url:
        return _not_found()
    link = st.links.get(url)
    if link is None:
        return _not_found()
    if link.expires is not None and time.time() >= link.expires:
        return _not_found()
    if link.unsupported:
        return route_error({".tag": "unsupported_link_type"})
    if check_password and link.password is not None and password != link.password:
        return route_error({".tag": "shared_link_access_denied"})
    st.use_account(link.account)
    tree = st.tree
    with tree.lock:
        if not tree.alive(link.node):
            return _not_found()
    return link, tree


def _walk(tree, link, path):
    """The node at ``path`` ("" or "/a/b", relative to the link) -> (node, LookupError tag).
    Caller holds tree.lock."""
    if path in ("", "/"):
        return link.node, None
    if not path.startswith("/"):
        return None, "malformed_path"
    if link.node.children is None:
        return None, "not_found"
    return tree.walk(link.node, path)


def _entry(tree, node):
    """A listing entry of a link: the metadata without paths."""
    md = tree.metadata(node)
    md.pop("path_lower", None)
    md.pop("path_display", None)
    md.pop("sharing_info", None)
    return md


def _permissions(visibility):
    """LinkPermissions of a link read by someone other than its owner: the required fields
    (the SDK checks them all), the rest left out."""
    perms = {"resolved_visibility": {".tag": visibility}, "can_revoke": False, "visibility_policies": [],
             "allow_download": True, "allow_comments": False, "team_restricts_comments": False}
    for k in ("can_set_expiry", "can_remove_expiry", "can_allow_download", "can_disallow_download"):
        perms[k] = False
    return perms


def _link_metadata(tree, link, node):
    """SharedLinkMetadata (FileLinkMetadata or FolderLinkMetadata) of ``node`` in ``link``."""
    visibility = "password" if link.password is not None else "public"
    md = {".tag": "folder" if node.children is not None else "file", "url": link.url,
          "name": node.name or "root", "id": tree.metadata(node)["id"],
          "link_permissions": _permissions(visibility)}
    if node.children is None:
        full = tree.metadata(node)
        for k in ("client_modified", "server_modified", "rev", "size"):
            md[k] = full[k]
    if link.expires is not None:
        md["expires"] = fmt_time(int(link.expires))
    return md


# ---- routes --------------------------------------------------------------------------------------

def get_shared_link_metadata(st, req, arg):
    got = _open(st, arg.get("url"), arg.get("link_password"))
    if isinstance(got, Reply):
        return got
    link, tree = got
    path = arg.get("path") or ""
    with tree.lock:
        node, err = _walk(tree, link, path)
        if node is None:
            return _not_found()
        md = _link_metadata(tree, link, node)
    return json_reply(md)


def list_folder(st, req, arg, path, recursive, limit):
    """files/list_folder with ``shared_link`` (arguments already checked by the caller)."""
    sl = arg.get("shared_link")
    if not isinstance(sl, dict):
        raise _arg_error("shared_link: expected object, got %s" % type(sl).__name__)
    if recursive:
        raise _arg_error("shared_link: Only non-recursive mode is supported for shared link.")
    got = _open(st, sl.get("url"), sl.get("password"))
    if isinstance(got, Reply):
        return got
    link, tree = got
    with tree.lock:
        node, err = _walk(tree, link, path)
        if node is None:
            return lookup_error(err)
        seq = len(tree.journal)
        epoch = tree.epoch
    cur = {"u": link.url, "p": path, "o": 0, "e": epoch, "j": seq, "l": limit}
    return _page(st, tree, link, cur, node)


def is_cursor(text):
    return isinstance(text, str) and text.startswith(CURSOR_PREFIX)


def list_folder_continue(st, req, text):
    try:
        cur = json.loads(base64.urlsafe_b64decode(text[len(CURSOR_PREFIX):].encode("ascii")))
        assert isinstance(cur, dict) and {"u", "p", "o", "e", "j", "l"} <= set(cur)
    except Exception:
        raise _arg_error('cursor: invalid cursor "%s"' % text[:40])
    got = _open(st, cur["u"], None, check_password=False)
    if isinstance(got, Reply):
        return got
    link, tree = got
    with tree.lock:
        if tree.epoch != cur["e"]:
            return route_error({".tag": "reset"})
        node, err = _walk(tree, link, cur["p"])
        if node is None:
            return lookup_error(err)
        ended = cur["o"] < 0
        if ended:
            if len(tree.journal) != cur["j"]:
                return route_error({".tag": "reset"})
            return Reply(200, [("Content-Type", JSON_CT)], page_body([], _encode(cur), False))
    return _page(st, tree, link, cur, node)


def _encode(cur):
    return CURSOR_PREFIX + base64.urlsafe_b64encode(json.dumps(cur, separators=(",", ":")).encode()).decode("ascii")


def _page(st, tree, link, cur, node):
    """One page of ``node``'s listing from offset cur["o"]: a file lists as itself."""
    with tree.lock:
        if node.children is None:
            children = [node]
        else:
            keys = tree.sorted_keys(node)
            children = [node.children[k] for k in keys[cur["o"]:cur["o"] + cur["l"]]]
        total = 1 if node.children is None else len(node.children)
    tree.ensure_hashes(children)
    with tree.lock:
        parts = [entry_json(_entry(tree, c)) for c in children if tree.alive(c)]
        end = cur["o"] + len(children)
        has_more = end < total and node.children is not None
        nxt = dict(cur, o=end if has_more else -1, j=len(tree.journal) if not has_more else cur["j"])
    st.count_page("files/list_folder", len(parts))
    return Reply(200, [("Content-Type", JSON_CT)], page_body(parts, _encode(nxt), has_more))


def get_shared_link_file(st, req, arg):
    from .routes_files import parse_range
    got = _open(st, arg.get("url"), arg.get("link_password"))
    if isinstance(got, Reply):
        return got
    link, tree = got
    path = arg.get("path") or ""
    with tree.lock:
        node, err = _walk(tree, link, path)
        if node is None:
            return _not_found()
        if node.children is not None:
            return route_error({".tag": "shared_link_is_directory"})
        if node.extra and "export_as" in node.extra:
            return route_error({".tag": "unsupported_link_type"})
        md = _link_metadata(tree, link, node)
        src = tree.source_of(node)
    base = [("Dropbox-API-Result", header_json(md)), ("Accept-Ranges", "bytes")]
    size = src.size
    rng = parse_range(req.headers.get("Range"), size)
    if rng == "unsatisfiable":
        from .httpio import error_reply
        return error_reply(416, {".tag": "range", "range": {".tag": "not_satisfiable"}},
                           [("Content-Range", "bytes */%d" % size)], summary="range/not_satisfiable/..")
    if rng is None:
        start, length, status, extra = 0, size, 200, []
    else:
        start, end = rng
        length, status = end - start + 1, 206
        extra = [("Content-Range", "bytes %d-%d/%d" % (start, end, size))]
    headers = [("Content-Type", "application/octet-stream")] + base + extra
    return Reply(status, headers, stream=src.iter_range(start, length), length=length, throttle=True)


def get_thumbnail_v2(st, req, arg):
    """files/get_thumbnail_v2 (content host, download style) of a file in a link: ``resource`` is
    a PathOrLink; only ``{".tag": "link", "url", "path"?, "password"?}`` is served (a ``path``
    resource is the batch route's business here).  The image is the batch route's, the result
    header a PreviewResult with ``link_metadata``."""
    from . import routes_files, thumbs
    res = arg.get("resource")
    if not isinstance(res, dict) or res.get(".tag") != "link":
        raise _arg_error("resource: only {\".tag\": \"link\"} is served by fakedropbox")
    fmt = routes_files._union(arg.get("format"), "format", thumbs.FORMATS, "jpeg")
    size = routes_files._union(arg.get("size"), "size", thumbs.SIZES, "w64h64")
    mode = routes_files._union(arg.get("mode"), "mode", thumbs.MODES, "strict")
    got = _open(st, res.get("url"), res.get("password"))
    if isinstance(got, Reply):
        tag = json.loads(got.body)["error"][".tag"]
        return route_error({".tag": "access_denied" if tag == "shared_link_access_denied" else "not_found"})
    link, tree = got
    with tree.lock:
        node, err = _walk(tree, link, res.get("path") or "")
        if node is None:
            return route_error({".tag": "path", "path": {".tag": err or "not_found"}})
        if node.children is not None:
            return route_error({".tag": "path", "path": {".tag": "not_file"}})
        bad = routes_files._not_thumbnailable(node.name, node.size)
        if bad is None and node.extra and "export_as" in node.extra:
            bad = {".tag": "unsupported_image"}
        if bad is not None:
            return route_error(bad)
        src = tree.source_of(node)
        rev = tree.metadata(node)["rev"]
    tree.ensure_hashes([node])
    with tree.lock:
        digest = node.hash
    pw, ph = thumbs.photo_size(routes_files._sniff_head(src), digest)
    tw, th = thumbs.fitted(pw, ph, thumbs.SIZES[size], mode)
    img = thumbs.thumbnail(fmt, tw, th, digest)
    st.count_thumbnails(1, 0, len(img))
    result = {"link_metadata": {"url": link.url, "rev": rev}}
    return Reply(200, [("Content-Type", "application/octet-stream"), ("Dropbox-API-Result", header_json(result))],
                 img)


ROUTES = {
    "files/get_thumbnail_v2": ("download", "files.content.read", get_thumbnail_v2),
    "sharing/get_shared_link_metadata": ("rpc", "sharing.read", get_shared_link_metadata),
    "sharing/get_shared_link_file": ("download", "sharing.read", get_shared_link_file),
}
