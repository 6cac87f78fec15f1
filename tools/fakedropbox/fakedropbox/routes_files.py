"""The files/* API routes: list_folder (+continue, get_latest_cursor,
longpoll), get_metadata, download, export and get_thumbnail_batch.

Exists to implement docs/DROPBOX-API.md ("Routes used" to "Ranges", and
"Thumbnails", "Exports") on top of tree.py.  Handlers
take (state, request, arg) and return an httpio.Reply; ArgError becomes a
plain-text 400.  Paths in arguments and replies are those of the request's
namespace view (``req.view``, see team.py); a cursor keeps the view it was
made in.
"""

import base64
import json
import random
import re
import time

from . import adversarial, links, thumbs
from .content import Source, content_hash_bytes
from .cursors import BadCursor, Cursor
from .httpio import (JSON_CT, Reply, entry_json, error_reply, header_json, json_reply,
                     lookup_error, page_body, route_error)
from .tree import fmt_time, id_str, key_of, rev_str

_json_str = json.encoder.encode_basestring  # json.dumps(str, ensure_ascii=False)

LIST_PATH_RE = re.compile(r"(/(.|[\r\n])*)?|id:.*|(ns:[0-9]+(/.*)?)")
READ_PATH_RE = re.compile(r"(/(.|[\r\n])*|id:.*)|(rev:[0-9a-f]{9,})|(ns:[0-9]+(/.*)?)")
DEFAULT_LIMIT = 500


class ArgError(Exception):
    """Invalid argument: answered as 400 'request body: <msg>'."""


def _field(arg, name, kind, default=None, required=False):
    if name not in arg or arg[name] is None:
        if required:
            raise ArgError("missing required field '%s'" % name)
        return default
    v = arg[name]
    if kind is bool and not isinstance(v, bool):
        raise ArgError("%s: '%s' expected to be a boolean, got %s" % (name, v, type(v).__name__))
    if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
        raise ArgError("%s: '%s' expected to be an integer, got %s" % (name, v, type(v).__name__))
    if kind is str and not isinstance(v, str):
        raise ArgError("%s: '%s' expected to be a string, got %s" % (name, v, type(v).__name__))
    return v


def _collapse(p):
    """Collapse repeated slashes and drop a trailing slash (rclone sends '//a')."""
    if p.startswith("/"):
        p = re.sub(r"/+", "/", p)
        if len(p) > 1 and p.endswith("/"):
            p = p[:-1]
    return p


def _check_list_path(p):
    if p == "/" or (p.startswith("/") and _collapse(p) == "/"):
        raise ArgError('path: Specify the root folder as an empty string rather than as "/".')
    if not LIST_PATH_RE.fullmatch(p):
        raise ArgError("path: '%s' did not match pattern '%s'" % (p, LIST_PATH_RE.pattern))
    return _collapse(p)


def _check_read_path(p):
    if p == "" or (p.startswith("/") and _collapse(p) == "/"):
        raise ArgError("path: The root folder is unsupported.")
    if not READ_PATH_RE.fullmatch(p):
        raise ArgError("path: '%s' did not match pattern '%s'" % (p, READ_PATH_RE.pattern))
    return _collapse(p)


# ---- list_folder family -------------------------------------------------------

def _list_args(arg):
    path = _check_list_path(_field(arg, "path", str, required=True))
    recursive = _field(arg, "recursive", bool, False)
    include_deleted = _field(arg, "include_deleted", bool, False)
    nondl = _field(arg, "include_non_downloadable_files", bool, True)
    for b in ("include_media_info", "include_has_explicit_shared_members",
              "include_mounted_folders", "include_restorable_info"):
        _field(arg, b, bool)
    limit = _field(arg, "limit", int)
    if limit is not None and not 1 <= limit <= 2000:
        raise ArgError("limit: %d is not within range [1, 2000]" % limit)
    return path, recursive, include_deleted, nondl, limit or DEFAULT_LIMIT


