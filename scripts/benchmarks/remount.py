"""The remount section of scripts/bench: per run a cold mount with the store (its cache folder
kept), a cold mount with --no-persist, and remounts from the first one's stored tree, each timed
from the start of `dropboxfs mount --foreground` to the end of `find`, with its API requests by
route, the daemon's CPU and peak RSS, the clean unmount and the size of the database; one more
remount served by libfuse's multi-threaded loop (--spin-us 0) beside the default spinning one.
Also the helpers that read the stored tree (CACHE_DIR/trees/tree-*.db) from outside the daemon.
"""

import shutil
import sqlite3
import time
from pathlib import Path

from .harness import (Mount, fmt_runs, fmt_s, log, print_table, ratio_str, routes_split, routes_str, settle_cpu,
                      time_find, verdict, wait_for)
from .walk import TARGET_BYTES_PER_ENTRY
from fakedropbox.cursors import Cursor  # noqa: E402  (importable once the harness is loaded)

# Targets of the remount from the stored tree.
TARGET_REMOUNT_S = 1.0          # 100,000 entries: process start to the end of `find`
TARGET_REMOUNT_REQUESTS = 3
TARGET_REMOUNT_BIG_S = 8.0      # 1,000,000 entries

# ---- the stored tree, read from outside the daemon ----------------------------------------------

def tree_db_files(cache_dir):
    """The stored trees of a cache folder (CACHE_DIR/trees/tree-*.db)."""
    folder = Path(cache_dir) / "trees"
    return sorted(folder.glob("tree-*.db")) if folder.is_dir() else []


def db_bytes(cache_dir):
    """(bytes of tree-*.db, bytes of their -wal files) in the cache folder."""
    db = wal = 0
    for path in tree_db_files(cache_dir):
        db += path.stat().st_size
        w = Path(str(path) + "-wal")
        if w.exists():
            wal += w.stat().st_size
    return db, wal


def stored_meta(cache_dir):
    """The meta table of the stored tree, read through a read-only connection (in WAL mode a
    reader neither blocks the daemon's writer nor sees a half-written batch); {} if unreadable."""
    files = tree_db_files(cache_dir)
    if not files:
        return {}
    try:
        con = sqlite3.connect("file:%s?mode=ro" % files[0], uri=True, timeout=2)
        try:
            return dict(con.execute("SELECT key, value FROM meta"))
        finally:
            con.close()
    except sqlite3.Error:
        return {}


def cursor_seq(cursor):
    """The fake's journal position in one of its cursors (None when not a journal cursor)."""
    try:
        c = Cursor.decode(cursor)
    except Exception:
        return None
    return c.seq if c.phase == "J" else None


def latest_seq(fake):
    """The fake's journal length, from files/list_folder/get_latest_cursor (one API request)."""
    r = fake.rpc("files/list_folder/get_latest_cursor", {"path": "", "recursive": True})
    return cursor_seq(r.json()["cursor"])


def wait_stored(cache_dir, timeout, seq=None):
    """Waits until the stored tree is complete (and, given seq, its cursor at that journal
    position): the store has written everything the daemon applied. Returns the time or None."""
    def done():
        meta = stored_meta(cache_dir)
        if meta.get("state") != "complete":
            return False
        return seq is None or cursor_seq(meta.get("cursor") or "") == seq
    return wait_for(done, timeout, step=0.02)


# ---- the remount --------------------------------------------------------------------------------

def measure_mount(args, binary, fake, workdir, label, persist=True, cache_dir=None, find_timeout=None,
                  fill_timeout=900, extra=()):
    """One mount measured from the start of `dropboxfs mount --foreground` to the end of a cold
    `find` (the mount appears once the tree is there: listed, or loaded and caught up), then its
    fill and its store awaited, its peak RSS and CPU read, and a clean unmount timed. The database
    (tree-*.db and -wal in CACHE_DIR/trees) is measured after the daemon exited."""
    fake.reset_stats()
    m = Mount(binary, fake, workdir, label, extra=(() if persist else ("--no-persist",)) + tuple(extra),
              cache_dir=cache_dir)
    t_find = time.monotonic()
    dt, lines, finished = time_find(m.mnt, workdir, timeout=find_timeout)
    r = {"label": label, "persist": persist, "mount_s": m.mount_seconds, "loaded_s": m.loaded_seconds, "find_s": dt,
         "lines": lines, "finished": finished, "total_s": (t_find - m.t0) + dt}
    stats = fake.stats()
    r["requests"], r["longpolls"] = routes_split(stats)
    r["routes"] = routes_str(stats)
    r["status_after_find"] = m.status()
    r["cpu_after_find"] = m.cpu_seconds()
    m.wait_filled(fill_timeout)
    t_filled = time.monotonic()
    if persist:
        t_stored = wait_stored(m.cache_dir, fill_timeout)
        r["store_lag_s"] = None if t_stored is None else max(0.0, t_stored - t_filled)
    fields = m.status_fields()
    r["status"] = m.status()
    r["entries"] = int(fields.get("entries", "0") or 0)
    r["restored"] = int(fields.get("restored", "0") or 0)
    r["fill_seconds"] = fields.get("fill_seconds")
    stats = fake.stats()
    r["requests_settled"], r["longpolls_settled"] = routes_split(stats)
    r["routes_settled"] = routes_str(stats)
    r["cpu"] = settle_cpu(m)
    st = m.proc_status_kib()
    r["hwm_kib"] = st.get("VmHWM")
    r["rss_kib"] = {k: st.get(k) for k in ("VmRSS", "RssAnon", "RssFile", "RssShmem")}
    r["db_bytes_mounted"], r["wal_bytes_mounted"] = db_bytes(m.cache_dir)
    r["unmount_s"] = m.release(args.keep_logs)
    r["db_bytes"], r["wal_bytes"] = db_bytes(m.cache_dir)
    r["cache_dir"] = m.cache_dir
    return r


