"""files/list_revisions and the control calls that shape a file's history.

Exists so clients can browse earlier versions and deleted files as Dropbox
offers them (docs/DROPBOX-API.md, "History"): a file's revisions newest
first, in ``path`` mode (every revision that lived at the latest entry's path,
across deletions and re-creations) or ``id`` mode (every revision of one file
id, across moves and renames); ``before_rev`` pages in path mode only;
``is_deleted``/``server_deleted`` when no file lives at the path (path mode)
or the id is gone (id mode).  The history itself is tree.py's: a modify or a
delete retires the revision into ``Tree.old_revs`` (still downloadable by
``rev:``), a delete records ``Tree.deleted_at``.  ``expire_revision`` forgets
an old revision, as Dropbox does once its retention ends.

THREAD-SAFETY: everything here reads or mutates the tree under ``tree.lock``;
missing content hashes of old revisions are computed outside it.
"""

from .httpio import json_reply, lookup_error, route_error
from .tree import fmt_time, key_of, parse_id, parse_rev

DEFAULT_LIMIT = 10
MAX_LIMIT = 100


def _lower(path):
    return "/".join(key_of(c) for c in path.split("/"))


def _revisions_at(tree, pl):
    """[(revnum, "live"|"old", obj)] of path_lower ``pl``, newest first.  Lock held."""
    out = [(o.revnum, "old", o) for o in tree.old_revs.values() if o.pl == pl]
    node, _ = tree.walk(tree.root, pl)
    if node is not None and node.children is None:
        out.append((tree.rev_of(node), "live", node))
    out.sort(key=lambda x: -x[0])
    return out, node is not None and node.children is None


def _revisions_of(tree, num):
    """[(revnum, kind, obj)] of file id ``num`` newest first, and whether it still lives."""
    out = [(o.revnum, "old", o) for o in tree.old_revs.values() if o.num == num]
    node = tree.nodes[num] if 0 <= num < len(tree.nodes) else None
    live = node is not None and node.children is None
    if live:
        out.append((tree.rev_of(node), "live", node))
    out.sort(key=lambda x: -x[0])
    return out, live


def _target(st, view, path, mode):
    """-> (revisions newest first, is_deleted, deleted path_lower or None) or an error Reply.
    Lock held.  ``path`` is already checked and collapsed."""
    tree = st.tree
    if path.startswith("id:"):
        ident, _, rest = path[3:].partition("/")
        num = parse_id(ident)
        if num is None:
            return lookup_error("not_found")
        if not rest:
            if mode == "id":
                revs, live = _revisions_of(tree, num)
                revs = [r for r in revs if r[1] == "live" or view.contains_pl(r[2].pl)]
                last_pl = None if live or not revs else revs[0][2].pl
                return (revs, not live, last_pl) if revs else lookup_error("not_found")
            node = tree.nodes[num] if 0 <= num < len(tree.nodes) else None
            if node is None:
                old = sorted((o for o in tree.old_revs.values() if o.num == num),
                             key=lambda o: -o.revnum)
                if not old:
                    return lookup_error("not_found")
                pl = old[0].pl
            elif node.children is not None:
                return lookup_error("not_file")
            else:
                pl = tree.paths(node)[1]
        else:
            node, err = view.resolve(tree, path, st.root_ns, st.home_ns)
            if node is None:
                return lookup_error(err)
            if node.children is not None:
                return lookup_error("not_file")
            pl = tree.paths(node)[1]
    elif path.startswith("/"):
        pl = view.pl + _lower(path)
    else:  # ns:
        node, err = view.resolve(tree, path, st.root_ns, st.home_ns)
        if node is None:
            return lookup_error(err)
        if node.children is not None:
            return lookup_error("not_file")
        pl = tree.paths(node)[1]
    if mode == "id":
        node, _ = tree.walk(tree.root, pl)
        if node is not None and node.children is None:
            num = node.num
        else:
            old = sorted((o for o in tree.old_revs.values() if o.pl == pl), key=lambda o: -o.revnum)
            if not old:
                return lookup_error("not_file" if node is not None else "not_found")
            num = old[0].num
        revs, live = _revisions_of(tree, num)
        return revs, not live, (None if live else revs[0][2].pl if revs[0][1] == "old" else None)
    revs, live = _revisions_at(tree, pl)
    if not revs:
        node, _ = tree.walk(tree.root, pl)
        return lookup_error("not_file" if node is not None else "not_found")
    return revs, not live, (None if live else pl)