def _scope_error(tree, node, err):
    if node is None:
        return lookup_error(err or "not_found")
    if node.children is None:
        return lookup_error("not_folder")
    return None


def _is_nondl(node):
    return node.children is None and node.extra is not None and "export_as" in node.extra


def _cursor_scope(st, cur):
    """(folder node, None) for the folder cursor ``cur`` lists, or (None, the reply that ends
    it): 409 reset for another instance or epoch, a lookup error when the folder is gone. Caller
    holds the lock."""
    tree = st.tree
    if cur.inst != st.instance or cur.epoch != tree.epoch:
        return None, route_error({".tag": "reset"})
    scope, err = tree.resolve(cur.scope, st.root_ns, st.home_ns)
    bad = _scope_error(tree, scope, err)
    return (None, bad) if bad is not None else (scope, None)


def _reply(st, route, cur, got):
    """The reply to a listing request: ``got`` is an error Reply or the page
    (rendered entries, next cursor, has_more) served for cursor ``cur``.  The
    page is counted in the stats and its server time spent here, in the
    request's thread with the tree lock not held (paging.py)."""
    if isinstance(got, Reply):
        return got
    parts, nxt, has_more = got
    nxt = nxt.copy(pg=cur.pg + 1 if has_more else 0)
    st.count_page(route, len(parts))
    st.paging.spend(len(parts))
    return Reply(200, [("Content-Type", JSON_CT)], page_body(parts, nxt.encode(), has_more))


def _page(st, cur):
    """One page for cursor ``cur`` (in the cursor's view): an error Reply or
    (rendered entries, next cursor, has_more)."""
    tree = st.tree
    view = st.view_of(cur.view)
    items = []           # ("node", node) | ("md", dict) | ("ev", event)
    with tree.lock:
        scope, bad = _cursor_scope(st, cur)
        if bad is not None:
            return bad
        if cur.phase == "S":
            got = adversarial.snapshot_page(st, cur)
            if got is None:
                return route_error({".tag": "reset"})  # snapshot evicted
            return got
        if cur.phase == "J" and st.adv.modes:
            def visible(ev):
                return tree.in_scope(ev[1], ev[2], cur.scope, cur.recursive) and \
                    not (ev[0] == "u" and not cur.nondl and _is_nondl(ev[5]))
            events, nxt, has_more = adversarial.journal_page(st, cur, visible)
            return _adversarial_journal_page(st, view, cur, events, nxt, has_more)
        limit = st.paging.page_size(cur.limit, cur.pg)
        nxt = cur
        has_more = False
        if cur.phase == "L":
            kp = cur.keypath
            if kp is None:
                if cur.recursive and scope is not view.base:
                    items.append(("node", scope))
                kp = []
            done = True
            for node, kp2 in tree.iter_listing(scope, cur.recursive, kp):
                if len(items) >= limit:
                    done = False
                    break
                kp = kp2
                if not cur.nondl and _is_nondl(node):
                    continue
                items.append(("node", node))
            if not done:
                nxt = cur.copy(keypath=kp)
                has_more = True
            else:
                nxt = cur.copy(phase="T" if cur.deleted else "J", keypath=None, tidx=0)
        if nxt.phase == "T":
            tombs = tree.tombstones_under(cur.scope, cur.recursive)
            i = nxt.tidx
            while i < len(tombs) and len(items) < limit:
                pl, name, pd = tombs[i]
                pd, pl = view.rel(pd, pl)
                items.append(("md", tree.deleted_metadata(name, pd, pl)))
                i += 1
            if i < len(tombs):
                nxt = nxt.copy(tidx=i)
                has_more = True
            else:
                nxt = nxt.copy(phase="J", tidx=0)
        elif cur.phase == "J":
            j = cur.seq
            journal = tree.journal
            n = len(journal)
            while j < n and len(items) < limit:
                ev = journal[j]
                j += 1
                if not tree.in_scope(ev[1], ev[2], cur.scope, cur.recursive):
                    continue
                if ev[0] == "u" and not cur.nondl and _is_nondl(ev[5]):
                    continue
                items.append(("ev", ev))
            nxt = cur.copy(seq=j)
            if j < n:
                has_more = any(tree.in_scope(ev[1], ev[2], cur.scope, cur.recursive)
                               for ev in journal[j:n])
        # Entries already rendered (see Tree.json_cache) need no hashing or rendering.
        jc = view.json_cache(tree)
        parts = [jc.get(x) if kind == "node" else None for kind, x in items]
    nodes = [x for (kind, x), part in zip(items, parts) if kind == "node" and part is None] + \
            [x[5] for kind, x in items if kind == "ev" and x[5] is not None]
    if nodes:
        tree.ensure_hashes(nodes)
    # Each entry is rendered as JSON once and cached; the page is a join of the
    # cached texts, byte for byte what httpio.dumps of the whole object gives.
    if None in parts:
        with tree.lock:
            cache = view.path_cache()
            jc = view.json_cache(tree)
            for i, (kind, x) in enumerate(items):
                if parts[i] is not None:
                    continue
                if kind == "node":
                    js = _node_json(tree, x, cache)
                    if x.children is not None or x.hash is not None or _is_nondl(x):
                        jc[x] = js  # a file whose hash is not known yet is not final
                elif kind == "md":
                    js = _entry_json(x)
                else:
                    k, pl, _ppl, pd, name, node = x[:6]
                    pd, pl = view.rel(pd, pl)
                    if k == "d":
                        js = _entry_json(tree.deleted_metadata(name, pd, pl))
                    else:
                        js = _entry_json(tree.metadata(node, pd=pd, pl=pl, name=name))
                parts[i] = js
    return parts, nxt, has_more


