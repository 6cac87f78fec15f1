"""Server-side page policy of list_folder and continue: a cap on the entries a
page holds (--max-page), a stretch of 1-entry pages (--tiny-pages) and the
server time a page costs (--page-cost-ms-per-1000).

Exists because Dropbox treats ``limit`` as an upper bound only: real accounts
get pages far smaller than asked, sometimes pages of 1 entry for long
stretches, and each page costs server time roughly proportional to its
entries.  A benchmark against a fake that always fills ``limit`` at once
measures the fake, not the client.  All three are off by default.

Page index: the pages of one listing are numbered from 0 (the list_folder
reply) by the ``pg`` counter the cursor carries (cursors.py); a page with
``has_more`` false ends the listing, and the next continue (a round of delta
pages) starts again at page 0.

THREAD-SAFETY: the settings are plain attributes, replaced whole by the
control API; a page reads each once.  ``spend`` sleeps in the calling request
thread and must be called without the tree lock held.
"""

import time


class PagingError(ValueError):
    pass


def parse_tiny(value):
    """'START:COUNT' | [START, COUNT] | None | '' -> (start, count) or None (off)."""
    if value is None or value == "" or value == "off":
        return None
    if isinstance(value, str):
        a, sep, b = value.partition(":")
        if not sep:
            raise PagingError("tiny_pages: give START:COUNT, e.g. 3:200")
        try:
            start, count = int(a), int(b)
        except ValueError:
            raise PagingError("tiny_pages: START and COUNT must be integers")
    elif isinstance(value, (list, tuple)) and len(value) == 2 and \
            all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        start, count = value
    else:
        raise PagingError("tiny_pages: give \"START:COUNT\" or [START, COUNT]")
    if start < 0 or count < 0:
        raise PagingError("tiny_pages: START and COUNT must be >= 0")
    return (start, count) if count else None


def tiny_text(tiny):
    return None if tiny is None else "%d:%d" % tiny


def parse_max_page(value):
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PagingError("max_page must be an integer >= 0 (0: no cap)")
    return value


def parse_cost(value):
    try:
        x = float(value or 0)
    except (TypeError, ValueError):
        raise PagingError("page_cost_ms_per_1000 must be a number >= 0")
    if not x >= 0 or x == float("inf"):
        raise PagingError("page_cost_ms_per_1000 must be a number >= 0")
    return x


class Paging:
    """The page policy (State.paging)."""

    def __init__(self, max_page=0, tiny=None, cost_ms_per_1000=0.0):
        self.max_page = max_page            # 0: no cap
        self.tiny = tiny                    # (start, count) or None
        self.cost_ms_per_1000 = cost_ms_per_1000

    def in_tiny(self, pg):
        t = self.tiny
        return t is not None and t[0] <= pg < t[0] + t[1]

    def cap(self, limit):
        """limit as capped by max_page (the largest page outside a tiny stretch)."""
        m = self.max_page
        return min(limit, m) if m else limit

    def page_size(self, limit, pg):
        """Entries page ``pg`` of a listing asked with ``limit`` may hold."""
        return 1 if self.in_tiny(pg) else self.cap(limit)

    def room(self, pg):
        """The hard bound on page ``pg``, adversarial extras (repeats, ghosts)
        included: 1 in a tiny stretch, else max_page, or None when neither is
        set (then the extras may exceed limit, as Dropbox's "approximate" limit
        allows)."""
        if self.in_tiny(pg):
            return 1
        return self.max_page or None

    def spend(self, entries):
        """Sleep the server time a page of ``entries`` entries costs."""
        c = self.cost_ms_per_1000
        if c and entries:
            time.sleep(c * entries / 1e6)

    def config(self):
        return {"max_page": self.max_page, "tiny_pages": tiny_text(self.tiny),
                "page_cost_ms_per_1000": self.cost_ms_per_1000}
