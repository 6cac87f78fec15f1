"""Adversarial listing modes: list_folder and continue as unkind as the
Dropbox contract allows (docs/DROPBOX-API.md, "Delta semantics", "Listing
order", "Page sizes", "Case folding").

Exists because Dropbox promises no listing order, no page size and no folding
rule, while the default fake lists parents first, sorted, in full pages, and
folds names as the client does: a client that relies on any of that passes
every test and still loses entries against the real service.  Everything
here is off unless modes are set (``--adversarial``, ``/_control/config``);
then:

* ``list_folder`` renders the whole listing into a server-side snapshot (the
  transformations applied, see ``build_snapshot``) and remembers the journal
  position at that moment.  ``continue`` serves the snapshot's pages by
  (snapshot id, page index) in the cursor; after the last page the cursor
  enters the journal phase at the remembered position, so changes made while
  the listing was paged are replayed, as in default mode.  At most
  MAX_SNAPSHOTS snapshots (and MAX_SNAPSHOT_ENTRIES entries) are kept; a
  cursor of an evicted one answers 409 reset.
* journal pages (deltas) are transformed when served, deterministically from
  the cursor (position, page counter) and the seed; see ``journal_page``.

Randomness always comes from ``random.Random`` seeded with a string built
from the adversarial seed and the listing's or page's identity, so a failing
seed replays.  THREAD-SAFETY: snapshots live in ``Adversary.snaps``, guarded
by the tree's lock like everything else the routes touch.
"""

import collections
import random

from .httpio import entry_json
from .tree import fold_path, id_str, rev_str

MODES = ("shuffle", "late-parents", "pages", "repeat", "case-drift", "fold",
         "ghost-deletes", "replace")
MAX_SNAPSHOTS = 64
MAX_SNAPSHOT_ENTRIES = 2_000_000
LATE_SHARE = 0.5        # late-parents: share of folders listed after their subtree
REPLACE_SHARE = 0.01    # replace: share of entries preceded by a bogus entry
GHOST_SHARE = 0.01      # ghost-deletes: ghosts per real entry in a listing
EMPTY_PAGE_SHARE = 0.12  # pages: share of empty pages while entries remain
TINY_PAGE_SHARE = 0.3   # pages: share of pages of 1..5 entries
BOGUS_NUM_BASE = 1 << 44  # ids and revs of bogus entries: never a real node's
STYLES = ("upper", "lower", "swapcase", "title")


class ModeError(ValueError):
    pass


def parse_modes(value):
    """'shuffle,pages' | 'all' | '' | a list of names -> frozenset of modes."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        names = [x.strip() for x in value.split(",") if x.strip()]
    elif isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value):
        names = [x.strip() for x in value if x.strip()]
    else:
        raise ModeError("adversarial: give a comma-separated string of modes")
    out = set()
    for n in names:
        if n == "all":
            out.update(MODES)
        elif n in MODES:
            out.add(n)
        else:
            raise ModeError("adversarial: unknown mode %r (known: %s, all)" % (n, ", ".join(MODES)))
    return frozenset(out)


def modes_text(modes):
    return ",".join(m for m in MODES if m in modes)


class Snapshot:
    __slots__ = ("pages", "seq", "size")

    def __init__(self, pages, seq):
        self.pages = pages          # [[entry_json part, ...], ...]
        self.seq = seq              # journal position when the listing started
        self.size = sum(len(p) for p in pages)


class Adversary:
    """The server's adversarial configuration and listing snapshots."""

    def __init__(self, modes=frozenset(), seed=1):
        self.modes = frozenset(modes)
        self.seed = int(seed)
        self.snaps = collections.OrderedDict()  # id -> Snapshot, least recently used first
        self.snap_entries = 0
        self.next_snap = 1
        self.listings = collections.Counter()  # listing identity -> listings made so far

    def on(self, mode):
        return mode in self.modes

    # ---- snapshots ----------------------------------------------------------
    def store(self, snap):
        sid = self.next_snap
        self.next_snap += 1
        self.snaps[sid] = snap
        self.snap_entries += snap.size
        while len(self.snaps) > MAX_SNAPSHOTS or \
                (self.snap_entries > MAX_SNAPSHOT_ENTRIES and len(self.snaps) > 1):
            _, old = self.snaps.popitem(last=False)
            self.snap_entries -= old.size
        return sid

    def get(self, sid):
        snap = self.snaps.get(sid)
        if snap is not None:
            self.snaps.move_to_end(sid)
        return snap

    # ---- rendering ----------------------------------------------------------
    def render(self, md, rng):
        """Apply case-drift and fold to one metadata dict (a copy); -> entry_json part."""
        if "case-drift" not in self.modes and "fold" not in self.modes:
            return entry_json(md)
        md = dict(md)
        pd = md.get("path_display")
        if pd is not None:
            if "fold" in self.modes:
                md["path_lower"] = fold_path(pd)
            if "case-drift" in self.modes:
                md["path_display"] = drift(pd, md["name"], rng)
        return entry_json(md)

    def fix_md(self, md):
        """Metadata outside listings (get_metadata, download result): fold only."""
        if "fold" in self.modes and md.get("path_display") is not None:
            md["path_lower"] = fold_path(md["path_display"])
        return md