def _adversarial_journal_page(st, view, cur, events, nxt, has_more):
    """Render a delta page chosen by adversarial.journal_page: (parts, nxt,
    has_more).  Lock held
    (missing hashes are computed under it: delta pages are short)."""
    tree = st.tree
    nodes = [ev[5] for ev in events if ev[0] == "u"]
    if nodes:
        tree.ensure_hashes(nodes)
    rng = random.Random("R|%d|%s|%d|%d" % (st.adv.seed, cur.scope, cur.seq, cur.tidx))
    parts = []
    for ev in events:
        if ev[0] == "ghost":
            md = ev[1]
        else:
            k, pl, _ppl, pd, name, node = ev[:6]
            pd, pl = view.rel(pd, pl)
            if k == "d":
                md = tree.deleted_metadata(name, pd, pl)
            else:
                md = tree.metadata(node, pd=pd, pl=pl, name=name)
        parts.append(st.adv.render(md, rng))
    return parts, nxt, has_more


_FILE_JSON = ('{".tag": "file", "name": %s, "path_lower": %s, "path_display": %s, '
              '"id": "%s", "client_modified": "%s", "server_modified": "%s", "rev": "%s", '
              '"size": %d, "is_downloadable": true, "content_hash": "%s"}')


def _node_json(tree, node, cache):
    """_entry_json(tree.metadata(node, cache)), with a direct rendering of the
    common case (a plain downloadable file whose hash is known)."""
    if node.children is not None or node.extra is not None or node.hash is None \
            or type(node.size) is not int or tree.shared:
        return _entry_json(tree.metadata(node, cache))
    pd, pl = tree.paths(node, cache)
    t = fmt_time(tree.mtime_of(node))
    s = _FILE_JSON % (_json_str(node.name), _json_str(pl), _json_str(pd), id_str(node.num),
                      t, t, rev_str(tree.rev_of(node)), node.size, node.hash.hex())
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        return s


_entry_json = entry_json