def list_revisions(st, req, arg):
    from .routes_files import ArgError, _check_read_path, _field
    path = _field(arg, "path", str, required=True)
    if path.startswith("rev:"):
        raise ArgError("path: '%s' did not match pattern '%s'" % (path, "(/(.|[\\r\\n])*|id:.*)|(ns:[0-9]+(/.*)?)"))
    path = _check_read_path(path)
    mode = arg.get("mode") or "path"
    if isinstance(mode, dict):
        mode = mode.get(".tag")
    if mode not in ("path", "id"):
        raise ArgError("mode: unknown tag '%s'" % mode)
    limit = _field(arg, "limit", int, DEFAULT_LIMIT)
    if not 1 <= limit <= MAX_LIMIT:
        raise ArgError("limit: %d is not within range [1, %d]" % (limit, MAX_LIMIT))
    before = _field(arg, "before_rev", str)
    if before is not None and mode == "id":
        return route_error({".tag": "before_rev_not_supported"})
    tree = st.tree
    view = req.view
    with tree.lock:
        got = _target(st, view, path, mode)
        if not isinstance(got, tuple):
            return got
        revs, is_deleted, deleted_pl = got
        if before is not None:
            n = parse_rev(before)
            idx = next((i for i, r in enumerate(revs) if r[0] == n), None)
            if idx is None:
                return route_error({".tag": "invalid_before_rev"})
            revs = revs[idx + 1:]
        page, has_more = revs[:limit], len(revs) > limit
        when = tree.deleted_at.get(deleted_pl) if is_deleted and deleted_pl else None
    olds = [obj for _, kind, obj in page if kind == "old"]
    for o in olds:
        if o.hash is None and not (o.extra and "export_as" in o.extra):
            o.hash = o.source.content_hash()  # outside the lock: may be large
    tree.ensure_hashes([obj for _, kind, obj in page if kind == "live"])
    with tree.lock:
        entries = []
        for _, kind, obj in page:
            if kind == "old":
                md = tree.old_metadata(obj)
            else:
                pd, pl = tree.paths(obj)
                md = tree.file_metadata(obj.num, obj.name, pd, pl, tree.rev_of(obj), obj.size,
                                        tree.mtime_of(obj), obj.hash, obj.extra, with_symlink=False)
            entries.append(st.adv.fix_md(view.fix(md)))
    body = {"is_deleted": is_deleted, "entries": entries, "has_more": has_more}
    if when is not None:
        body["server_deleted"] = fmt_time(when)
    return json_reply(body)


def expire_revision(st, rev):
    """Forget old revision ``rev`` (as Dropbox does when its retention ends): True if it was
    known.  The current revision of a live file cannot expire."""
    n = parse_rev(rev)
    tree = st.tree
    with tree.lock:
        return tree.old_revs.pop(n, None) is not None


def history(st, path):
    """The control API's view of a path's history (path mode, newest first): rev,
    server_modified, size, content_hash, live."""
    tree = st.tree
    pl = _lower(path)
    with tree.lock:
        revs, _ = _revisions_at(tree, pl)
    out = []
    for revnum, kind, obj in revs:
        if kind == "old":
            if obj.hash is None and not (obj.extra and "export_as" in obj.extra):
                obj.hash = obj.source.content_hash()
            md = tree.old_metadata(obj)
        else:
            tree.ensure_hashes([obj])
            with tree.lock:
                md = tree.metadata(obj)
        out.append({"rev": md["rev"], "server_modified": md["server_modified"], "size": md["size"],
                    "content_hash": md.get("content_hash"), "live": kind == "live"})
    with tree.lock:
        when = tree.deleted_at.get(pl)
    return {"entries": out, "deleted_at": fmt_time(when) if when is not None else None}


ROUTES = {
    "files/list_revisions": ("rpc", "files.metadata.read", list_revisions),
}