# ---- path helpers -------------------------------------------------------------

def recase(comp, style):
    """comp in another case, one scalar at a time; a scalar whose new case is
    not a single scalar with the same lower-case form (ß, ﬁ, İ, final sigma...)
    is kept, so the component still names the same entry."""
    out = []
    prev_alpha = False
    for c in comp:
        if style == "upper":
            t = c.upper()
        elif style == "lower":
            t = c.lower()
        elif style == "swapcase":
            t = c.swapcase()
        else:
            t = c.lower() if prev_alpha else c.upper()
        prev_alpha = c.isalpha()
        out.append(t if len(t) == 1 and t.lower() == c.lower() else c)
    return "".join(out)


def drift(pd, name, rng):
    """path_display with every ancestor component re-cased (a random style
    each); the last component (the name) stays exact."""
    if not pd.endswith("/" + name):
        return pd
    head = pd[:len(pd) - len(name) - 1]
    if not head:
        return pd
    comps = head.split("/")
    return "/".join(recase(c, rng.choice(STYLES)) if c else c for c in comps) + "/" + name


def ancestors(pl):
    """Proper ancestors of '/a/b/c': ['/a', '/a/b']."""
    out = []
    i = pl.find("/", 1)
    while i != -1:
        out.append(pl[:i])
        i = pl.find("/", i + 1)
    return out


def parent_of(pd, name):
    """Parent part of a display (or lower) path whose last component is name."""
    return pd[:len(pd) - len(name) - 1] if pd.endswith("/" + name) else pd.rpartition("/")[0]


def topo_shuffle(n, edges, rng):
    """A random order of range(n) in which every edge (i, j) keeps i before j."""
    succ = [[] for _ in range(n)]
    indeg = [0] * n
    for i, j in edges:
        succ[i].append(j)
        indeg[j] += 1
    ready = [i for i in range(n) if indeg[i] == 0]
    out = []
    while ready:
        k = rng.randrange(len(ready))
        ready[k], ready[-1] = ready[-1], ready[k]
        i = ready.pop()
        out.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    assert len(out) == n, "cycle in shuffle constraints"
    return out


def related_edges(pls):
    """Edges (i, j), i < j, for every pair of related paths (equal, or one an
    ancestor of the other, compared by components): delta entries on
    related paths do not commute, so a shuffle must keep their order."""
    by_pl = {}
    under = {}
    edges = []
    for j, pl in enumerate(pls):
        anc = ancestors(pl)
        for p in anc:
            for i in by_pl.get(p, ()):
                edges.append((i, j))
        for i in by_pl.get(pl, ()):
            edges.append((i, j))
        for i in under.get(pl, ()):
            edges.append((i, j))
        by_pl.setdefault(pl, []).append(j)
        for p in anc:
            under.setdefault(p, []).append(j)
    return edges