def list_folder(st, req, arg):
    path, recursive, include_deleted, nondl, limit = _list_args(arg)
    if arg.get("shared_link") is not None:
        return links.list_folder(st, req, arg, path, recursive, limit)
    tree = st.tree
    view = req.view
    with tree.lock:
        node, err = view.resolve(tree, path, st.root_ns, st.home_ns)
        bad = _scope_error(tree, node, err)
        if bad is not None:
            return bad
        if (node.extra or {}).get("access") == "no_access":
            return lookup_error("restricted_content")   # a folder this account may not open
        scope_pl = tree.paths(node)[1]
        cur = Cursor(st.instance, tree.epoch, scope_pl, recursive, include_deleted,
                     nondl, limit, len(tree.journal), phase="L", keypath=None,
                     view=view.tag)
    if st.adv.modes:
        return _reply(st, req.route, cur, adversarial.list_folder(st, cur, _cursor_scope))
    return _reply(st, req.route, cur, _page(st, cur))


def _decode_cursor(arg, route):
    c = _field(arg, "cursor", str, required=True)
    if not c:
        raise ArgError("cursor: length must be at least 1")
    try:
        return Cursor.decode(c)
    except BadCursor:
        raise ArgError('cursor: invalid cursor "%s"' % c[:40])


def list_folder_continue(st, req, arg):
    if links.is_cursor(arg.get("cursor")):
        return links.list_folder_continue(st, req, arg["cursor"])
    cur = _decode_cursor(arg, req.route)
    return _reply(st, req.route, cur, _page(st, cur))


def get_latest_cursor(st, req, arg):
    path, recursive, include_deleted, nondl, limit = _list_args(arg)
    if arg.get("shared_link") is not None:
        raise ArgError("shared_link: the fake has no cursor of a link's changes")
    tree = st.tree
    view = req.view
    with tree.lock:
        node, err = view.resolve(tree, path, st.root_ns, st.home_ns)
        bad = _scope_error(tree, node, err)
        if bad is not None:
            return bad
        cur = Cursor(st.instance, tree.epoch, tree.paths(node)[1], recursive,
                     include_deleted, nondl, limit, len(tree.journal), view=view.tag)
    return json_reply({"cursor": cur.encode()})


def longpoll(st, req, arg):
    cur = _decode_cursor(arg, req.route)
    st.use_account_of_instance(cur.inst)    # no token here: the cursor names the account
    timeout = _field(arg, "timeout", int, 30)
    if timeout < 1:
        raise ArgError("timeout: %d is not within range [30, 480]" % timeout)
    if timeout > 480:
        raise ArgError("timeout: %d is not within range [30, 480]" % timeout)
    tree = st.tree
    deadline = time.monotonic() + timeout
    with tree.changed:
        if cur.inst != st.instance or cur.epoch != tree.epoch:
            return route_error({".tag": "reset"})
        changes = False
        pos = cur.seq
        while True:
            if cur.phase != "J" or tree.epoch != cur.epoch:
                changes = True
                break
            journal = tree.journal
            for ev in journal[pos:]:
                if tree.in_scope(ev[1], ev[2], cur.scope, cur.recursive):
                    changes = True
                    break
            pos = len(journal)
            if changes:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            tree.changed.wait(min(left, 1.0))
    body = {"changes": changes}
    if st.longpoll_backoff:
        body["backoff"] = int(st.longpoll_backoff)
    return json_reply(body)


# ---- metadata ------------------------------------------------------------------

def _resolve_read(st, view, path):
    """-> ("live", node) | ("old", OldRev) | (None, errtag).  Lock held.
    Only entries inside ``view`` are found (an old rev by its last path)."""
    tree = st.tree
    if path.startswith("rev:"):
        kind, obj = tree.resolve_rev(path[4:])
        if kind == "live" and not view.contains(obj) or \
                kind == "old" and not view.contains_pl(obj.pl):
            kind = None
        return (kind, obj) if kind else (None, "not_found")
    node, err = view.resolve(tree, path, st.root_ns, st.home_ns)
    if node is None:
        return None, err
    return "live", node


