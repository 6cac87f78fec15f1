"""The parallel fill of scripts/bench (--fill-only, or the cheap parts in a full run): the
sequential fill (--fill-parallel 1) against the default parallel one, side by side, each a cold
mount with --no-persist on a fake that charges per request and per 1000 entries of a page: start of
mount to the end of a cold `find`, the fill (status fill_seconds), the listing requests against the
pages the data needs, the walk once the fill is over, a refill after a cursor reset, and (with
--big) `cat` of small files while the fill runs.
"""

import os
import random
import signal
import time

from .harness import (Mount, fmt_runs, fmt_s, kernel_name_ok, loadavg, log, print_table, ratio_str, routes_str,
                      run_timed, start_fake, time_find, verdict, wait_for, warm_fake)

# Targets of the parallel fill, on an account with 12 top-level folders, 30 ms per request and
# FILL_PAGE_COST ms of server time per 1000 entries of a page.
TARGET_FILL_FIND_S = 2.5            # 100,000 entries: start of mount to end of a cold find, parallel
TARGET_FILL_SPEEDUP = 2.0           # ... at least this much faster than --fill-parallel 1
TARGET_FILL_REQ_FACTOR = 1.3        # list_folder + continue + get_latest_cursor requests
TARGET_FILL_REQ_SLACK = 20          # ... <= 1.3 x the pages the data needs + 20
TARGET_FILL_SMALL_PAGES_S = 10.0    # the same account with pages capped at FILL_SMALL_PAGE entries
TARGET_FILL_BIG_FIND_S = 20.0       # 1,000,000 entries: cold find
TARGET_FILL_BIG_FILL_S = 12.0       # ... and the fill
TARGET_FILL_BIG_BPE = 250           # ... and the daemon's peak RSS per entry, bytes
TARGET_FILL_CAT_EXTRA_MS = 100      # a small file's cat during the fill: latency + this
FILL_PAGE_COST = 30                 # page_cost_ms_per_1000 of the fake
FILL_TOP_FOLDERS = 12
FILL_SMALL_PAGE = 100
FILL_CAT_INTERVAL_S = 1.0

# The two fills compared, as extra `dropboxfs mount` arguments (each mount also gets --no-persist).
FILL_MODES = {"sequential": ("--fill-parallel", "1"), "parallel": ()}
LIST_ROUTES = ("files/list_folder", "files/list_folder/continue", "files/list_folder/get_latest_cursor")


class TreeScan:
    """What the fake's warm-up listing tells about its tree, page by page: the entries, the lines
    `find MNT` must print (the mount point and every entry the kernel can carry under a shown
    folder, as in build_tmpfs_copy; a path with a newline in it prints as more than one line), the
    top-level folders, and a few small files per top-level folder for the cat probes (a
    deterministic reservoir sample)."""

    def __init__(self, seed=15, per_top=4):
        self.entries = 0
        self.visible = 0
        self.lines = 1  # the mount point
        self.top_folders = 0
        self.shown = {"": 0}  # shown folder (path_lower) -> newlines in its path
        self.rng = random.Random(seed)
        self.per_top = per_top
        self.small = {}   # top-level folder (lower case) -> sampled path_display of small files
        self.seen = {}

    def page(self, entries):
        for e in entries:
            self.entries += 1
            pl = e["path_lower"]
            parent = pl.rpartition("/")[0]
            if parent not in self.shown or not kernel_name_ok(e["name"]):
                continue
            self.visible += 1
            newlines = self.shown[parent] + e["name"].count("\n")
            self.lines += 1 + newlines
            if e[".tag"] == "folder":
                self.shown[pl] = newlines
                self.top_folders += parent == ""
            elif e[".tag"] == "file" and self.small_file(e):
                top = pl.split("/")[1]
                n = self.seen[top] = self.seen.get(top, 0) + 1
                bucket = self.small.setdefault(top, [])
                if len(bucket) < self.per_top:
                    bucket.append(e["path_display"])
                else:
                    k = self.rng.randrange(n)
                    if k < self.per_top:
                        bucket[k] = e["path_display"]

    @staticmethod
    def small_file(e):
        """A plain file of at most 16 KiB two to five folders below the root."""
        return (3 <= e["path_lower"].count("/") <= 6 and 0 < (e.get("size") or 0) <= 16384
                and e.get("is_downloadable", True) and "symlink_info" not in e
                and e["path_display"].isprintable())

    def cat_paths(self, n):
        """/Special/notes.txt first, then one small file of each top-level folder in turn."""
        out = ["/Special/notes.txt"]
        buckets = [list(self.small[t]) for t in sorted(self.small)]
        while len(out) < n and any(buckets):
            for b in buckets:
                if b and len(out) < n:
                    out.append(b.pop(0))
        return out


