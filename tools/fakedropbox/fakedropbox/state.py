"""Server-wide state shared by routes and the control API.

Exists to bundle the accounts (identity and tree, accounts.py), tokens, faults,
runtime config and request statistics in one object.  ``st.tree``,
``st.account_id`` and the other account fields are those of the account the
request thread is about (``use_account``).  Stats/log have their own lock
(``State.stats_lock``); each tree has ``tree.lock`` (see tree.py).
"""

import collections
import threading
import time

from .accounts import Account
from .adversarial import Adversary, parse_modes
from .faults import FaultSet
from .links import LinkTable
from .sharedfolders import SharedFolderTable
from .oauth import TokenStore
from .paging import Paging, parse_cost, parse_max_page, parse_tiny


class State:
    def __init__(self, tree, args, second_tree=None):
        self.accounts = {"a": Account("a", tree, team=args.team)}
        if second_tree is not None:
            self.accounts["b"] = Account("b", second_tree)
        self._current = threading.local()
        self.quota_used = args.quota_used
        self.quota_allocated = args.quota_allocated
        self.latency_ms = float(args.latency_ms or 0)
        # Seconds files/download_zip takes to make a zip before its reply, beside latency_ms
        # (control "zip_delay_ms"): Dropbox's own time is not known, so benchmarks try some.
        self.zip_delay_ms = 0.0
        self.bandwidth = int(args.bandwidth or 0)
        self.longpoll_backoff = None
        self.tokens = TokenStore(args.token or ["test-token"], args.app_key,
                                 args.access_token_ttl, self.account_id, self.uid)
        if second_tree is not None:
            for t in getattr(args, "second_token", None) or ["test-token-b"]:
                self.tokens.add(t, account="b")
        self.faults = FaultSet()
        # Adversarial listing modes (adversarial.py); off unless configured.
        self.adv = Adversary()
        self.set_adversarial(parse_modes(getattr(args, "adversarial", None)),
                             getattr(args, "adversarial_seed", 1))
        # Page policy of listings (paging.py); off unless configured.
        self.paging = Paging(parse_max_page(getattr(args, "max_page", 0)),
                             parse_tiny(getattr(args, "tiny_pages", None)),
                             parse_cost(getattr(args, "page_cost_ms_per_1000", 0)))
        self.quiet = args.quiet
        self.stats_lock = threading.Lock()
        self.total = 0
        self.routes = collections.Counter()
        self.pages = collections.Counter()    # route -> listing pages served
        self.entries = collections.Counter()  # route -> entries in those pages
        self.bytes_sent = 0
        # get_thumbnail_batch: entries answered success / failure, image bytes (before base64)
        self.thumbnails = collections.Counter()
        self.log = collections.deque(maxlen=1000)
        self.links = LinkTable()          # shared links of every account (links.py)
        self.shared = SharedFolderTable()  # shared folders of every account (sharedfolders.py)

    # ---- the account of this request thread (accounts.py) ------------------------------------
    @property
    def account(self):
        return getattr(self._current, "account", None) or self.accounts["a"]

    def use_account(self, key):
        """Makes account `key` ("a", "b") the one this thread's request is about; None: none
        named yet (the first account, as for a request without a token)."""
        self._current.account = self.accounts[key] if key is not None else None

    def use_namespace(self, ns):
        """Makes shared folder `ns` (sharedfolders.Namespace) what this thread's request reads:
        st.tree and the namespace fields are then the shared folder's."""
        self._current.account = ns

    def use_account_of_instance(self, instance):
        """The account whose server instance made a cursor, if any (longpoll has no token)."""
        for acc in self.accounts.values():
            if acc.instance == instance:
                self._current.account = acc
                return

    tree = property(lambda self: self.account.tree)
    instance = property(lambda self: self.account.instance)
    account_id = property(lambda self: self.account.account_id)
    uid = property(lambda self: self.account.uid)
    home_ns = property(lambda self: self.account.home_ns)
    root_ns = property(lambda self: self.account.root_ns)
    team = property(lambda self: self.account.team)
    root_view = property(lambda self: self.account.root_view)
    home_view = property(lambda self: self.account.home_view)

    def set_adversarial(self, modes=None, seed=None):
        """Change the adversarial modes and/or seed (None: keep), for every account."""
        for acc in self.accounts.values():
            with acc.tree.lock:
                if modes is not None:
                    self.adv.modes = frozenset(modes)
                    acc.tree.fold_lookup = "fold" in self.adv.modes
                if seed is not None:
                    self.adv.seed = int(seed)

    def view_of(self, tag):
        """The View a cursor's recorded view tag names."""
        return self.home_view if tag == "h" else self.root_view

    def tree_total_size(self):
        """Sum of file sizes, cached per journal length."""
        acc = self.account
        tree = acc.tree
        with tree.lock:
            key = (len(tree.journal), len(tree.nodes))
            if acc.size_key != key:
                acc.size_val = tree.total_size()
                acc.size_key = key
            return acc.size_val

    def count(self, route):
        with self.stats_lock:
            self.total += 1
            self.routes[route] += 1

    def count_page(self, route, entries):
        with self.stats_lock:
            self.pages[route] += 1
            self.entries[route] += entries

    def count_thumbnails(self, success, failure, image_bytes):
        with self.stats_lock:
            self.thumbnails["success"] += success
            self.thumbnails["failure"] += failure
            self.thumbnails["image_bytes"] += image_bytes

    def add_bytes(self, n):
        with self.stats_lock:
            self.bytes_sent += n

    def record(self, route, method, status, rng, has_auth, fault=None, arg=None):
        entry = {"route": route, "method": method, "status": status, "range": rng,
                 "has_auth": has_auth, "ts": round(time.time(), 3)}
        if fault:
            entry["fault"] = fault
        if arg is not None:
            entry["arg"] = arg
        with self.stats_lock:
            self.log.append(entry)

    def stats(self):
        with self.stats_lock:
            return {"total": self.total, "routes": dict(self.routes),
                    "bytes_sent": self.bytes_sent, "pages": dict(self.pages),
                    "entries": dict(self.entries),
                    "thumbnails": {k: self.thumbnails[k]
                                   for k in ("success", "failure", "image_bytes")}}

    def reset_stats(self):
        with self.stats_lock:
            self.total = 0
            self.routes.clear()
            self.pages.clear()
            self.entries.clear()
            self.thumbnails.clear()
            self.bytes_sent = 0
            self.log.clear()