def get_metadata(st, req, arg):
    path = _check_read_path(_field(arg, "path", str, required=True))
    include_deleted = _field(arg, "include_deleted", bool, False)
    for b in ("include_media_info", "include_has_explicit_shared_members"):
        _field(arg, b, bool)
    tree = st.tree
    view = req.view
    with tree.lock:
        kind, obj = _resolve_read(st, view, path)
        if kind is None:
            if include_deleted and path.startswith("/"):
                pl = view.pl + "/".join(key_of(c) for c in path.split("/"))
                t = tree.tombstones.get(pl)
                if t is not None:
                    pd, pl = view.rel(t[1], pl)
                    return json_reply(st.adv.fix_md(tree.deleted_metadata(t[0], pd, pl)))
            return lookup_error(obj)
        if kind != "old" and obj is view.base:
            raise ArgError("path: The root folder is unsupported.")
        node = obj
    if kind == "old":
        if obj.hash is None and not (obj.extra and "export_as" in obj.extra):
            obj.hash = obj.source.content_hash()  # outside the lock: may be large
        with tree.lock:
            return json_reply(st.adv.fix_md(view.fix(tree.old_metadata(obj))))
    tree.ensure_hashes([node])
    with tree.lock:
        if path.startswith("rev:"):
            pd, pl = view.rel(*tree.paths(node))
            return json_reply(st.adv.fix_md(tree.file_metadata(
                node.num, node.name, pd, pl, tree.rev_of(node), node.size,
                tree.mtime_of(node), node.hash, node.extra, with_symlink=False)))
        return json_reply(st.adv.fix_md(view.fix(tree.metadata(node))))


# ---- download / export ------------------------------------------------------------

RANGE_RE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$")


def parse_range(header, size):
    """-> None (serve all), (start, end_inclusive), or "unsatisfiable"."""
    if not header:
        return None
    m = RANGE_RE.match(header)
    if not m or (m.group(1) == "" and m.group(2) == ""):
        return None  # unsupported/malformed (e.g. multi-range): ignore it
    a, b = m.group(1), m.group(2)
    if a == "":
        n = int(b)
        if n == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - n), size - 1
    start = int(a)
    end = int(b) if b != "" else size - 1
    if b != "" and end < start:
        return None
    if start >= size:
        return "unsatisfiable"
    return start, min(end, size - 1)


def _file_for_download(st, view, path, route):
    """-> (metadata dict in ``view``'s paths, Source, extra) or a Reply (error)."""
    got = _read_file(st, view, path)
    return lookup_error(got) if isinstance(got, str) else got


def _read_file(st, view, path, before_hash=None):
    """-> (metadata dict in ``view``'s paths, Source, extra), or the LookupError tag.
    ``before_hash(name, size)``, if given, may return a value that is returned instead,
    before any content hash is computed."""
    tree = st.tree
    with tree.lock:
        kind, obj = _resolve_read(st, view, path)
        if kind is None:
            return obj
        if kind == "live" and obj.children is not None:
            return "not_file"
        if kind == "live" and (obj.extra or {}).get("restricted"):
            return "restricted_content"   # Dropbox will not serve this file's content
        if before_hash is not None:
            early = before_hash(obj.name, obj.size)
            if early is not None:
                return early
    if kind == "live":
        tree.ensure_hashes([obj])
        with tree.lock:
            node = obj
            extra = node.extra or {}
            if path.startswith("rev:"):
                pd, pl = view.rel(*tree.paths(node))
                md = tree.file_metadata(node.num, node.name, pd, pl, tree.rev_of(node),
                                        node.size, tree.mtime_of(node), node.hash,
                                        node.extra, with_symlink=False)
            else:
                md = view.fix(tree.metadata(node))
            src = tree.source_of(node)
    else:
        o = obj
        extra = o.extra or {}
        if o.hash is None and "export_as" not in extra:
            o.hash = o.source.content_hash()
        md = view.fix(tree.old_metadata(o))
        src = o.source
    return st.adv.fix_md(md), src, extra