def start_fill_fake(n, folders, lat, top_folders):
    """A fake for the fill section: warmed at 0 ms latency and no page cost (hashes and entry JSON
    cached, the tree scanned), then set to `lat` ms per request and FILL_PAGE_COST ms per 1000
    entries of a page. Returns (fake, TreeScan, info dict)."""
    extra = ("--top-folders", top_folders) if top_folders else ()
    fake, build_s = start_fake(n, folders, lat, extra)
    fake.config(page_cost_ms_per_1000=0, max_page=0)
    scan = TreeScan()
    warmup, page_ms = warm_fake(fake, lat, on_page=scan.page)
    fake.config(latency_ms=lat, page_cost_ms_per_1000=FILL_PAGE_COST)
    fake.reset_stats()
    info = {"synthetic": n, "folders": folders, "top_folders_flag": top_folders, "latency_ms": lat,
            "page_cost_ms_per_1000": FILL_PAGE_COST, "tree_entries": scan.entries, "find_lines": scan.lines,
            "top_folders": scan.top_folders, "fake_start_s": build_s, "warmup_s": warmup, "fake_page_ms": page_ms}
    log("fake up in %.1f s (--synthetic %d --folders %d%s): %d entries, %d top-level folders, find must print "
        "%d lines; warm-up listing %.1f s; warm 2000-entry page %s ms; now %g ms latency, page cost %g ms per 1000"
        % (build_s, n, folders, " --top-folders %d" % top_folders if top_folders else "", scan.entries,
           scan.top_folders, scan.lines, warmup, ", ".join("%.1f" % t for t in sorted(page_ms)), lat,
           FILL_PAGE_COST))
    return fake, scan, info


def measure_fill(args, binary, fake, workdir, label, mode, expect_lines, find_timeout, fill_timeout):
    """One cold mount (--no-persist, a fresh cache folder) with the sequential or the parallel fill,
    timed from the start of `dropboxfs mount --foreground` to the end of a cold `find MNT | wc -l`
    started the moment the mount appears; then its fill awaited (status attribute) and its requests
    read from the fake (counters zeroed before the mount)."""
    fake.reset_stats()
    load = loadavg()
    m = Mount(binary, fake, workdir, label, extra=("--no-persist",) + FILL_MODES[mode])
    t_find = time.monotonic()
    dt, lines, finished = time_find(m.mnt, workdir, timeout=find_timeout)
    r = {"label": label, "mode": mode, "load": load, "mount_s": m.mount_seconds, "find_s": dt, "lines": lines,
         "expected_lines": expect_lines, "finished": finished, "total_s": (t_find - m.t0) + dt,
         "status_after_find": m.status(), "routes_after_find": routes_str(fake.stats())}
    filled = m.wait_filled(fill_timeout)
    fields = m.status_fields()
    r["filled"] = filled
    r["fill_s"] = float(fields["fill_seconds"]) if filled and "fill_seconds" in fields else None
    r["fill_waited_s"] = time.monotonic() - m.t0  # a lower bound of the fill when it did not end
    stats = fake.stats()
    routes = stats.get("routes", {})
    r["list_requests"] = sum(routes.get(k, 0) for k in LIST_ROUTES)
    r["requests"] = stats["total"]
    r["routes"] = routes_str(stats)
    r["pages_served"] = sum(stats.get("pages", {}).values())
    r["entries_served"] = sum(stats.get("entries", {}).values())
    r["status"] = m.status()
    r["entries"] = int(fields.get("entries", "0") or 0)
    r["cpu"] = m.cpu_seconds()
    r["hwm_kib"] = m.vm_hwm_kib()
    r["one_chain_logged"] = "listing it in one chain" in m.log_path.read_text(errors="replace")
    r["unmount_s"] = m.release(args.keep_logs)
    return r


