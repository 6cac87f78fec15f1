"""Shared folders: folders other people shared with an account, each a namespace of its own.

Exists to serve what a ``--shared-folders`` mount reads (docs/DROPBOX-API.md, "Shared folders
not added"): ``sharing/list_folders`` and ``sharing/list_folders/continue`` list every shared
folder the account can access (``SharedFolderMetadata``: ``path_lower`` and ``path_display``
only when the account added, "mounted", the folder into its own Dropbox), and any route that
takes paths reads one namespace when the request's ``Dropbox-API-Path-Root`` header is
``{".tag": "namespace_id", "namespace_id": "<shared_folder_id>"}``: ``""`` is then the shared
folder's own root.  A namespace the account may not read (made with ``readable: false``)
answers 422 ``PathRootError`` ``no_permission``, as an unknown one does.

How: each shared folder has a ``Tree`` of its own (its own lock, journal, cursors, revisions)
inside a ``Namespace``, which stands in for ``accounts.Account`` for the length of one request
(``State.use_namespace``), so every route of routes_files, revisions and thumbs serves it
unchanged.  Its revisions start at a number of their own (``REV_SPACING`` apart), so a rev
names one file across the whole server, as on Dropbox.  A folder "added" here (``mounted_at``)
also gets a folder at that path in the account's own tree; the two trees are not kept in step
(the fake's mounted folders exist for list_folders' ``path_lower`` only).

Control API (control.py): ``POST /_control/shared_folders`` {name, access_type?, mounted_at?,
readable?, is_team_folder?} makes one; ``POST /_control/shared_folders/unshare``
{shared_folder_id} removes it; ``GET /_control/shared_folders`` lists them; the file routes
(``files``, ``folders``, ``delete``, ``move``, ``content``, ``tree``) take
``?namespace=<shared_folder_id>`` to change one's contents.

``SharedFolderTable.lock`` guards the table; a namespace's tree is read under its own
``tree.lock`` as any tree is.
"""

import base64
import json
import secrets
import threading
import time

from .httpio import json_reply, route_error
from .team import View
from .tree import DYNAMIC_REV_START, Tree, fmt_time

CURSOR_PREFIX = "sf1."
MAX_LIMIT = 1000            # ListFoldersArgs.limit: 1..1000, default 1000
REV_SPACING = 1 << 32       # revs of namespace k start at DYNAMIC_REV_START + k * REV_SPACING
ACCESS_TYPES = ("owner", "editor", "viewer", "viewer_no_comment", "traverse", "no_access")
FIRST_ID = 3100000000


class Namespace:
    """One shared folder: its sharing facts and its tree.  Duck-types accounts.Account for the
    request that names it in Dropbox-API-Path-Root (identity fields are the owner account's)."""

    def __init__(self, owner, shared_folder_id, name, number, access_type, readable,
                 is_team_folder, mounted_at):
        self.key = owner.key
        self.account_id, self.uid = owner.account_id, owner.uid
        self.given_name, self.surname, self.email = owner.given_name, owner.surname, owner.email
        self.tree = Tree(seed=number + 1)
        self.tree.next_rev = DYNAMIC_REV_START + number * REV_SPACING
        self.instance = secrets.token_hex(4)
        self.team = False
        self.home_ns = self.root_ns = shared_folder_id
        self.root_view = self.home_view = View(None, self.tree.root)
        self.size_key = self.size_val = None
        self.shared_folder_id, self.name = shared_folder_id, name
        self.access_type, self.readable = access_type, readable
        self.is_team_folder, self.mounted_at = is_team_folder, mounted_at
        self.time_invited = int(time.time()) - 3600


class SharedFolderTable:
    """Every shared folder of the server, per owner account key, in the order made."""

    def __init__(self):
        self.lock = threading.Lock()
        self.folders = {}     # account key -> [Namespace]
        self.made = 0

    def of(self, key):
        with self.lock:
            return list(self.folders.get(key, ()))

    def find(self, key, shared_folder_id):
        with self.lock:
            for ns in self.folders.get(key, ()):
                if ns.shared_folder_id == shared_folder_id:
                    return ns
        return None

    def add(self, owner, **facts):
        with self.lock:
            self.made += 1
            ns = Namespace(owner, str(FIRST_ID + self.made), number=self.made, **facts)
            self.folders.setdefault(owner.key, []).append(ns)
            return ns

    def remove(self, key, shared_folder_id):
        with self.lock:
            kept = [ns for ns in self.folders.get(key, ()) if ns.shared_folder_id != shared_folder_id]
            gone = len(kept) != len(self.folders.get(key, ()))
            self.folders[key] = kept
            return gone


def path_root_namespace(st, ns_id):
    """The Namespace a request of the current account may read as its path root, "no_permission"
    for a shared folder it may not read, None when ``ns_id`` is no shared folder of its."""
    ns = st.shared.find(st.account.key, ns_id)
    if ns is None:
        return None
    return ns if ns.readable else "no_permission"