def download(st, req, arg):
    path = _check_read_path(_field(arg, "path", str, required=True))
    rev = _field(arg, "rev", str)
    if rev:
        path = "rev:" + rev
    got = _file_for_download(st, req.view, path, req.route)
    if isinstance(got, Reply):
        return got
    md, src, extra = got
    if "export_as" in extra:
        return route_error({".tag": "unsupported_file"})
    etag = 'W/"%s"' % md["rev"]
    base = [("Dropbox-API-Result", header_json(md)), ("Accept-Ranges", "bytes"),
            ("ETag", etag)]
    inm = req.headers.get("If-None-Match")
    if inm and etag in [x.strip() for x in inm.split(",")] + ["*"]:
        return Reply(304, base)
    size = src.size
    rng = parse_range(req.headers.get("Range"), size)
    if rng == "unsatisfiable":
        r = error_reply(416, {".tag": "range", "range": {".tag": "not_satisfiable"}},
                        [("Content-Range", "bytes */%d" % size)],
                        summary="range/not_satisfiable/..")
        return r
    if rng is None:
        start, length, status = 0, size, 200
        extra_h = []
    else:
        start, end = rng
        length, status = end - start + 1, 206
        extra_h = [("Content-Range", "bytes %d-%d/%d" % (start, end, size))]
    headers = [("Content-Type", "application/octet-stream")] + base + extra_h
    return Reply(status, headers, stream=src.iter_range(start, length), length=length,
                 throttle=True)


def _export_bytes(md, fmt, size=None):
    """The export of a document; with ``size`` (the control's export_size), padded with
    numbered lines to exactly that many bytes (or cut to it)."""
    data = _export_text(md, fmt)
    if size is None:
        return data
    lines, n = [data], len(data)
    while n < size:
        line = b"%012d\n" % n
        lines.append(line)
        n += len(line)
    return b"".join(lines)[:size]


def _export_text(md, fmt):
    title = md["name"].rsplit(".", 1)[0]
    if fmt == "markdown":
        text = "# %s\n\nExported by fakedropbox from rev %s.\n" % (title, md["rev"])
    else:
        text = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>%s</title></head>"
                "<body><h1>%s</h1><p>Exported by fakedropbox from rev %s.</p></body></html>\n"
                % (title, title, md["rev"]))
    return text.encode("utf-8")


def export(st, req, arg):
    path = _check_read_path(_field(arg, "path", str, required=True))
    fmt = _field(arg, "export_format", str)
    got = _file_for_download(st, req.view, path, req.route)
    if isinstance(got, Reply):
        return got
    md, _src, extra = got
    if "export_as" not in extra:
        return route_error({".tag": "non_exportable"})
    fmt = fmt or extra["export_as"]
    if fmt not in extra.get("export_options", [extra["export_as"]]):
        return route_error({".tag": "invalid_export_format"})
    data = _export_bytes(md, fmt, extra.get("export_size"))
    ext = {"html": ".html", "markdown": ".md"}.get(fmt, "." + fmt)
    result = {"export_metadata": {"name": md["name"].rsplit(".", 1)[0] + ext,
                                  "size": len(data),
                                  "export_hash": content_hash_bytes([data]).hex()},
              "file_metadata": md}
    headers = [("Content-Type", "application/octet-stream"),
               ("Dropbox-API-Result", header_json(result))]
    src = Source("bytes", data, len(data))
    return Reply(200, headers, stream=src.iter_range(0, len(data)), length=len(data),
                 throttle=True)


# ---- get_thumbnail_batch ----------------------------------------------------------------

def _union(v, where, allowed, default):
    """A void-member union argument: a bare string or {".tag": ...}; None -> default."""
    if v is None:
        return default
    tag = v.get(".tag") if isinstance(v, dict) else v
    if not isinstance(tag, str):
        raise ArgError("%s: expected a union tag, got %s" % (where, type(v).__name__))
    if tag not in allowed:
        raise ArgError("%s: unknown tag '%s'" % (where, tag))
    return tag