def describe_fill(r):
    return ("%s: mounted in %.2f s, find %s%s, %d lines (expected %d): start to end of find %s%s; fill %s; "
            "%d list requests, %d in all (%s); %d pages, %d entries served; CPU %.2f s, VmHWM %.1f MiB; load %s%s"
            % (r["label"], r["mount_s"], "" if r["finished"] else "> ", fmt_s(r["find_s"]), r["lines"],
               r["expected_lines"], "" if r["finished"] else "> ", fmt_s(r["total_s"]),
               fmt_s(r["fill_s"]) if r["filled"] else "> %s (still filling)" % fmt_s(r["fill_waited_s"]),
               r["list_requests"], r["requests"], r["routes"], r["pages_served"], r["entries_served"], r["cpu"],
               r["hwm_kib"] / 1024, r["load"], "; logged: one chain" if r["one_chain_logged"] else ""))


def walk_after_fill(args, binary, fake, workdir, label, fill_timeout):
    """One more cold parallel mount whose `find` starts only once the fill is over: the
    kernel-cold walk alone (every folder complete, no request), to split the cold find into the
    fill and the walk after it."""
    m = Mount(binary, fake, workdir, label, extra=("--no-persist",))
    m.wait_filled(fill_timeout)
    fields = m.status_fields()
    dt, lines, _ = time_find(m.mnt, workdir)
    out = {"find_s": dt, "lines": lines, "fill_s": float(fields["fill_seconds"]) if "fill_seconds" in fields
           else None, "load": loadavg()}
    m.release(args.keep_logs)
    log("    %s: fill %s, then find %s (%d lines)" % (label, fmt_s(out["fill_s"]), fmt_s(dt), lines))
    return out


def measure_refill(args, binary, fake, workdir, label, lat, fill_timeout):
    """One more cold parallel mount: its fill, then a refill after a cursor reset, which plans its
    branches from the sizes the filled tree holds (Sync/FillPlan.swift). The daemon is stopped
    (SIGSTOP) while the fake's cursors are reset and the fake is warmed again (a reset drops its
    cached entry JSON, which would make every refill page slower than any page of the cold fill),
    then continued; the refill is read from the status attribute."""
    m = Mount(binary, fake, workdir, label, extra=("--no-persist",))
    out = {"filled": m.wait_filled(fill_timeout), "load": loadavg()}
    out["cold_fill_s"] = float(m.status_fields().get("fill_seconds", "nan"))
    os.kill(m.proc.pid, signal.SIGSTOP)
    try:
        fake.reset_cursors()
        fake.config(page_cost_ms_per_1000=0)
        warm_fake(fake, lat)
        fake.config(latency_ms=lat, page_cost_ms_per_1000=FILL_PAGE_COST)
        fake.reset_stats()
    finally:
        os.kill(m.proc.pid, signal.SIGCONT)
    deadline = time.monotonic() + fill_timeout
    while m.status_fields().get("resets", "0") == "0" and time.monotonic() < deadline:
        time.sleep(0.05)
    out["refilled"] = m.wait_filled(max(1, deadline - time.monotonic()))
    fields = m.status_fields()
    out["refill_s"] = float(fields["fill_seconds"]) if out["refilled"] and "fill_seconds" in fields else None
    stats = fake.stats()
    out["list_requests"] = sum(stats.get("routes", {}).get(k, 0) for k in LIST_ROUTES)
    out["routes"] = routes_str(stats)
    out["split_logged"] = "planning from the tree's sizes" in m.log_path.read_text(errors="replace")
    m.release(args.keep_logs)
    log("    %s: cold fill %s, refill after a cursor reset %s; refill requests %s"
        % (label, fmt_s(out["cold_fill_s"]), fmt_s(out["refill_s"]) if out["refill_s"] is not None else "(not done)",
           out["routes"]))
    return out