def describe_mount(r):
    s = ("%s: %smounted in %.2f s, find %s%s (%d lines): start to end of find %s; %d requests + %d longpoll (%s); "
         "CPU %.2f s, VmHWM %.1f MiB (%.0f B/entry)"
         % (r["label"], "" if r["loaded_s"] is None else "tree loaded in %.2f s, " % r["loaded_s"],
            r["mount_s"], "" if r["finished"] else "> ", fmt_s(r["find_s"]), r["lines"],
            fmt_s(r["total_s"]), r["requests"], r["longpolls"], r["routes"], r["cpu"], r["hwm_kib"] / 1024,
            r["hwm_kib"] * 1024 / max(1, r["entries"])))
    s += " (now: RSS %s)" % " ".join("%s %.1f" % (k.replace("Rss", "").replace("VmRSS", "total"), v / 1024)
                                     for k, v in r["rss_kib"].items() if v is not None)
    s += "; unmount %.2f s" % r["unmount_s"]
    if r["persist"]:
        s += "; wal while mounted %.1f MB" % (r["wal_bytes_mounted"] / 1e6)
        s += "; db %.1f MB + wal %.1f MB = %.0f B/entry" % (r["db_bytes"] / 1e6, r["wal_bytes"] / 1e6,
                                                         (r["db_bytes"] + r["wal_bytes"]) / max(1, r["entries"]))
        if r.get("store_lag_s") is not None and not r.get("restored"):
            s += "; store complete %.2f s after the fill" % r["store_lag_s"]
    return s


def bench_remount(args, binary, workdir, results, fake, key, runs, find_timeout):
    """Per run: a cold mount with persistence (its cache folder kept), a cold mount with
    --no-persist, then --remounts remounts from the first one's stored tree."""
    log("")
    log("== remount from the stored tree (%s), %d run(s), %d remount(s) each ==" % (key, runs, args.remounts))
    X = {"cold": [], "cold_nopersist": [], "remount": []}
    for i in range(runs):
        cold = measure_mount(args, binary, fake, workdir, "%s-cold-persist-%d" % (key, i + 1),
                             find_timeout=find_timeout)
        log("    " + describe_mount(cold))
        X["cold"].append(cold)
        bare = measure_mount(args, binary, fake, workdir, "%s-cold-no-persist-%d" % (key, i + 1), persist=False,
                             find_timeout=find_timeout)
        log("    " + describe_mount(bare))
        X["cold_nopersist"].append(bare)
        for j in range(args.remounts):
            re_ = measure_mount(args, binary, fake, workdir, "%s-remount-%d.%d" % (key, i + 1, j + 1),
                                cache_dir=cold["cache_dir"], find_timeout=find_timeout)
            re_["run"] = i
            log("    " + describe_mount(re_) + "; restored=%d" % re_["restored"])
            if re_["restored"] == 0:
                log("    !! the remount did not restore the stored tree: " + re_["status"])
            if re_["lines"] != cold["lines"]:
                log("    !! the remount's find saw %d entries, the cold mount's %d" % (re_["lines"], cold["lines"]))
            X["remount"].append(re_)
        # The same remount served by libfuse's multi-threaded loop instead of the spinning one
        # (FUSEAdapter/SessionLoop.swift), side by side.
        lib = measure_mount(args, binary, fake, workdir, "%s-remount-libfuse-loop-%d" % (key, i + 1),
                            cache_dir=cold["cache_dir"], find_timeout=find_timeout, extra=("--spin-us", "0"))
        log("    " + describe_mount(lib) + "; restored=%d" % lib["restored"])
        X.setdefault("remount_libfuse_loop", []).append(lib)
        shutil.rmtree(cold["cache_dir"], ignore_errors=True)
    results.setdefault("remount", {})[key] = X
    return X



