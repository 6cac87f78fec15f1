"""Metadata benchmark (scripts/bench): the release binary mounted on the fake Dropbox server, beside
the same tools on a tmpfs copy of the same tree, in the same run.

Default run: a synthetic tree of 100,000 entries (about 10,000 folders) served with 30 ms of
latency per API request. It measures

  * cold `find | wc -l` on a fresh mount (prefetch on, the default), and on a fresh mount with
    --no-prefetch (capped by --off-timeout; a timed-out run gives a lower bound "> X s");
  * cold `du -s` on a fresh mount;
  * warm `find`, `du -s`, `ls -lR > /dev/null` once the mount has the whole tree;
  * the API requests the fake served (its /_control/stats) and the daemon's peak RSS (VmHWM);
  * the same tools on a tmpfs copy built from the fake's /_control/tree (folders, sparse files of
    the right sizes, symlinks as symlinks), so every ratio comes from figures of this run.

Then, on the same fake (skip with --no-remount), the stored tree:

  * remount: per run a cold mount with the store (the default; its cache folder kept), a cold
    mount with --no-persist, and --remounts remounts from the first one's stored tree, each timed
    from the start of `dropboxfs mount --foreground` to the end of `find` (the mount appears once
    the tree is loaded and caught up), and one more remount served by libfuse's multi-threaded
    loop (--spin-us 0) instead of the default spinning one, side by side; each with its API
    requests by route (the longpoll that stays open counted apart), the daemon's CPU and peak
    RSS, the clean unmount, and the database (tree-*.db and -wal in CACHE_DIR/trees after the
    daemon exited) per entry. Targets: 100,000 entries in at most 1 s and 3 requests; 1,000,000
    entries in at most 8 s;
  * a 10,000-entry change while mounted, with the store and with --no-persist: 10,000 files in
    100 new folders made through the fake's control API (one call each: the mount follows as they
    come), that folder renamed (one 10,102-entry batch), then deleted; for each, the time until the
    mount shows it, until the database holds it, and the daemon CPU it cost.

With --big it then mounts a 1,000,000-entry tree (prefetch on) and reports the cold walk, the
requests, the fill rate and the daemon's peak RSS per entry (target: at most 300 bytes), then the
remount section on that tree (--big-remount-runs, default 1).

The parallel fill (--fill-only runs only this section): the sequential fill
(--fill-parallel 1) against the default parallel one, side by side, each a cold mount with
--no-persist, on fakes that charge 30 ms per request and 30 ms of server time per 1000 entries of
a page (page_cost_ms_per_1000), warmed at 0 ms and no cost first:

  * 100,000 entries with 12 top-level folders (--top-folders 12): start of mount to the end of a
    cold `find | wc -l` (its lines checked against the tree), the fill (status fill_seconds), the
    listing requests (list_folder, continue, get_latest_cursor) against the pages the data needs
    (ceil(entries / 2000)), pages and entries the fake served. Targets: parallel <= 2.5 s and at
    least 2x faster than sequential; listing requests <= 1.3 x pages + 20. One more parallel
    mount times a find started once the fill is over (the kernel-cold walk alone), and one more
    times a refill after a cursor reset, which plans its branches from the sizes of the tree it
    holds (the fake is warmed again after the reset while the daemon is stopped);
  * the same account with pages capped at 100 entries (max_page): parallel <= 10 s (the find is
    cut at --fill-timeout, 150 s; a cut run shows "> X s"), and a refill after a cursor reset as
    above;
  * the default synthetic shape (about 2,000 top-level folders): the parallel fill falls back to
    one chain; one run each, no target;
  * with --big, 1,000,000 entries with 12 top-level folders: cold find <= 20 s, fill <= 12 s,
    peak RSS <= 250 B per entry, the walk alone and the refill as above, and on one more parallel mount
    --cat-samples small files read with `cat` (a new file each second, each once) while the fill
    runs: each <= latency + 100 ms.

A full run also runs the cheap parts (12 top-level folders, default shape; about 1 min) unless
--no-fill; the 100-entry pages and the 1,000,000-entry part only run with --fill-only.

Each measurement runs --runs times (default 2; the machine is small and noisy) and every run is
shown. Everything it starts (fake servers, mounts, daemons, the tmpfs copy) is stopped and removed
on exit, also on Ctrl-C. Needs FUSE (fusermount3, /dev/fuse), run as root or a FUSE-enabled user.

The sections live in walk.py, remount.py, changes.py and fill.py; this module parses the flags,
runs the chosen sections in order and prints their reports.

Usage: scripts/bench [--big | --big-only] [--runs N] [--entries N --folders F] [--latency-ms MS]
                     [--off-timeout S] [--build] [--bin PATH] [--json FILE] [--keep-logs DIR]
                     [--remount-only | --no-remount] [--remounts N] [--big-remount-runs N]
                     [--change-runs N] [--change-files N --change-folders N]
                     [--fill-only | --no-fill] [--fill-timeout S] [--cat-samples N]
The binary defaults to .build-rel/release/dropboxfs (build it with
`swift build -c release --scratch-path .build-rel`, or pass --build).
"""