def fill_part(args, binary, workdir, fake, scan, info, key, title, runs, pages_needed, find_timeout,
              fill_timeout, max_page=0, walk_alone=False, refill=False):
    """Per run a cold mount with each fill, the order swapped every other run (drift in the
    machine's load then weighs on both); with walk_alone, one more parallel mount for the walk
    after the fill."""
    log("-- %s: %d run(s) of each fill%s --" % (title, runs, ", find capped at %g s" % find_timeout
                                                 if find_timeout else ""))
    P = dict(info, key=key, title=title, pages_needed=pages_needed, max_page=max_page,
             sequential=[], parallel=[])
    for i in range(runs):
        order = ("sequential", "parallel") if i % 2 == 0 else ("parallel", "sequential")
        for mode in order:
            r = measure_fill(args, binary, fake, workdir, "fill-%s-%s-%d" % (key, mode, i + 1), mode, scan.lines,
                             find_timeout, fill_timeout)
            r["run"] = i
            log("    " + describe_fill(r))
            P[mode].append(r)
    if walk_alone:
        P["walk_alone"] = walk_after_fill(args, binary, fake, workdir, "fill-%s-walk-after-fill" % key, fill_timeout)
    if refill:
        P["refill"] = measure_refill(args, binary, fake, workdir, "fill-%s-refill" % key, info["latency_ms"],
                                     fill_timeout)
    return P


