"""The account's file tree, revision store, tombstones and change journal.

Exists as the single source of truth every route reads and every control call
mutates.  THREAD-SAFETY: one lock, ``Tree.lock`` (an RLock wrapped by the
Condition ``Tree.changed``), guards every field of the tree, its nodes, the
journal, revisions and tombstones.  Hold it for short critical sections only;
content hashing and body streaming happen outside it (see ``ensure_hashes``).
Mutations notify ``Tree.changed`` so longpolls wake up.
"""

import base64
import bisect
import threading
import time
import unicodedata

from .content import Source

REV_BASE = 0x5A0000000000          # rev strings are 12 lowercase hex digits
DYNAMIC_REV_START = 1 << 40        # revs created after start-up
ID_PREFIX = bytes.fromhex("6b8ac73f00a4e2d1")
PAST_MARGIN = 2                    # server_modified is at least this far in the past


def key_of(name):
    """Component of path_lower: NFC-normalised, lower-cased."""
    return unicodedata.normalize("NFC", name).lower()


def fold_path(text):
    """The folding of adversarial mode "fold" (see adversarial.py): NFC, then
    str.lower() of the whole string (Greek final sigma in context), then
    ß -> ss, ﬁ -> fi, ﬂ -> fl, i + U+0307 -> i.  Differs on purpose from a
    per-scalar lower-casing; key_of stays the fake's own key."""
    s = unicodedata.normalize("NFC", text).lower()
    return s.replace("\u00df", "ss").replace("\ufb01", "fi").replace("\ufb02", "fl") \
            .replace("i\u0307", "i")


