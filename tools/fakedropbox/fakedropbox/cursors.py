"""Opaque list_folder cursors.

Exists to keep cursor encoding in one place.  A cursor carries the listing
scope and options, the server instance and reset epoch it was made under, and
its position: mid-listing (phase "L", last emitted key path), listing
tombstones (phase "T", index) or journal (phase "J", sequence number).
``scope`` is always the folder's full path_lower; ``view`` is the namespace
view the cursor was made in (None: the root view, the only one without
--team; "h": the team member's home view, see team.py).  A root-view cursor
encodes exactly as before views existed.
Cursors of another server instance or an older epoch answer 409 reset.

Adversarial mode (adversarial.py) adds phase "S" (serving page ``tidx`` of the
listing snapshot ``snap``), uses ``tidx`` as a page counter in phase "J", and
``rep``: the journal index of the entry to repeat at the start of the next
page.  Cursors without these encode exactly as before.

``pg`` is the page index within the current listing (paging.py): 0 for the
list_folder reply, one more for each continue page while ``has_more`` was
true, 0 again once a page ended the listing.  It is encoded only when not 0,
so a cursor at the end of a listing encodes exactly as before.
"""

import base64
import json


class BadCursor(Exception):
    pass


class Cursor:
    __slots__ = ("inst", "epoch", "scope", "recursive", "deleted", "nondl",
                 "limit", "seq", "phase", "keypath", "tidx", "view", "snap", "rep", "pg")

    def __init__(self, inst, epoch, scope, recursive, deleted, nondl, limit, seq,
                 phase="J", keypath=None, tidx=0, view=None, snap=None, rep=None, pg=0):
        self.inst, self.epoch, self.scope = inst, epoch, scope
        self.recursive, self.deleted, self.nondl = recursive, deleted, nondl
        self.limit, self.seq, self.phase = limit, seq, phase
        self.keypath, self.tidx = keypath, tidx
        self.view = view
        self.snap, self.rep = snap, rep
        self.pg = pg

    def copy(self, **kw):
        c = Cursor(self.inst, self.epoch, self.scope, self.recursive, self.deleted,
                   self.nondl, self.limit, self.seq, self.phase, self.keypath, self.tidx,
                   self.view, self.snap, self.rep, self.pg)
        for k, v in kw.items():
            setattr(c, k, v)
        return c

    def encode(self):
        payload = [1, self.inst, self.epoch, self.scope, int(self.recursive),
                   int(self.deleted), int(self.nondl), self.limit, self.seq,
                   self.phase, self.keypath, self.tidx]
        if self.pg:
            payload += [self.view, self.snap, self.rep, self.pg]
        elif self.snap is not None or self.rep is not None:
            payload += [self.view, self.snap, self.rep]
        elif self.view is not None:
            payload.append(self.view)
        raw = json.dumps(payload, separators=(",", ":"), ensure_ascii=True).encode()
        return "AAF" + base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, s):
        if not isinstance(s, str) or not s.startswith("AAF") or len(s) < 8:
            raise BadCursor("not a cursor")
        try:
            body = s[3:]
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            p = json.loads(raw.decode())
            if not isinstance(p, list) or len(p) not in (12, 13, 15, 16) or p[0] != 1:
                raise ValueError
            pg = 0
            if len(p) == 16:
                pg = p.pop()
                if isinstance(pg, bool) or not isinstance(pg, int) or pg < 0:
                    raise ValueError
            snap = rep = None
            if len(p) == 15:
                rep, snap = p.pop(), p.pop()
                if not all(x is None or (isinstance(x, int) and not isinstance(x, bool))
                           for x in (snap, rep)):
                    raise ValueError
            view = p.pop() if len(p) == 13 else None
            if view not in (None, "h"):
                raise ValueError
            (_, inst, epoch, scope, rec, dele, nondl, limit, seq, phase, kp, tidx) = p
            if phase not in ("L", "T", "J", "S") or not isinstance(scope, str) \
                    or not isinstance(seq, int) or not isinstance(limit, int):
                raise ValueError
            if kp is not None and not (isinstance(kp, list) and all(isinstance(k, str) for k in kp)):
                raise ValueError
            return cls(inst, epoch, scope, bool(rec), bool(dele), bool(nondl), limit,
                       seq, phase, kp, tidx, view, snap, rep, pg)
        except BadCursor:
            raise
        except Exception:
            raise BadCursor("not a cursor")