def bench_fill(args, binary, workdir, results, small_pages=True):
    """The 100,000-entry parts: 12 top-level folders with 2000-entry pages, then (if small_pages)
    with pages capped at 100 entries, then the default synthetic shape (about 2,000 top-level
    folders)."""
    n, folders, lat = args.entries, args.folders, args.latency_ms
    F = results.setdefault("fill", {})
    log("")
    log("== parallel fill: %d entries, %g ms latency, page cost %g ms per 1000 entries; sequential "
        "(--fill-parallel 1) against parallel (default), cold mounts with --no-persist ==" % (n, lat, FILL_PAGE_COST))
    fake, scan, info = start_fill_fake(n, folders, lat, FILL_TOP_FOLDERS)
    F["top12"] = fill_part(args, binary, workdir, fake, scan, info, "top12",
                           "%d top-level folders, 2000-entry pages" % scan.top_folders, args.runs,
                           -(-scan.entries // 2000), None, 300, walk_alone=True, refill=True)
    if small_pages:
        fake.config(max_page=FILL_SMALL_PAGE)
        F["small_pages"] = fill_part(args, binary, workdir, fake, scan, info, "small_pages",
                                     "the same account, pages capped at %d entries (max_page)" % FILL_SMALL_PAGE,
                                     args.runs, -(-scan.entries // FILL_SMALL_PAGE), args.fill_timeout,
                                     max(300, args.fill_timeout), max_page=FILL_SMALL_PAGE, refill=True)
    fake.stop()
    log("")
    fake, scan, info = start_fill_fake(n, folders, lat, None)
    F["default_shape"] = fill_part(args, binary, workdir, fake, scan, info, "default_shape",
                                   "default synthetic shape, %d top-level folders" % scan.top_folders, 1,
                                   -(-scan.entries // 2000), None, 300)
    fake.stop()


FAKE_LOG_KEEPS = 1000  # requests in the fake's /_control/log (tools/fakedropbox/README.md)


def folder_listings_between(fake, t0, t1):
    """The folders listed by themselves (non-recursive list_folder, from the fake's request log)
    between wall-clock times t0 and t1: during a cat, the levels of its path the fill had not
    brought yet, each one round trip before the next level can be looked up (the fill's own
    folder listings, a few per fill, may fall in the window too). None when the fake's log (its
    last 1000 requests) no longer reaches back to t0: a long cat during a big fill."""
    entries = fake.log()
    if len(entries) >= FAKE_LOG_KEEPS and entries[0]["ts"] > t0 - 0.01:
        return None
    return sum(1 for e in entries
               if e["route"] == "files/list_folder" and not (e.get("arg") or {}).get("recursive", True)
               and t0 - 0.01 <= e["ts"] <= t1 + 0.01)


def probe_cats(args, binary, fake, workdir, label, paths, lat, fill_timeout):
    """A cold parallel mount (--no-persist) on which small files are read with `cat` while the fill
    runs: one file a second (at least half a second after the last cat ended), each a different
    file read once by a fresh process (FUSE pages cannot be dropped from the page cache, so a file
    read twice would not ask the daemon again). Stops when the fill is over."""
    fake.reset_stats()
    m = Mount(binary, fake, workdir, label, extra=("--no-persist",))
    # The fill sets its phase a moment after the mount appears.
    wait_for(lambda: m.status_fields().get("phase") != "lazy", 5, step=0.002)
    samples = []
    next_at = time.monotonic()
    for path in paths:
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        t_start = time.monotonic()
        before = m.status_fields()
        if before.get("phase") != "filling":
            break
        at = time.monotonic() - m.t0
        w0 = time.time()
        try:
            dt, rc, _ = run_timed(["cat", m.mnt + path], timeout=30)
            error = None if rc is not None else "timed out after 30 s"
        except RuntimeError as e:
            dt, error = None, str(e)[-300:]
        w1 = time.time()
        samples.append({"path": path, "at_s": at, "seconds": dt if error is None else None, "error": error,
                        "pages_before": int(before.get("pages", "0") or 0),
                        "phase_after": m.status_fields().get("phase"),
                        "folder_listings": folder_listings_between(fake, w0, w1)})
        # One a second; a cat that waited long is followed by a pause of half that.
        next_at = max(t_start + FILL_CAT_INTERVAL_S, time.monotonic() + FILL_CAT_INTERVAL_S / 2)
        log("    cat %s at %.2f s into the mount (fill pages so far %s): %s"
            % (path, at, before.get("pages"), error or "%.0f ms" % (dt * 1000)))
    m.wait_filled(fill_timeout)
    fields = m.status_fields()
    out = {"label": label, "samples": samples, "fill_s": float(fields["fill_seconds"]) if "fill_seconds" in fields
           else None, "status": m.status(), "routes": routes_str(fake.stats()), "hwm_kib": m.vm_hwm_kib(),
           "entries": int(fields.get("entries", "0") or 0), "limit_ms": lat + TARGET_FILL_CAT_EXTRA_MS}
    out["unmount_s"] = m.release(args.keep_logs)
    log("    cat probe mount: fill %s, %s; requests %s" % (fmt_s(out["fill_s"]), out["status"], out["routes"]))
    return out


def bench_fill_big(args, binary, workdir, results):
    """The 1,000,000-entry part (12 top-level folders), then the cat probes during a parallel fill."""
    n, lat = args.big_entries, args.latency_ms
    folders = max(1, n // 10)
    F = results.setdefault("fill", {})
    log("")
    log("== parallel fill, --big: %d entries (--folders %d --top-folders %d), %g ms latency, page cost "
        "%g ms per 1000 entries ==" % (n, folders, FILL_TOP_FOLDERS, lat, FILL_PAGE_COST))
    fake, scan, info = start_fill_fake(n, folders, lat, FILL_TOP_FOLDERS)
    P = fill_part(args, binary, workdir, fake, scan, info, "big", "%d entries, %d top-level folders"
                  % (scan.entries, scan.top_folders), args.runs, -(-scan.entries // 2000), args.big_timeout, 900,
                  walk_alone=True, refill=True)
    log("-- cat of small files during a parallel fill (one a second, each file once) --")
    P["cats"] = probe_cats(args, binary, fake, workdir, "fill-big-cat-probe", scan.cat_paths(args.cat_samples), lat,
                           900)
    F["big"] = P
    fake.stop()


def report_fill(results):
    F = results["fill"]
    for key in ("top12", "small_pages", "default_shape", "big"):
        if key in F:
            report_fill_part(F[key])


def report_fill_part(P):
    S, Q = P["sequential"], P["parallel"]
    key, N, pages = P["key"], P["tree_entries"], P["pages_needed"]
    budget = TARGET_FILL_REQ_FACTOR * pages + TARGET_FILL_REQ_SLACK
    log("")

    def runs(rs, fn, fmt=fmt_s):
        return fmt_runs([fn(r) for r in rs], fmt)

    def total(r):
        return ("" if r["finished"] else "> ") + fmt_s(r["total_s"])

    def fill(r):
        return fmt_s(r["fill_s"]) if r["filled"] else "> " + fmt_s(r["fill_waited_s"])

    def bpe(r):
        return r["hwm_kib"] * 1024 / max(1, r["entries"])

    def pairs(fn, seq_bound=lambda s: not s["finished"]):
        """seq/par per run (the runs paired by index), '>' when the sequential value is a bound."""
        return ", ".join(ratio_str(fn(s), fn(q), lower_bound=seq_bound(s)) for s, q in zip(S, Q))

    both = [x for pair in zip(S, Q) for x in pair] + S[len(Q):] + Q[len(S):]
    rows = []
    t_find = {"top12": TARGET_FILL_FIND_S, "small_pages": TARGET_FILL_SMALL_PAGES_S,
              "big": TARGET_FILL_BIG_FIND_S}.get(key)
    rows.append(["start of mount to end of cold find", ", ".join(total(r) for r in S), ", ".join(total(r) for r in Q),
                 pairs(lambda r: r["total_s"]), "<= %g s (parallel)" % t_find if t_find else "",
                 verdict([r["finished"] and r["total_s"] <= t_find for r in Q]) if t_find else ""])
    if key == "top12":
        flags = []
        for s, q in zip(S, Q):
            ok = s["total_s"] / q["total_s"] >= TARGET_FILL_SPEEDUP
            flags.append(ok if ok or s["finished"] else None)
        v = verdict([bool(f) for f in flags]) if None not in flags else "undecided (sequential cut)"
        rows.append(["  parallel faster than sequential by", "", "", pairs(lambda r: r["total_s"]),
                     ">= %gx" % TARGET_FILL_SPEEDUP, v])
    rows.append(["  start of mount to mount appears", runs(S, lambda r: r["mount_s"]), runs(Q, lambda r: r["mount_s"]),
                 "", "", ""])
    rows.append(["  find once mounted", runs(S, lambda r: r["find_s"]), runs(Q, lambda r: r["find_s"]), "", "", ""])
    W = P.get("walk_alone")
    if W:
        rows.append(["  find started after the fill (1 more mount)", "", "%s (fill %s)" % (fmt_s(W["find_s"]),
                                                                                        fmt_s(W["fill_s"])),
                     "", "", ""])
    R = P.get("refill")
    if R:
        rows.append(["  refill after a cursor reset (1 more mount)", "", "%s (its cold fill %s)"
                     % (fmt_s(R["refill_s"]) if R["refill_s"] is not None else "not done", fmt_s(R["cold_fill_s"])),
                     ratio_str(R["cold_fill_s"], R["refill_s"]) if R["refill_s"] else "",
                     "(planned from the tree's sizes)" if R["split_logged"] else "", ""])
        rows.append(["    its list_folder + continue", "", str(R["list_requests"]), "", "", ""])
    t_fill = TARGET_FILL_BIG_FILL_S if key == "big" else None
    rows.append(["fill (status fill_seconds)", ", ".join(fill(r) for r in S), ", ".join(fill(r) for r in Q),
                 pairs(lambda r: r["fill_s"] if r["filled"] else r["fill_waited_s"], lambda s: not s["filled"]),
                 "<= %g s (parallel)" % t_fill if t_fill else "",
                 verdict([r["filled"] and r["fill_s"] <= t_fill for r in Q]) if t_fill else ""])
    rows.append(["lines of find (entries seen)", runs(S, lambda r: r["lines"], str),
                 runs(Q, lambda r: r["lines"], str), "", "= %d" % P["find_lines"],
                 verdict([r["lines"] == r["expected_lines"] for r in both])])
    rows.append(["list_folder + continue + latest_cursor", runs(S, lambda r: r["list_requests"], str),
                 runs(Q, lambda r: r["list_requests"], str), "",
                 "<= %gxP+%d = %d" % (TARGET_FILL_REQ_FACTOR, TARGET_FILL_REQ_SLACK, budget) if key == "top12" else
                 "(%gxP+%d = %d)" % (TARGET_FILL_REQ_FACTOR, TARGET_FILL_REQ_SLACK, budget),
                 verdict([r["list_requests"] <= budget for r in Q]) if key == "top12" else ""])
    rows.append(["  per page needed (P = ceil(%d / %d) = %d)" % (N, P["max_page"] or 2000, pages),
                 runs(S, lambda r: r["list_requests"] / pages, lambda x: "%.2f" % x),
                 runs(Q, lambda r: r["list_requests"] / pages, lambda x: "%.2f" % x), "", "", ""])
    rows.append(["pages served (list_folder + continue)", runs(S, lambda r: r["pages_served"], str),
                 runs(Q, lambda r: r["pages_served"], str), "", "", ""])
    rows.append(["entries served / entries in the tree",
                 runs(S, lambda r: r["entries_served"] / N, lambda x: "%.2f" % x),
                 runs(Q, lambda r: r["entries_served"] / N, lambda x: "%.2f" % x), "", "", ""])
    rows.append(["API requests in all (+ longpoll etc.)", runs(S, lambda r: r["requests"], str),
                 runs(Q, lambda r: r["requests"], str), "", "", ""])
    rows.append(["daemon CPU to end of find and fill", runs(S, lambda r: r["cpu"]), runs(Q, lambda r: r["cpu"]), "", "",
                 ""])
    mib = lambda k: "%.0f MiB" % (k / 1024)  # noqa: E731
    rows.append(["daemon peak RSS (VmHWM)", runs(S, lambda r: r["hwm_kib"], mib), runs(Q, lambda r: r["hwm_kib"], mib),
                 "", "", ""])
    rows.append(["  per entry", runs(S, bpe, lambda b: "%.0f B" % b), runs(Q, bpe, lambda b: "%.0f B" % b), "",
                 "<= %d B (parallel)" % TARGET_FILL_BIG_BPE if key == "big" else "",
                 verdict([bpe(r) <= TARGET_FILL_BIG_BPE for r in Q]) if key == "big" else ""])
    if key == "default_shape":
        rows.append(["daemon logged the one-chain fallback", runs(S, lambda r: r["one_chain_logged"], str),
                     runs(Q, lambda r: r["one_chain_logged"], str), "", "", ""])
    C = P.get("cats")
    if C:
        ok = [s["seconds"] is not None and s["seconds"] * 1000 <= C["limit_ms"] for s in C["samples"]]
        rows.append(["cat of a small file during the fill", "",
                     ", ".join(("%.0f ms" % (s["seconds"] * 1000)) if s["seconds"] is not None else "error"
                               for s in C["samples"]) or "(no sample: fill over)", "",
                     "each <= %g ms" % C["limit_ms"], verdict(ok)])
        # A cat needs one round trip per path level the fill has not reached, then the download:
        # what each took beyond those round trips' latency is the fill's doing (queueing, pages).
        # "?": the fake's log no longer reached back to the cat's start (folder_listings_between).
        beyond = ["%.0f ms" % (s["seconds"] * 1000 - (s["folder_listings"] + 1) * P["latency_ms"])
                  if s["seconds"] is not None and s["folder_listings"] is not None
                  else "error" if s["seconds"] is None else "?" for s in C["samples"]]
        rows.append(["  folders it listed (one round trip each)", "",
                     ", ".join("?" if s["folder_listings"] is None else str(s["folder_listings"])
                               for s in C["samples"]), "", "", ""])
        rows.append(["  beyond (listings + download) x latency", "", ", ".join(beyond), "",
                     "(each <= %d ms)" % TARGET_FILL_CAT_EXTRA_MS, "informative"])
    rows.append(["load average (1 min) at mount start", runs(S, lambda r: r["load"].split()[0], str),
                 runs(Q, lambda r: r["load"].split()[0], str), "", "", ""])
    title = "%s: %d entries, %d top-level, %g ms, cost %g ms/1000%s" % (
        key, N, P["top_folders"], P["latency_ms"], P["page_cost_ms_per_1000"],
        ", max_page %d" % P["max_page"] if P["max_page"] else "")
    print_table(rows, [title, "sequential (--fill-parallel 1)", "parallel (default)", "seq/par", "target", "verdict"])
    log("requests by route to the end of the fill: sequential " + " | ".join(r["routes"] for r in S)
        + "; parallel " + " | ".join(r["routes"] for r in Q))
    log("status after the fill: sequential " + " | ".join(r["status"] for r in S)
        + "; parallel " + " | ".join(r["status"] for r in Q))
    if C:
        log("cat samples (seconds into the mount, fill pages applied before it, file): " + "; ".join(
            "%.1f s, %d pages, %s: %s" % (s["at_s"], s["pages_before"], s["path"],
                                          s["error"] or "%.0f ms" % (s["seconds"] * 1000)) for s in C["samples"]))
        log("cat probe mount: fill %s; %s" % (fmt_s(C["fill_s"]), C["routes"]))