def listing_edges(items):
    """Shuffle constraints inside a listing page: a bogus entry stays before
    every later real entry on a related path, and entries at one path keep
    their order.  (Real entries of a snapshot are distinct paths of one
    consistent tree: any order of them builds the same tree.)"""
    edges = []
    last_at = {}
    bogus_at = {}     # path -> bogus entries at it
    bogus_under = {}  # path -> bogus entries strictly below it
    for j, it in enumerate(items):
        pl = it[1]
        i = last_at.get(pl)
        if i is not None:
            edges.append((i, j))
        last_at[pl] = j
        if it[2]:
            bogus_at.setdefault(pl, []).append(j)
            for p in ancestors(pl):
                bogus_under.setdefault(p, []).append(j)
        elif bogus_at:
            for p in ancestors(pl) + [pl]:
                for i in bogus_at.get(p, ()):
                    edges.append((i, j))
            for i in bogus_under.get(pl, ()):
                edges.append((i, j))
    return edges


def new_ghost_name(rng):
    return "ghost-%010x.tmp" % rng.getrandbits(40)


def ghost_entry(tree, view, parent_pd, parent_pl, rng, deep):
    """A deleted entry for a path that does not exist, in folder parent (or,
    if deep, in a folder below it that does not exist either)."""
    for _ in range(5):
        name = new_ghost_name(rng)
        pd, pl = parent_pd, parent_pl
        if deep:
            d = "ghost-dir-%08x" % rng.getrandbits(32)
            pd, pl = pd + "/" + d, pl + "/" + d
        pd, pl = pd + "/" + name, pl + "/" + name
        node, _ = tree.walk(view.base, pl)
        if node is None:
            return tree.deleted_metadata(name, pd, pl)
    return None


def bogus_file(name, pd, pl, num):
    return {".tag": "file", "name": name, "path_lower": pl, "path_display": pd,
            "id": id_str(num), "client_modified": "2016-02-29T12:00:00Z",
            "server_modified": "2016-02-29T12:00:00Z", "rev": rev_str(num),
            "size": 7, "is_downloadable": True,
            "content_hash": "%064x" % (num * 2654435761 % (1 << 255))}


def bogus_folder(name, pd, pl, num):
    return {".tag": "folder", "name": name, "path_lower": pl, "path_display": pd,
            "id": id_str(num)}


# ---- listings -------------------------------------------------------------------

def collect(tree, scope, recursive, nondl, view, late, rng, bogus_share):
    """The listing's entries in emission order: (node | None, md | None, bogus).

    Pre-order walk; with ``late``, a random LATE_SHARE of the folders come after
    their whole subtree.  With bogus_share, a share of the entries is preceded
    by a bogus entry of the other kind (before the entry's whole block, so its
    subtree comes after the bogus file too)."""
    out = []
    counter = [0]

    def bogus_for(node):
        counter[0] += 1
        num = BOGUS_NUM_BASE + rng.getrandbits(32) * 64 + counter[0]
        md = tree.metadata(node, cache)
        pd, pl, name = md["path_display"], md["path_lower"], md["name"]
        if node.children is not None:
            return [(None, bogus_file(name, pd, pl, num), True)]
        res = [(None, bogus_folder(name, pd, pl, num), True)]
        if recursive:
            child = "bogus-%08x.tmp" % rng.getrandbits(32)
            res.append((None, bogus_file(child, pd + "/" + child, pl + "/" + child, num + 1), True))
            rng.shuffle(res)
        return res

    cache = view.path_cache()
    stack = []
    if recursive and scope is not view.base:
        stack.append(("node", scope))
    else:
        for k in reversed(tree.sorted_keys(scope)):
            stack.append(("node", scope.children[k]))
    while stack:
        op, node = stack.pop()
        if op == "emit":
            out.append((node, None, False))
            continue
        if op == "bogus":
            out.extend(bogus_for(node))
            continue
        if node.children is None and not nondl and node.extra is not None \
                and "export_as" in node.extra:
            continue
        is_late = recursive and node.children is not None and late and rng.random() < LATE_SHARE
        if is_late:
            stack.append(("emit", node))
        if recursive and node.children is not None:
            for k in reversed(tree.sorted_keys(node)):
                stack.append(("node", node.children[k]))
        if not is_late:
            stack.append(("emit", node))
        if bogus_share and node is not scope and rng.random() < bogus_share:
            stack.append(("bogus", node))
    if bogus_share and not any(bogus for _, _, bogus in out):
        # At least one, as ghost-deletes has at least one ghost: a share of 1 % leaves most small
        # listings (those of tests) without any, and the mode then tests nothing.  A file's block
        # is the file alone, so its bogus folder goes right before it.
        files = [i for i, (node, _, _) in enumerate(out) if node is not scope and node.children is None]
        if files:
            at = rng.choice(files)
            out[at:at] = bogus_for(out[at][0])
    return out, cache



