"""Injectable faults (429, 5xx, connection resets, stalls, truncation, ...).

Exists so clients' retry and robustness paths can be tested deterministically.
A rule matches a route ("files/download") or "*" (every API route); it lets
``after`` matching requests through, then fails the next ``count`` ones
(count <= 0: forever).  With ``probability`` p (0 < p <= 1) an eligible
request fails only with that chance (from the rule's own ``seed``, so a run
is repeatable): random faults for soak runs.  Rules count matches
independently; the first rule that fires wins.  Own lock: ``FaultSet.lock``.
"""

import random
import threading

KINDS = ("429json", "429text", "500", "503", "reset", "stall", "truncate",
         "malformed_json", "expired_token",
         # hostile servers (absurd or damaged replies; see README "Fault rules")
         "502html", "504html", "flip", "stall_body", "drip", "whole_200", "huge_size",
         "stuck_cursor", "409json",
         # held until POST /_control/faults/release (at most hold_seconds): a slow request a test
         # ends when it chooses, so no test depends on how long a stall lasts
         "hold")
PARAMS = {"retry_after", "stall_seconds", "truncate_at", "close", "flip_at", "drip_bytes",
          "drip_seconds", "error_summary", "hold_seconds"}


class FaultError(ValueError):
    pass


class Rule:
    def __init__(self, spec):
        if not isinstance(spec, dict):
            raise FaultError("a fault rule must be a JSON object")
        self.route = spec.get("route", "*")
        self.kind = str(spec.get("kind", ""))
        if self.kind not in KINDS:
            raise FaultError("unknown fault kind %r (one of %s)" % (self.kind, ", ".join(KINDS)))
        if not isinstance(self.route, str):
            raise FaultError("route must be a string")
        self.route = self.route.strip("/")
        if self.route.startswith("2/"):
            self.route = self.route[2:]
        self.route = self.route or "*"
        try:
            self.count = int(spec.get("count", 1))
            self.after = int(spec.get("after", 0))
        except (TypeError, ValueError):
            raise FaultError("count and after must be integers")
        try:
            self.probability = float(spec.get("probability", 1.0))
        except (TypeError, ValueError):
            raise FaultError("probability must be a number")
        if not 0 < self.probability <= 1:
            raise FaultError("probability must be in (0, 1]")
        self.random = random.Random(spec.get("seed", 1))
        self.params = {k: spec[k] for k in PARAMS if k in spec}
        for k in ("retry_after", "stall_seconds", "truncate_at", "flip_at", "drip_bytes", "drip_seconds",
                  "hold_seconds"):
            if k in self.params and not isinstance(self.params[k], (int, float)):
                raise FaultError("%s must be a number" % k)
        if "error_summary" in self.params and not isinstance(self.params["error_summary"], str):
            raise FaultError("error_summary must be a string")
        self.seen = 0
        self.fired = 0
        # Set by release (or when the rule is removed): held requests go on.
        self.released = threading.Event()

    def to_json(self):
        d = {"route": self.route, "kind": self.kind, "count": self.count,
             "after": self.after, "seen": self.seen, "fired": self.fired}
        if self.probability < 1:
            d["probability"] = self.probability
        d.update(self.params)
        return d


class FaultSet:
    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []

    def add(self, spec):
        """spec: one rule or {"rules": [...]}; returns the added rules' JSON."""
        specs = spec["rules"] if isinstance(spec, dict) and "rules" in spec else [spec]
        if not isinstance(specs, list):
            raise FaultError("rules must be a list")
        rules = [Rule(s) for s in specs]
        with self.lock:
            self.rules.extend(rules)
        return [r.to_json() for r in rules]

    def clear(self):
        """Removes every rule; returns their JSON as they stood when removed, so a caller reads
        the requests they fired and knows that every later request meets no fault."""
        with self.lock:
            rules, self.rules = self.rules, []
            for r in rules:
                r.released.set()
            return [r.to_json() for r in rules]

    def release(self, route=None):
        """Lets the requests held by the `hold` rules on ``route`` (None: every route) go on, and
        the later ones they match pass at once; returns those rules' JSON."""
        with self.lock:
            rules = [r for r in self.rules if r.kind == "hold" and (route is None or r.route == route.strip("/"))]
            for r in rules:
                r.released.set()
            return [r.to_json() for r in rules]

    def list(self):
        with self.lock:
            return [r.to_json() for r in self.rules]

    def match(self, route):
        """The rule that fires for this request, or None."""
        hit = None
        with self.lock:
            for r in self.rules:
                if r.route != "*" and r.route != route:
                    continue
                r.seen += 1
                if hit is None and r.seen > r.after and (r.count <= 0 or r.fired < r.count) and (
                        r.probability >= 1 or r.random.random() < r.probability):
                    r.fired += 1
                    hit = r
        return hit