def _thumbnail_args(arg):
    entries = arg.get("entries")
    if entries is None:
        raise ArgError("missing required field 'entries'")
    if not isinstance(entries, list):
        raise ArgError("entries: expected list, got %s" % type(entries).__name__)
    out = []
    for i, e in enumerate(entries):
        where = "entries[%d]" % i
        if not isinstance(e, dict):
            raise ArgError("%s: expected object, got %s" % (where, type(e).__name__))
        try:
            path = _check_read_path(_field(e, "path", str, required=True))
            _field(e, "exclude_media_info", bool)
        except ArgError as x:
            raise ArgError("%s.%s" % (where, x))
        out.append((path,
                    _union(e.get("format"), where + ".format", thumbs.FORMATS, "jpeg"),
                    _union(e.get("size"), where + ".size", thumbs.SIZES, "w64h64"),
                    _union(e.get("mode"), where + ".mode", thumbs.MODES, "strict")))
    return out


def _not_thumbnailable(name, size):
    """The ThumbnailError of a file that is not converted, judged by name and size alone."""
    if not thumbs.extension_ok(name):
        return {".tag": "unsupported_extension"}
    if size > thumbs.MAX_IMAGE_BYTES or size == 0:
        return {".tag": "unsupported_image"}
    return None


def _sniff_head(src):
    """The first bytes of a file, enough to read a real image's pixel size."""
    head = b"".join(bytes(c) for c in src.iter_range(0, min(src.size, 32)))
    if head[:2] == b"\xff\xd8":  # JPEG: the frame header may follow large EXIF segments
        head = b"".join(bytes(c) for c in src.iter_range(0, min(src.size, thumbs.SNIFF_BYTES)))
    return head


def get_thumbnail_batch(st, req, arg):
    """files/get_thumbnail_batch (content host, RPC style): one entry per input, in order."""
    wanted = _thumbnail_args(arg)
    if len(wanted) > thumbs.MAX_BATCH:
        return route_error({".tag": "too_many_files"})
    out = []
    ok = failed = nbytes = 0
    for path, fmt, size, mode in wanted:
        got = _read_file(st, req.view, path, _not_thumbnailable)
        if isinstance(got, str):
            failure = {".tag": "path", "path": {".tag": got}}
        elif isinstance(got, dict):
            failure = got
        else:
            md, src, extra = got
            if "export_as" in extra:
                failure = {".tag": "unsupported_image"}
            else:
                digest = bytes.fromhex(md["content_hash"])
                pw, ph = thumbs.photo_size(_sniff_head(src), digest)
                tw, th = thumbs.fitted(pw, ph, thumbs.SIZES[size], mode)
                img = thumbs.thumbnail(fmt, tw, th, digest)
                out.append({".tag": "success", "metadata": md,
                            "thumbnail": base64.b64encode(img).decode("ascii")})
                ok += 1
                nbytes += len(img)
                continue
        out.append({".tag": "failure", "failure": failure})
        failed += 1
    st.count_thumbnails(ok, failed, nbytes)
    return json_reply({"entries": out})


ROUTES = {
    # route: (style, auth scope or None for noauth, handler)
    "files/list_folder": ("rpc", "files.metadata.read", list_folder),
    "files/list_folder/continue": ("rpc", "files.metadata.read", list_folder_continue),
    "files/list_folder/get_latest_cursor": ("rpc", "files.metadata.read", get_latest_cursor),
    "files/list_folder/longpoll": ("rpc", None, longpoll),
    "files/get_metadata": ("rpc", "files.metadata.read", get_metadata),
    "files/download": ("download", "files.content.read", download),
    "files/export": ("download", "files.content.read", export),
    # Content host, RPC style (JSON body, JSON reply); all hosts share the port.
    "files/get_thumbnail_batch": ("rpc", "files.content.read", get_thumbnail_batch),
}