def _irregular_page_size(rng, limit):
    """One page's size in the ``pages`` mode: empty now and then, a few entries sometimes,
    otherwise anything up to ``limit``."""
    x = rng.random()
    if x < EMPTY_PAGE_SHARE:
        return 0
    if x < EMPTY_PAGE_SHARE + TINY_PAGE_SHARE:
        return rng.randint(1, min(5, limit))
    return rng.randint(1, limit)

def split_pages(n, limit, irregular, rng, tiny=None):
    """Page lengths covering n entries: full pages of limit, or (irregular)
    random lengths 0..limit with some empty pages while entries remain; the
    last page is never empty unless n == 0.  ``tiny`` (paging.Paging.in_tiny)
    tells which page indexes hold 1 entry whatever was drawn."""
    sizes = []
    left = n
    while left > 0:
        k = _irregular_page_size(rng, limit) if irregular else limit
        if tiny is not None and tiny(len(sizes)):
            k = 1
        k = min(k, left)
        sizes.append(k)
        left -= k
    return sizes or [0]


def listing_key(adv, cur, epoch):
    return "%d|%d|%s|%s|%d|%d|%d|%d|%s" % (adv.seed, epoch, cur.scope, cur.view, cur.recursive,
                                           cur.deleted, cur.nondl, cur.limit, cur.seq)


