"""Server-wide state shared by routes and the control API.

Exists to bundle the tree, tokens, faults, runtime config, account identity
and request statistics in one object.  Stats/log have their own lock
(``State.stats_lock``); the tree has ``tree.lock`` (see tree.py).
"""

import collections
import hashlib
import base64
import secrets
import threading
import time

from .adversarial import Adversary, parse_modes
from .faults import FaultSet
from .oauth import TokenStore
from .paging import Paging, parse_cost, parse_max_page, parse_tiny
from .team import View


class State:
    def __init__(self, tree, args):
        self.tree = tree
        self.instance = secrets.token_hex(4)
        h = hashlib.sha256(b"fakedropbox-account").digest()
        self.account_id = "dbid:AAD" + base64.urlsafe_b64encode(h).decode()[:32]
        assert len(self.account_id) == 40
        self.uid = "73219482"
        self.home_ns = "1928374650"
        self.root_ns = "5647382910" if args.team else self.home_ns
        self.team = args.team
        # Namespace views (team.py).  Without --team both are the whole tree.
        self.root_view = View(None, tree.root)
        self.home_view = View.home(tree) if tree.home is not None else self.root_view
        self.quota_used = args.quota_used
        self.quota_allocated = args.quota_allocated
        self.latency_ms = float(args.latency_ms or 0)
        self.bandwidth = int(args.bandwidth or 0)
        self.longpoll_backoff = None
        self.tokens = TokenStore(args.token or ["test-token"], args.app_key,
                                 args.access_token_ttl, self.account_id, self.uid)
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

    def set_adversarial(self, modes=None, seed=None):
        """Change the adversarial modes and/or seed (None: keep)."""
        with self.tree.lock:
            if modes is not None:
                self.adv.modes = frozenset(modes)
                self.tree.fold_lookup = "fold" in self.adv.modes
            if seed is not None:
                self.adv.seed = int(seed)

    def view_of(self, tag):
        """The View a cursor's recorded view tag names."""
        return self.home_view if tag == "h" else self.root_view

    def tree_total_size(self):
        """Sum of file sizes, cached per journal length."""
        tree = self.tree
        with tree.lock:
            key = (len(tree.journal), len(tree.nodes))
            if getattr(self, "_size_key", None) != key:
                self._size_val = tree.total_size()
                self._size_key = key
            return self._size_val

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