def report_remount(results, key, n, target_s):
    X = results["remount"][key]
    cold, bare, rem = X["cold"], X["cold_nopersist"], X["remount"]
    log("")

    def vals(rs, k, fmt=fmt_s):
        return fmt_runs([r[k] for r in rs], fmt)

    def bpe(r):
        return r["hwm_kib"] * 1024 / max(1, r["entries"])

    first = [next((r for r in rem if r["run"] == i), None) for i in range(len(cold))]
    ratios = ", ".join(ratio_str(c["total_s"], r["total_s"]) for c, r in zip(cold, first) if r)
    rows = []
    rows.append(["start of mount to end of find", vals(rem, "total_s"), vals(cold, "total_s"), vals(bare, "total_s"),
                 ratios, "<= %g s" % target_s, verdict([r["total_s"] <= target_s and r["finished"] for r in rem])])
    rows.append(["  start of mount to mount appears", vals(rem, "mount_s"), vals(cold, "mount_s"),
                 vals(bare, "mount_s"), "", "", ""])
    rows.append(["    of which: stored tree loaded", vals(rem, "loaded_s"), "", "", "", "", ""])
    rows.append(["  find once mounted (kernel-cold walk)", vals(rem, "find_s"), vals(cold, "find_s"),
                 vals(bare, "find_s"),
                 "", "", ""])
    lib = X.get("remount_libfuse_loop", [])
    if lib:
        rows.append(["  the same with libfuse's loop (--spin-us 0)", vals(lib, "total_s"), "", "",
                     "", "", ""])
        rows.append(["    of which find once mounted", vals(lib, "find_s"), "", "",
                     "spinning/libfuse " + fmt_runs([a["find_s"] / b["find_s"] for a, b in zip(first, lib) if a],
                                                    lambda v: "%.2f" % v), "", ""])
    rows.append(["entries seen by find", vals(rem, "lines", str), vals(cold, "lines", str), vals(bare, "lines", str),
                 "", "", verdict([r["lines"] == c["lines"] for r in rem for c in cold[:1]])])
    total = [r["requests"] + r["longpolls"] for r in rem]
    rows.append(["API requests to end of find (+ longpoll)",
                 ", ".join("%d+%d" % (r["requests"], r["longpolls"]) for r in rem),
                 ", ".join("%d+%d" % (r["requests"], r["longpolls"]) for r in cold),
                 ", ".join("%d+%d" % (r["requests"], r["longpolls"]) for r in bare), "",
                 "<= %d" % TARGET_REMOUNT_REQUESTS if target_s == TARGET_REMOUNT_S else "",
                 verdict([t <= TARGET_REMOUNT_REQUESTS for t in total]) if target_s == TARGET_REMOUNT_S else ""])
    rows.append(["daemon CPU until unmount", vals(rem, "cpu"), vals(cold, "cpu"), vals(bare, "cpu"), "", "", ""])
    rows.append(["daemon peak RSS (VmHWM)", vals(rem, "hwm_kib", lambda k: "%.0f MiB" % (k / 1024)),
                 vals(cold, "hwm_kib", lambda k: "%.0f MiB" % (k / 1024)),
                 vals(bare, "hwm_kib", lambda k: "%.0f MiB" % (k / 1024)), "", "", ""])
    rows.append(["  per entry", fmt_runs([bpe(r) for r in rem], lambda b: "%.0f B" % b),
                 fmt_runs([bpe(r) for r in cold], lambda b: "%.0f B" % b),
                 fmt_runs([bpe(r) for r in bare], lambda b: "%.0f B" % b), "",
                 "<= %d B (1M)" % TARGET_BYTES_PER_ENTRY if n >= 1000000 else "",
                 verdict([bpe(r) <= TARGET_BYTES_PER_ENTRY for r in rem + cold + bare]) if n >= 1000000 else ""])
    rows.append(["clean unmount (fusermount -u to exit)", vals(rem, "unmount_s"), vals(cold, "unmount_s"),
                 vals(bare, "unmount_s"), "", "", ""])
    rows.append(["database after unmount: db + wal", fmt_runs([r["db_bytes"] + r["wal_bytes"] for r in rem],
                                                                lambda b: "%.1f MB" % (b / 1e6)),
                 fmt_runs([r["db_bytes"] + r["wal_bytes"] for r in cold], lambda b: "%.1f MB" % (b / 1e6)), "", "",
                 "", ""])
    rows.append(["  per entry", fmt_runs([(r["db_bytes"] + r["wal_bytes"]) / max(1, r["entries"]) for r in rem],
                                         lambda b: "%.0f B" % b),
                 fmt_runs([(r["db_bytes"] + r["wal_bytes"]) / max(1, r["entries"]) for r in cold],
                          lambda b: "%.0f B" % b), "", "", "", ""])
    rows.append(["store complete after the fill", "", fmt_runs([r.get("store_lag_s") for r in cold]), "", "", "", ""])
    print_table(rows, ["remount, %d entries" % n, "remount (stored tree)", "cold, store on", "cold, --no-persist",
                       "cold/remount", "target", "verdict"])
    log("requests by route, remount to end of find: " + " | ".join(r["routes"] for r in rem))
    log("requests by route, cold with the store: " + " | ".join(r["routes"] for r in cold))
    log("status after the remount's find: " + " | ".join(r["status_after_find"] for r in rem))