def build_snapshot(st, cur, scope, view):
    """Render the listing of cur's folder into a Snapshot.  Lock held; every
    hash the listing shows should be computed already (see list_folder)."""
    adv = st.adv
    tree = st.tree
    modes = adv.modes
    ident = listing_key(adv, cur, tree.epoch)
    adv.listings[ident] += 1
    rng = random.Random("L|%s|%d" % (ident, adv.listings[ident]))
    entries, cache = collect(tree, scope, cur.recursive, cur.nondl, view,
                             "late-parents" in modes, rng,
                             REPLACE_SHARE if "replace" in modes else 0.0)
    # items: [md, real path_lower, bogus]
    items = []
    folders = []
    for node, md, bogus in entries:
        if md is None:
            md = tree.metadata(node, cache)
            if node.children is not None:
                folders.append(md)
        items.append((md, md["path_lower"], bogus))
    if cur.deleted:
        for pl, name, pd in tree.tombstones_under(cur.scope, cur.recursive):
            pd, pl = view.rel(pd, pl)
            md = tree.deleted_metadata(name, pd, pl)
            items.append((md, pl, False))
    if "ghost-deletes" in modes:
        spd, spl = tree.paths(scope, cache)
        count = rng.randint(1, 2) + int(len(items) * GHOST_SHARE)
        ghosts = []
        for _ in range(count):
            if cur.recursive and folders and rng.random() < 0.7:
                f = rng.choice(folders)
                ppd, ppl = f["path_display"], f["path_lower"]
            else:
                ppd, ppl = spd, spl
            g = ghost_entry(tree, view, ppd, ppl, rng, cur.recursive and rng.random() < 0.4)
            if g is not None:
                ghosts.append((rng.randrange(len(items) + 1), (g, g["path_lower"], False)))
        ghosts.sort(key=lambda x: x[0])
        merged = []
        gi = 0
        for i, it in enumerate(items):
            while gi < len(ghosts) and ghosts[gi][0] == i:
                merged.append(ghosts[gi][1])
                gi += 1
            merged.append(it)
        merged.extend(g for _, g in ghosts[gi:])
        items = merged
    paging = st.paging
    sizes = split_pages(len(items), paging.cap(cur.limit), "pages" in modes, rng,
                        paging.in_tiny if paging.tiny else None)
    pages = []
    pos = 0
    prev = []
    for i, k in enumerate(sizes):
        page = items[pos:pos + k]
        pos += k
        if "shuffle" in modes and len(page) > 1:
            order = topo_shuffle(len(page), listing_edges(page), rng)
            page = [page[i] for i in order]
        reps = []
        if "repeat" in modes and prev and page:
            reps = [it for it in prev[-rng.randint(1, 3):] if not it[2]]
            room = paging.room(i)
            if room is not None:
                keep = max(0, room - len(page))
                reps = reps[len(reps) - keep:] if keep else []
        pages.append([adv.render(it[0], rng) for it in reps + page])
        if page:
            prev = page
    return Snapshot(pages, cur.seq)


def list_folder(st, cur, cursor_scope):
    """list_folder in adversarial mode: build a snapshot, serve its first page.
    ``cursor_scope(st, cur)`` is routes_files' check of a cursor: (folder, None) or (None, reply)."""
    tree = st.tree
    view = st.view_of(cur.view)
    for attempt in range(3):
        with tree.lock:
            scope, bad = cursor_scope(st, cur)
            if bad is not None:
                return bad
            missing = [n for n, _ in tree.iter_listing(scope, cur.recursive, [])
                       if n.children is None and n.hash is None
                       and not (n.extra and "export_as" in n.extra)]
            if not missing or attempt == 2:
                cur = cur.copy(seq=len(tree.journal))
                snap = build_snapshot(st, cur, scope, view)
                sid = st.adv.store(snap)
                cur = cur.copy(phase="S", snap=sid, tidx=0, keypath=None)
                return serve_snapshot_locked(st, cur, snap)
        tree.ensure_hashes(missing)


def serve_snapshot_locked(st, cur, snap):
    """(parts, next cursor, has_more) of snapshot page cur.tidx.  Lock held."""
    i = cur.tidx
    parts = snap.pages[i] if 0 <= i < len(snap.pages) else []
    if i + 1 < len(snap.pages):
        return parts, cur.copy(tidx=i + 1), True
    return parts, cur.copy(phase="J", seq=snap.seq, tidx=0, snap=None, rep=None), False


def snapshot_page(st, cur):
    """continue of a phase "S" cursor.  Lock held.  -> (parts, next, has_more) or None (evicted)."""
    snap = st.adv.get(cur.snap)
    if snap is None:
        return None
    return serve_snapshot_locked(st, cur, snap)


# ---- deltas ---------------------------------------------------------------------

def _next_in_scope(tree, journal, j, cur):
    n = len(journal)
    while j < n:
        ev = journal[j]
        if tree.in_scope(ev[1], ev[2], cur.scope, cur.recursive):
            return ev
        j += 1
    return None