import argparse
import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

from .changes import bench_changes, report_changes
from .fill import bench_fill, bench_fill_big, report_fill
from .harness import (DEFAULT_BIN, RES, build_release, install_signal_handlers, loadavg, log, machine_info,
                      machine_line, run_cleaning_up, set_halt_poll, start_fake, warm_fake, write_json)
from .remount import TARGET_REMOUNT_BIG_S, TARGET_REMOUNT_S, bench_remount, report_remount
from .walk import bench_big, bench_standard, report_big, report_standard


def report(info, results, args):
    if "standard" in results:
        report_standard(info, results)
    elif not args.big_only:
        log("")
        log(machine_line(info))
    if "standard" in results.get("remount", {}):
        report_remount(results, "standard", args.entries, TARGET_REMOUNT_S)
    if "changes" in results:
        report_changes(results)
    if "big" in results:
        report_big(results)
    if "big" in results.get("remount", {}):
        report_remount(results, "big", args.big_entries, TARGET_REMOUNT_BIG_S)
    if "fill" in results:
        report_fill(results)
    log("")
    log("load average (1/5/15 min) at start %s, at end %s" % (info.get("load_start", "?"), loadavg()))


def run_sections(args, binary, workdir, info):
    """Runs the sections the flags choose, in order, then prints their reports."""
    results = {"machine": info, "args": vars(args)}
    change_runs = args.runs if args.change_runs is None else args.change_runs
    # A full run also runs the cheap parts of the fill section (about 1 min) unless --no-fill; the
    # 100-entry pages (about 2 min) and the 1,000,000-entry part only run with --fill-only.
    fill = args.fill_only or not (args.remount_only or args.big_only or args.no_fill)
    if not (args.big_only or args.fill_only):
        n, folders, lat = args.entries, args.folders, args.latency_ms
        log("== %d entries (--folders %d), %g ms latency per request ==" % (n, folders, lat))
        fake, build_s = start_fake(n, folders, lat)
        log("fake server up in %.1f s (%s)" % (build_s, fake.url))
        if not args.remount_only:
            bench_standard(args, binary, workdir, results, fake)
        else:
            warmup, page_ms = warm_fake(fake, lat)
            log("fake warm-up listing (0 ms latency): %.1f s; warm 2000-entry page: %s ms"
                % (warmup, ", ".join("%.1f" % t for t in sorted(page_ms))))
        if not args.no_remount:
            bench_remount(args, binary, workdir, results, fake, "standard", args.runs, None)
            if change_runs > 0:  # last: it changes the tree (and drops the fake's rendered pages)
                bench_changes(args, binary, workdir, results, fake, change_runs)
        fake.stop()
    if fill:
        bench_fill(args, binary, workdir, results, small_pages=args.fill_only)
    if (args.big or args.big_only) and not args.fill_only:
        n, lat = args.big_entries, args.latency_ms
        log("")
        log("== --big: %d entries (default folders, about N/10), %g ms latency per request ==" % (n, lat))
        fake, build_s = start_fake(n, None, lat)
        log("fake server up in %.1f s" % build_s)
        warmup, page_ms = warm_fake(fake, lat)
        log("fake warm-up listing (0 ms latency, computes hashes): %.1f s; warm 2000-entry page: %s ms"
            % (warmup, ", ".join("%.1f" % t for t in sorted(page_ms))))
        if not args.remount_only:
            bench_big(args, binary, workdir, results, fake, page_ms)
        if not args.no_remount and args.big_remount_runs > 0:
            bench_remount(args, binary, workdir, results, fake, "big", args.big_remount_runs, args.big_timeout)
        fake.stop()
    if args.fill_only and args.big:
        bench_fill_big(args, binary, workdir, results)
    report(info, results, args)
    if args.json:
        write_json(args.json, results)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=100000)
    ap.add_argument("--folders", type=int, default=10000)
    ap.add_argument("--latency-ms", type=float, default=30)
    ap.add_argument("--runs", type=int, default=2, help="repetitions of each measurement (default 2)")
    ap.add_argument("--off-runs", type=int, default=2, help="repetitions of the --no-prefetch cold find")
    ap.add_argument("--off-timeout", type=float, default=120, help="cap of the --no-prefetch cold find, s")
    ap.add_argument("--big", action="store_true", help="also run the 1,000,000-entry tree (minutes)")
    ap.add_argument("--big-only", action="store_true", help="run only the --big tree")
    ap.add_argument("--big-entries", type=int, default=1000000)
    ap.add_argument("--big-timeout", type=float, default=900)
    ap.add_argument("--remount-only", action="store_true",
                    help="only the remount and change sections (100,000 entries; with --big also 1,000,000)")
    ap.add_argument("--no-remount", action="store_true", help="skip the remount and change sections")
    ap.add_argument("--fill-only", action="store_true",
                    help="only the parallel fill section: --fill-parallel 1 against the default, "
                         "cold mounts of 100,000 entries with 12 top-level folders, then the same with pages of "
                         "100 entries, then the default shape (one chain), about 2.5 min; with --big also "
                         "1,000,000 entries and cat probes during the fill, about 4 min more. A full run (no "
                         "--*-only flag) runs only the cheap parts (12 top-level folders and the default shape, "
                         "about 1 min), unless --no-fill")
    ap.add_argument("--no-fill", action="store_true", help="skip the fill section's cheap parts in a full run")
    ap.add_argument("--fill-timeout", type=float, default=150,
                    help="cap of the cold find with 100-entry pages, s (default 150)")
    ap.add_argument("--cat-samples", type=int, default=8,
                    help="small files read with cat, one a second, during the 1,000,000-entry parallel fill")
    ap.add_argument("--remounts", type=int, default=2, help="remounts from each stored tree (default 2)")
    ap.add_argument("--big-remount-runs", type=int, default=1,
                    help="cold mounts (with and without the store) of the --big tree, each remounted (default 1)")
    ap.add_argument("--change-runs", type=int, default=None, help="runs of the change section (default --runs)")
    ap.add_argument("--change-files", type=int, default=10000)
    ap.add_argument("--change-folders", type=int, default=100)
    ap.add_argument("--bin", default=os.environ.get("DROPBOXFS_BIN", str(DEFAULT_BIN)))
    ap.add_argument("--build", action="store_true",
                    help="run `swift build -c release --scratch-path .build-rel` first")
    ap.add_argument("--json", help="also write the raw figures to this file")
    ap.add_argument("--keep-logs", help="copy each daemon's log into this folder")
    ap.add_argument("--guest-halt-poll-ns", type=int,
                    help="in a KVM guest with the haltpoll cpuidle governor (root): how long an idle vCPU "
                         "polls before it halts, for this run (restored at exit); 200000 is the governor's "
                         "default. Reported in the machine line either way")
    args = ap.parse_args()

    install_signal_handlers()
    if args.build:
        log("building the release binary in .build-rel ...")
        build_release(".build-rel")
    binary = Path(args.bin)
    if not binary.is_file():
        sys.exit("bench: no binary at %s; build it with `swift build -c release --scratch-path .build-rel` "
                 "or pass --build" % binary)
    if not shutil.which("fusermount3") or not os.path.exists("/dev/fuse"):
        sys.exit("bench: needs FUSE (fusermount3 and /dev/fuse); see scripts/install-deps")

    if args.guest_halt_poll_ns is not None:
        # Restored by RES.cleanup: at the end of the run below, on a signal, or at exit if anything
        # before the run's try block fails.
        atexit.register(RES.cleanup)
        set_halt_poll(args.guest_halt_poll_ns)
    info = machine_info()
    log("dropboxfs metadata benchmark, %s; binary %s" % (info["date"], binary))
    log("machine: %s, nproc %s, kernel %s (%s), load %s"
        % (info["cpu"], info["nproc"], info["kernel"], info["idle"], loadavg()))
    workdir = tempfile.mkdtemp(prefix="dropboxfs-bench-")
    RES.add("workdir", lambda: shutil.rmtree(workdir, ignore_errors=True))
    info["load_start"] = loadavg()
    return run_cleaning_up("bench", lambda: run_sections(args, binary, workdir, info))