def fmt_time(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def rev_str(revnum):
    return format(REV_BASE + revnum, "x")


def parse_rev(s):
    try:
        n = int(s, 16) - REV_BASE
    except ValueError:
        return None
    if n <= 0 or rev_str(n) != s:
        return None
    return n


def id_str(num):
    raw = ID_PREFIX + num.to_bytes(8, "big")
    return "id:" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def parse_id(s):
    try:
        raw = base64.urlsafe_b64decode(s + "==")
    except Exception:
        return None
    if len(raw) != 16 or raw[:8] != ID_PREFIX:
        return None
    return int.from_bytes(raw[8:], "big")


class Node:
    """One file or folder.  Kept small: a million of these must fit in memory.

    Folders have ``children`` (dict key_of(name) -> Node) and use ``content`` as
    a cache of their sorted child keys.  Files have children None.
    ``rev``/``mtime``/``content`` of a synthetic file may be None, meaning
    "derived from num" (see Tree.rev_of / mtime_of / source_of).
    ``extra`` is None or a dict: symlink, export_as, client_modified, key.
    """

    __slots__ = ("name", "parent", "num", "rev", "size", "mtime", "content",
                 "hash", "children", "extra")

    def __init__(self, name, parent, num, children=None, size=0, content=None,
                 rev=None, mtime=None, extra=None):
        self.name = name
        self.parent = parent
        self.num = num
        self.rev = rev
        self.size = size
        self.mtime = mtime
        self.content = content
        self.hash = None
        self.children = children
        self.extra = extra

    @property
    def is_folder(self):
        return self.children is not None


class OldRev:
    """A file revision that is no longer current (still downloadable by rev:)."""

    __slots__ = ("revnum", "num", "name", "pd", "pl", "size", "mtime", "source",
                 "hash", "extra")


class TreeError(Exception):
    """A control-API mutation that cannot be done (maps to HTTP 409 on /_control)."""


class Tree:
    def __init__(self, seed=1):
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.seed = seed
        self.root = Node("", None, 0, children={})
        self.nodes = [self.root]          # index = num; None once deleted
        self.next_rev = DYNAMIC_REV_START
        self.live_revs = {}               # revnum -> Node, for dynamic revs
        self.old_revs = {}                # revnum -> OldRev
        self.tombstones = {}              # path_lower -> (name, path_display)
        # (kind 'u'|'d', pl, parent_pl, pd, name, node, batch, was_folder):
        # node is None for 'd'; batch numbers the control call that logged the
        # event; was_folder tells what a 'd' removed (adversarial.py uses both).
        self.journal = []
        self.batch = 0
        self.epoch = 0                    # bumped by reset_cursors
        self.base_time = 1420070400      # 2015-01-01, synthetic mtimes start here
        self.time_span = 8 * 365 * 86400
        # Serialized listing entries: Node -> JSON text of metadata(node), so a
        # 2000-entry page is a join of cached strings.  Any mutation replaces
        # the whole dict (a move or rename changes every descendant's paths);
        # setting a lazy hash drops that node's entry.
        self.json_cache = {}
        self.json_cache_home = {}         # the same, paths relative to home
        # --team: the member's home folder (see team.py); it cannot be
        # deleted, moved or replaced.  None without --team.
        self.home = None
        self.shared = False  # some folder is a shared (team) folder: entries carry sharing_info
        # Adversarial mode "fold": a path component that misses its key also
        # matches a child whose fold_path equals the component's.
        self.fold_lookup = False

    def invalidate_json(self):
        """Forget every cached entry rendering.  Call on any tree mutation."""
        if self.json_cache:
            self.json_cache = {}
        if self.json_cache_home:
            self.json_cache_home = {}

    # ---- building (start-up, no journal) -------------------------------------
    def _new_num(self):
        self.nodes.append(None)
        return len(self.nodes) - 1

    def add_child(self, parent, name, folder=False, size=0, content=None,
                  mtime=None, extra=None, key=None, rev=None):
        """Attach a new node under ``parent`` (no journal).  Returns the node."""
        num = self._new_num()
        if folder:
            node = Node(name, parent, num, children={})
        else:
            node = Node(name, parent, num, size=size, content=content,
                        rev=rev, mtime=mtime, extra=extra)
        self.nodes[num] = node
        self.invalidate_json()
        if key is None:
            key = key_of(name)
        elif key != key_of(name):
            node.extra = dict(node.extra or {}, key=key)
        parent.children[key] = node
        parent.content = None
        return node

    # ---- derived attributes ---------------------------------------------------
    def rev_of(self, node):
        return node.num if node.rev is None else node.rev

    def mtime_of(self, node):
        if node.mtime is not None:
            return node.mtime
        return self.base_time + (node.num * 2654435761 + self.seed * 97) % self.time_span

    def synth_seed(self, node):
        return (self.seed * 1000003 + node.num * 7919) & ((1 << 62) - 1)

    def source_of(self, node):
        c = node.content
        if c is None:
            return Source("synth", self.synth_seed(node), node.size)
        if isinstance(c, int):
            return Source("synth", c, node.size)
        if isinstance(c, (bytes, bytearray)):
            return Source("bytes", c, node.size)
        return Source("disk", c, node.size)

    def node_key(self, node):
        e = node.extra
        if e and "key" in e:
            return e["key"]
        return key_of(node.name)

    def paths(self, node, cache=None):
        """(path_display, path_lower) of a node; root is ("", "")."""
        if node.parent is None:
            return "", ""
        if cache is not None:
            hit = cache.get(node)
            if hit is not None:
                return hit
        ppd, ppl = self.paths(node.parent, cache)
        res = (ppd + "/" + node.name, ppl + "/" + key_of(node.name))
        if cache is not None and node.children is not None:
            cache[node] = res
        return res

    def sorted_keys(self, folder):
        keys = folder.content
        if keys is None:
            keys = sorted(folder.children)
            folder.content = keys
        return keys

    def alive(self, node):
        return 0 <= node.num < len(self.nodes) and self.nodes[node.num] is node

    # ---- metadata rendering ---------------------------------------------------
    def metadata(self, node, cache=None, pd=None, pl=None, name=None):
        if pd is None:
            pd, pl = self.paths(node, cache)
        if name is None:
            name = node.name
        if node.children is not None:
            md = {".tag": "folder", "name": name, "path_lower": pl,
                  "path_display": pd, "id": id_str(node.num)}
        else:
            md = self.file_metadata(node.num, name, pd, pl, self.rev_of(node),
                                    node.size, self.mtime_of(node), node.hash,
                                    node.extra)
        if self.shared or (node.extra and "access" in node.extra):
            sharing = self.sharing_of(node)
            if sharing is not None:
                md["sharing_info"] = sharing
        return md

    def sharing_of(self, node):
        """sharing_info of an entry in or of a shared folder (a folder whose extra has
        shared_folder_id), shaped as Dropbox sends it; None elsewhere."""
        own = node.extra.get("shared_folder_id") if node.children is not None and node.extra else None
        outer = node.parent
        while outer is not None and not (outer.extra and "shared_folder_id" in outer.extra):
            outer = outer.parent
        if node.children is not None:
            access = (node.extra or {}).get("access")
            if access is not None:
                info = self._folder_sharing(node, own, outer)
                info["traverse_only"] = access == "traverse_only"
                info["no_access"] = access == "no_access"
                return info
            if own is not None:
                info = {"read_only": bool(node.extra.get("read_only")), "shared_folder_id": own,
                        "traverse_only": False, "no_access": False}
            elif outer is not None:
                info = {"read_only": bool(outer.extra.get("read_only")), "traverse_only": False,
                        "no_access": False}
            else:
                return None
            if outer is not None:
                info["parent_shared_folder_id"] = outer.extra["shared_folder_id"]
            return info
        if outer is None:
            return None
        return {"read_only": bool(outer.extra.get("read_only")),
                "parent_shared_folder_id": outer.extra["shared_folder_id"],
                "modified_by": "dbid:AADteammate0000000000000000000000000"}

    def _folder_sharing(self, node, own, outer):
        """The sharing_info of a folder with its own access level (traverse_only, no_access),
        in or outside a shared folder."""
        source = node.extra if own is not None else (outer.extra if outer is not None else {})
        info = {"read_only": bool(source.get("read_only"))}
        if own is not None:
            info["shared_folder_id"] = own
        if outer is not None:
            info["parent_shared_folder_id"] = outer.extra["shared_folder_id"]
        return info

    def file_metadata(self, num, name, pd, pl, revnum, size, mtime, digest,
                      extra, with_symlink=True):
        e = extra or {}
        cm = e.get("client_modified", mtime)
        md = {".tag": "file", "name": name, "path_lower": pl, "path_display": pd,
              "id": id_str(num), "client_modified": fmt_time(cm),
              "server_modified": fmt_time(mtime), "rev": rev_str(revnum),
              "size": size}
        if "export_as" in e:
            md["is_downloadable"] = False
            md["export_info"] = {"export_as": e["export_as"],
                                 "export_options": e.get("export_options", [e["export_as"]])}
        else:
            md["is_downloadable"] = True
            if digest is not None:
                md["content_hash"] = digest.hex()
        if with_symlink and "symlink" in e:
            md["symlink_info"] = {"target": e["symlink"]}
        return md

    def old_metadata(self, o):
        return self.file_metadata(o.num, o.name, o.pd, o.pl, o.revnum, o.size,
                                  o.mtime, o.hash, o.extra, with_symlink=False)

    @staticmethod
    def deleted_metadata(name, pd, pl):
        return {".tag": "deleted", "name": name, "path_lower": pl, "path_display": pd}

    # ---- lazy hashes ----------------------------------------------------------
    def ensure_hashes(self, nodes):
        """Compute missing content hashes of ``nodes`` without holding the lock
        during hashing.  Call WITHOUT the lock held."""
        todo = []
        with self.lock:
            for n in nodes:
                if n.children is None and n.hash is None and not (n.extra and "export_as" in n.extra):
                    todo.append((n, self.rev_of(n), self.source_of(n)))
        for n, rev, src in todo:
            digest = src.content_hash()
            with self.lock:
                if self.rev_of(n) == rev and n.hash is None:
                    n.hash = digest
                    self.json_cache.pop(n, None)
                    self.json_cache_home.pop(n, None)

    # ---- lookup ---------------------------------------------------------------
    def walk(self, start, rest):
        """Follow a '/a/b' style remainder (already slash-collapsed) from start."""
        node = start
        for comp in rest.split("/"):
            if not comp:
                continue
            if node.children is None:
                return None, "not_folder"
            child = node.children.get(key_of(comp))
            if child is None and self.fold_lookup:
                child = self._fold_match(node, comp)
            if child is None:
                return None, "not_found"
            node = child
        return node, None

    def _fold_match(self, folder, comp):
        want = fold_path(comp)
        for k in self.sorted_keys(folder):
            child = folder.children[k]
            if fold_path(child.name) == want:
                return child
        return None

    def resolve(self, path, root_ns, home_ns, base=None):
        """Resolve an API path ('', '/a', 'id:..[/x]', 'ns:N[/x]') to (node, err).

        err is a LookupError tag ('not_found', 'not_folder', 'malformed_path').
        Caller holds the lock.  Repeated slashes are collapsed, a trailing
        slash is ignored, and components are matched NFC + case-insensitively.
        '' and '/...' are relative to ``base`` (default: the root); 'ns:' of
        the home namespace is the home folder when there is one (--team).
        """
        if base is None:
            base = self.root
        if path == "":
            return base, None
        if path.startswith("/"):
            node, err = self.walk(base, path)
            if node is not None or err != "not_folder":
                return node, err
            return None, "not_found"
        if path.startswith("id:"):
            ident, _, rest = path[3:].partition("/")
            num = parse_id(ident)
            if num is None or num >= len(self.nodes) or self.nodes[num] is None:
                return None, "not_found"
            node, err = self.walk(self.nodes[num], rest)
            return node, ("not_found" if err else None)
        if path.startswith("ns:"):
            ns, _, rest = path[3:].partition("/")
            if ns not in (root_ns, home_ns):
                return None, "not_found"
            start = self.home if ns == home_ns and self.home is not None else self.root
            node, err = self.walk(start, rest)
            return node, ("not_found" if err else None)
        return None, "malformed_path"

    def resolve_rev(self, revhex):
        """rev:<hex> -> ("live", Node) | ("old", OldRev) | (None, None)."""
        n = parse_rev(revhex)
        if n is None:
            return None, None
        o = self.old_revs.get(n)
        if o is not None:
            return "old", o
        node = self.live_revs.get(n)
        if node is not None and self.alive(node) and node.rev == n:
            return "live", node
        if n < len(self.nodes):
            node = self.nodes[n]
            if node is not None and node.children is None and node.rev is None:
                return "live", node
        return None, None

    # ---- listing --------------------------------------------------------------
    def iter_listing(self, scope, recursive, keypath):
        """Pre-order walk of ``scope``'s contents strictly after ``keypath``.

        keypath is a list of child keys relative to scope naming the last
        emitted entry ([] = nothing emitted yet).  Yields (node, keypath).
        Folders come before their children; siblings in sorted key order.
        """
        stack = []  # [folder, keys, next_index, prefix]
        folder = scope
        prefix = []
        for depth, k in enumerate(keypath):
            keys = self.sorted_keys(folder)
            idx = bisect.bisect_right(keys, k)
            stack.append([folder, keys, idx, prefix])
            child = folder.children.get(k)
            if child is None or child.children is None or not recursive:
                break
            prefix = prefix + [k]
            folder = child
            if depth == len(keypath) - 1:
                stack.append([folder, self.sorted_keys(folder), 0, prefix])
        else:
            if not keypath:
                stack.append([scope, self.sorted_keys(scope), 0, []])
        while stack:
            top = stack[-1]
            folder, keys, i, prefix = top
            if i >= len(keys):
                stack.pop()
                continue
            top[2] = i + 1
            k = keys[i]
            node = folder.children.get(k)
            if node is None:
                continue
            kp = prefix + [k]
            yield node, kp
            if recursive and node.children is not None:
                stack.append([node, self.sorted_keys(node), 0, kp])

    def tombstones_under(self, scope_pl, recursive):
        out = []
        for pl, (name, pd) in self.tombstones.items():
            if recursive:
                if scope_pl == "" or pl.startswith(scope_pl + "/"):
                    out.append((pl, name, pd))
            elif pl.rpartition("/")[0] == scope_pl:
                out.append((pl, name, pd))
        out.sort()
        return out

    # ---- journal --------------------------------------------------------------
    @staticmethod
    def in_scope(pl, parent_pl, scope_pl, recursive):
        if recursive:
            return scope_pl == "" or pl == scope_pl or pl.startswith(scope_pl + "/")
        return parent_pl == scope_pl

    def _log(self, kind, node, pd, pl, name, was_folder=False):
        self.journal.append((kind, pl, pl.rpartition("/")[0], pd, name, node,
                             self.batch, was_folder))

    def _log_subtree(self, node, cache):
        """Journal upserts for node and (pre-order) its descendants."""
        pd, pl = self.paths(node, cache)
        self._log("u", node, pd, pl, node.name)
        if node.children is not None:
            for k in self.sorted_keys(node):
                self._log_subtree(node.children[k], cache)

    # ---- mutations (control API) ----------------------------------------------
    @staticmethod
    def split_path(path):
        comps = [c for c in path.split("/") if c != ""]
        if not path.startswith("/") or not comps:
            raise TreeError("path must start with '/' and name an entry below the root")
        return comps

    def _now(self):
        return int(time.time()) - PAST_MARGIN

    def _mkdirs(self, comps):
        """Create folders along comps (journalled); returns the last folder."""
        node = self.root
        for c in comps:
            k = key_of(c)
            child = node.children.get(k)
            if child is None:
                child = self.add_child(node, c, folder=True)
                pd, pl = self.paths(child)
                self.tombstones.pop(pl, None)
                self._log("u", child, pd, pl, c)
            elif child.children is None:
                raise TreeError("a file is in the way: " + self.paths(child)[0])
            node = child
        return node

    def _retire_rev(self, node, cache=None):
        """Remember the node's current revision as an old revision."""
        pd, pl = self.paths(node, cache)
        o = OldRev()
        o.revnum = self.rev_of(node)
        o.num, o.name, o.pd, o.pl = node.num, node.name, pd, pl
        o.size, o.mtime, o.source = node.size, self.mtime_of(node), self.source_of(node)
        o.hash, o.extra = node.hash, node.extra
        self.old_revs[o.revnum] = o
        self.live_revs.pop(o.revnum, None)

    def _detach(self, node):
        parent = node.parent
        del parent.children[self.node_key(node)]
        parent.content = None

    def _forget_subtree(self, node, cache):
        """Drop node and descendants from the id index; keep their revs."""
        stack = [node]
        while stack:
            n = stack.pop()
            pd, pl = self.paths(n, cache)
            self.tombstones[pl] = (n.name, pd)
            if n.children is None:
                self._retire_rev(n, cache)
            else:
                stack.extend(n.children.values())
            self.nodes[n.num] = None

    def put_file(self, path, content, size, digest, extra=None, mtime=None):
        """Create or overwrite a file (mkdir -p of parents).  Lock held by caller."""
        self.invalidate_json()
        self.batch += 1
        comps = self.split_path(path)
        parent = self._mkdirs(comps[:-1])
        name = comps[-1]
        k = key_of(name)
        node = parent.children.get(k)
        now = self._now() if mtime is None else mtime
        if node is not None and node.children is not None:
            self.delete(self.paths(node)[0])
            node = None
        if node is None:
            node = self.add_child(parent, name, size=size, content=content,
                                  mtime=now, extra=extra)
        else:
            self._retire_rev(node)
            node.size, node.content, node.mtime = size, content, now
            node.extra = extra
        node.hash = digest
        node.rev = self.next_rev
        self.live_revs[node.rev] = node
        self.next_rev += 1
        pd, pl = self.paths(node)
        self.tombstones.pop(pl, None)
        self._log("u", node, pd, pl, node.name)
        self.changed.notify_all()
        return node

    def mkdir(self, path):
        self.invalidate_json()
        self.batch += 1
        node = self._mkdirs(self.split_path(path))
        self.changed.notify_all()
        return node

    def delete(self, path):
        node, err = self.resolve(path, None, None)
        if node is None or node is self.root:
            raise TreeError("not found: " + path)
        if node is self.home:
            raise TreeError("the member's home folder cannot be deleted or replaced: " + path)
        self.invalidate_json()
        self.batch += 1
        cache = {}
        pd, pl = self.paths(node, cache)
        self._forget_subtree(node, cache)
        self._detach(node)
        self._log("d", None, pd, pl, node.name, node.children is not None)
        self.changed.notify_all()
        return self.deleted_metadata(node.name, pd, pl)

    def move(self, src, dst):
        node, _ = self.resolve(src, None, None)
        if node is None or node is self.root:
            raise TreeError("not found: " + src)
        if node is self.home:
            raise TreeError("the member's home folder cannot be moved: " + src)
        self.invalidate_json()
        comps = self.split_path(dst)
        old_pd, old_pl = self.paths(node)
        new_pl = "/" + "/".join(key_of(c) for c in comps)
        if new_pl == old_pl:
            # Case-only rename: Dropbox does not report it via continue.
            node.name = comps[-1]
            return self.metadata(node)
        if new_pl.startswith(old_pl + "/"):
            raise TreeError("cannot move a folder into itself")
        probe = self.root
        for c in comps[:-1]:
            probe = probe.children.get(key_of(c))
            if probe is None:
                break
            if probe.children is None:
                raise TreeError("a file is in the way: " + self.paths(probe)[0])
        if probe is not None and key_of(comps[-1]) in probe.children:
            raise TreeError("destination exists: " + dst)
        self.batch += 1
        self._detach(node)
        self._log("d", None, old_pd, old_pl, node.name, node.children is not None)
        new_parent = self._mkdirs(comps[:-1])
        self.tombstones[old_pl] = (node.name, old_pd)
        node.name = comps[-1]
        node.parent = new_parent
        if node.extra and "key" in node.extra:
            node.extra = {k: v for k, v in node.extra.items() if k != "key"} or None
        new_parent.children[key_of(node.name)] = node
        new_parent.content = None
        cache = {}
        self._log_subtree(node, cache)
        self.tombstones.pop(new_pl, None)
        self.changed.notify_all()
        return self.metadata(node)

    def reset_cursors(self):
        self.invalidate_json()
        self.epoch += 1
        self.changed.notify_all()

    # ---- whole-tree views -----------------------------------------------------
    def walk_all(self):
        """Every node except the root, folders before their children."""
        for node, _ in self.iter_listing(self.root, True, []):
            yield node

    def total_size(self):
        return sum(n.size for n in self.nodes if n is not None and n.children is None)