def journal_page(st, cur, visible):
    """Choose the events of one journal (delta) page for cursor cur.  Lock held.

    -> (events, next cursor, has_more) where events are journal tuples, or
    ("ghost", md) pairs, in emission order.  ``visible(ev)`` tells whether an
    event is in the cursor's scope and passes its filters."""
    adv = st.adv
    modes = adv.modes
    tree = st.tree
    journal = tree.journal
    n = len(journal)
    j = cur.seq
    while j < n and not visible(journal[j]):
        j += 1
    if j >= n:
        return [], cur.copy(seq=n), False
    rng = random.Random("J|%d|%s|%s|%d|%d|%d" % (adv.seed, cur.scope, cur.view, cur.recursive,
                                                 cur.seq, cur.tidx))
    paging = st.paging
    limit = paging.cap(cur.limit)
    k = _irregular_page_size(rng, limit) if "pages" in modes else limit
    if paging.in_tiny(cur.pg):
        k = 1
    room = paging.room(cur.pg)  # None: extras may exceed k
    if k == 0:
        return [], cur.copy(seq=j, tidx=cur.tidx + 1), True
    picked = []  # (journal index, event)
    while j < n and len(picked) < k:
        ev = journal[j]
        if visible(ev):
            picked.append((j, ev))
        j += 1
    has_more = any(visible(ev) for ev in journal[j:n])
    # replace: a deleted entry directly followed (in scope) by the new entry at
    # the same path, where one of the two is a file, is left out: the new entry
    # alone replaces the old one (a file replaces a folder and its children, a
    # folder replaces a file).
    runs = []  # lists of events; a deleted entry always ends a run
    cur_run = []
    for idx, ev in picked:
        if ev[0] == "d":
            if cur_run:
                runs.append(cur_run)
                cur_run = []
            if "replace" in modes:
                nxt = _next_in_scope(tree, journal, idx + 1, cur)
                if nxt is not None and nxt[0] == "u" and nxt[1] == ev[1] and visible(nxt) \
                        and not (ev[7] and nxt[5].children is not None):
                    continue
            runs.append([(idx, ev)])
            continue
        if cur_run and cur_run[-1][1][6] != ev[6]:
            runs.append(cur_run)
            cur_run = []
        cur_run.append((idx, ev))
    if cur_run:
        runs.append(cur_run)
    events = []
    for run in runs:
        # late-parents: the upserts one control call journalled (a moved or
        # created subtree, mkdir -p) come children first.
        if "late-parents" in modes and len(run) > 1 and run[0][1][0] == "u":
            run = run[::-1]
        events.extend(run)
    if "shuffle" in modes and len(events) > 1:
        order = topo_shuffle(len(events), related_edges([ev[1] for _, ev in events]), rng)
        events = [events[i] for i in order]
    out = [ev for _, ev in events]
    last = events[-1][0] if events else None
    if "ghost-deletes" in modes and rng.random() < 0.5:
        view = st.view_of(cur.view)
        scope_node, _ = tree.resolve(cur.scope, st.root_ns, st.home_ns)
        spd, spl = view.rel(*tree.paths(scope_node)) if scope_node is not None else (None, None)
        cands = [ev for _, ev in events if cur.recursive and ev[1] != cur.scope]
        for _ in range(rng.randint(1, 2)):
            if cands and rng.random() < 0.6:
                ev = rng.choice(cands)
                ppd, ppl = view.rel(parent_of(ev[3], ev[4]), ev[2])
            elif spd is not None:
                ppd, ppl = spd, spl
            else:
                continue
            g = ghost_entry(tree, view, ppd, ppl, rng, cur.recursive and rng.random() < 0.4)
            if g is not None and (room is None or len(out) < room):
                out.insert(rng.randrange(len(out) + 1), ("ghost", g))
    if "repeat" in modes and cur.rep is not None and 0 <= cur.rep < n and out \
            and (room is None or len(out) < room):
        # The last entry of the previous page again: nothing came between the
        # two, so replaying it is harmless.
        out.insert(0, journal[cur.rep])
    nxt = cur.copy(seq=j, tidx=cur.tidx + 1,
                   rep=last if ("repeat" in modes and has_more) else None)
    return out, nxt, has_more