# ---- control API ---------------------------------------------------------------------------------

class SharedFolderError(Exception):
    def __init__(self, status, msg):
        super().__init__(msg)
        self.status, self.msg = status, msg


def create(st, obj):
    """POST /_control/shared_folders {name, access_type?, mounted_at?, readable?, is_team_folder?}."""
    name = obj.get("name")
    if not isinstance(name, str) or not name or "/" in name:
        raise SharedFolderError(400, "name must be a non-empty string without '/'")
    access_type = obj.get("access_type", "viewer")
    if access_type not in ACCESS_TYPES:
        raise SharedFolderError(400, "access_type must be one of " + ", ".join(ACCESS_TYPES))
    mounted_at = obj.get("mounted_at")
    if mounted_at is not None:
        if not isinstance(mounted_at, str) or not mounted_at.startswith("/"):
            raise SharedFolderError(400, "mounted_at must be a path such as /Shared")
        tree = st.tree
        with tree.lock:
            node, _ = tree.resolve(mounted_at, st.root_ns, st.home_ns)
            if node is None:
                tree.mkdir(mounted_at)
            elif node.children is None:
                raise SharedFolderError(409, "%s is a file" % mounted_at)
    ns = st.shared.add(st.account, name=name, access_type=access_type,
                       readable=bool(obj.get("readable", True)),
                       is_team_folder=bool(obj.get("is_team_folder", False)), mounted_at=mounted_at)
    return describe(st, ns)


def unshare(st, obj):
    """POST /_control/shared_folders/unshare {shared_folder_id}: the account loses the folder."""
    sid = obj.get("shared_folder_id")
    if not isinstance(sid, str):
        raise SharedFolderError(400, "shared_folder_id must be a string")
    if not st.shared.remove(st.account.key, sid):
        raise SharedFolderError(404, "no such shared folder")
    return {"unshared": sid}


def describe(st, ns):
    return metadata(st, ns)


# ---- routes --------------------------------------------------------------------------------------

def metadata(st, ns):
    """SharedFolderMetadata (sharing.stone) of ``ns`` as the current account sees it."""
    md = {
        "access_type": {".tag": ns.access_type},
        "is_inside_team_folder": False,
        "is_team_folder": ns.is_team_folder,
        "owner_display_names": ["Sophie Chotek"],
        "name": ns.name,
        "policy": {"member_policy": {".tag": "anyone"}, "resolved_member_policy": {".tag": "anyone"},
                   "acl_update_policy": {".tag": "owner"}, "shared_link_policy": {".tag": "anyone"},
                   "viewer_info_policy": {".tag": "enabled"}},
        "preview_url": "https://www.dropbox.com/scl/fo/%s/AAB%s?dl=0" % (ns.shared_folder_id,
                                                                       ns.shared_folder_id[-6:]),
        "shared_folder_id": ns.shared_folder_id,
        "time_invited": fmt_time(ns.time_invited),
        "access_inheritance": {".tag": "inherit"},
        "permissions": [],
    }
    if ns.mounted_at is not None:
        tree = st.tree
        with tree.lock:
            node, _ = tree.resolve(ns.mounted_at, st.root_ns, st.home_ns)
            if node is not None:
                pd, pl = st.home_view.rel(*tree.paths(node))
                md["path_display"], md["path_lower"] = pd, pl
    return md


def _limit(arg):
    limit = arg.get("limit", MAX_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        from .routes_files import ArgError    # routes_files imports the route tables
        raise ArgError("limit: %r is not a valid value (1..%d)" % (limit, MAX_LIMIT))
    return limit


def _encode(state):
    return CURSOR_PREFIX + base64.urlsafe_b64encode(json.dumps(state).encode()).decode().rstrip("=")


def _decode(text):
    if not isinstance(text, str) or not text.startswith(CURSOR_PREFIX):
        return None
    try:
        state = json.loads(base64.urlsafe_b64decode(text[len(CURSOR_PREFIX):] + "=="))
    except ValueError:
        return None
    if not isinstance(state, dict) or not isinstance(state.get("o"), int) or not isinstance(state.get("l"), int):
        return None
    return state


def _page(st, offset, limit):
    folders = st.shared.of(st.account.key)
    page = folders[offset:offset + limit]
    out = {"entries": [metadata(st, ns) for ns in page]}
    if offset + limit < len(folders):
        out["cursor"] = _encode({"o": offset + limit, "l": limit, "a": st.account.key})
    return json_reply(out)


def list_folders(st, req, arg):
    return _page(st, 0, _limit(arg))


def list_folders_continue(st, req, arg):
    state = _decode(arg.get("cursor"))
    if state is None or state.get("a") != st.account.key:
        return route_error({".tag": "invalid_cursor"})
    return _page(st, state["o"], state["l"])


ROUTES = {
    "sharing/list_folders": ("rpc", "sharing.read", list_folders),
    "sharing/list_folders/continue": ("rpc", "sharing.read", list_folders_continue),
}
