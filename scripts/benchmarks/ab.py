"""A/B comparison of two dropboxfs binaries, side by side in one run (scripts/bench-ab): to check
that a change leaves the benchmarks not slower.

Starts the fakes once and runs every chosen measurement with binary A, then B, round after round
(the order swapped every other round: AB BA AB ..., so drift in the machine's load weighs on both).
Both binaries see the same fake servers and trees, and the same measurements as scripts/bench
(the shared harness and its sections):

  cold     cold mount (prefetch on, --no-persist) to the end of `find`, 100,000 entries, 30 ms per
           request (remount.measure_mount); also the daemon's CPU and peak RSS once filled
  fill     the whole-account fill of scripts/bench's fill section: 12 top-level folders, 30 ms per
           request and 30 ms per 1000 entries of a page (fill.measure_fill, parallel): status fill_seconds,
           start of mount to end of find, the daemon's peak RSS (VmHWM) after the fill
  remount  a cold mount with the store, then a remount from its stored tree to the end of `find`
  read     `cat` of a 64 MiB file to /dev/null on a fresh mount (empty cache folder: network), then
           the page cache dropped and a second `cat` (the disk cache); 0 ms latency, unlimited
  walk     a fresh mount (--no-persist), the fill awaited, then `ls -lR` (the daemon has the whole
           tree, the kernel nothing) and a second `ls -lR` (the kernel has what it kept)

Prints every run, then per figure the medians, B/A, P(B>A) (the share of (A run, B run) pairs in
which B was slower: about 0.5 when the two do not differ, near 1 when B is slower in almost every
pairing), and each side's spread (max/min - 1). "B slower" means B's best run is slower than A's
worst (the two ranges do not overlap); otherwise "noise". --report pools the runs of earlier --json
files (same binaries) into one table without running anything.
Everything started is stopped on exit (the harness's cleanup), also on Ctrl-C.

Usage: scripts/bench-ab --a BIN --b BIN [--a-label L] [--b-label L] [--rounds N]
                        [--only cold,fill,remount,read,walk] [--entries N --folders F]
                        [--latency-ms MS] [--read-mib N] [--json FILE] [--keep-logs DIR]
       scripts/bench-ab --report JSON [JSON ...]
"""

import argparse
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from . import harness
from .fill import FILL_TOP_FOLDERS, TreeScan, measure_fill, start_fill_fake
from .harness import RES, Mount, drop_page_cache, log, run_timed, time_ls_lr
from .remount import measure_mount

# figure -> (measurement, description, unit); every figure: lower is better
FIGURES = {
    "cold_find": ("cold", "cold mount to end of find ({entries} entries, prefetch, --no-persist)", "s"),
    "cold_cpu": ("cold", "  daemon CPU, that mount until filled and idle", "s"),
    "cold_rss": ("cold", "  daemon VmHWM, that mount after the fill", "MiB"),
    "fill_s": ("fill", "fill, 12 top-level folders, page cost (fill_seconds)", "s"),
    "fill_find": ("fill", "  start of that mount to end of find", "s"),
    "fill_rss": ("fill", "  daemon VmHWM after the fill", "MiB"),
    "fill_cpu": ("fill", "  daemon CPU after the fill", "s"),
    "remount": ("remount", "remount from the stored tree to end of find", "s"),
    "remount_loaded": ("remount", "  start of that mount to the stored tree loaded", "s"),
    "remount_cpu": ("remount", "  daemon CPU, that mount until idle", "s"),
    "read_cold": ("read", "cat {mib} MiB, cold (network, empty cache)", "s"),
    "read_warm": ("read", "cat {mib} MiB, warm (disk cache)", "s"),
    "read_cpu": ("read", "  daemon CPU, both cats", "s"),
    "walk_first": ("walk", "ls -lR after the fill, fresh mount", "s"),
    "walk_again": ("walk", "ls -lR again, same mount", "s"),
}


class Context:
    """The fakes, shared by A and B, started on first use."""

    def __init__(self, args, workdir):
        self.args, self.workdir = args, workdir
        self._std = self._fill = self._read = None

    def std(self):
        if self._std is None:
            a = self.args
            fake, build_s = harness.start_fake(a.entries, a.folders, a.latency_ms)
            scan = TreeScan()
            harness.warm_fake(fake, a.latency_ms, on_page=scan.page)
            log("standard fake up in %.1f s: %d entries, find must print %d lines"
                % (build_s, scan.entries, scan.lines))
            self._std = (fake, scan.lines)
        return self._std

    def fill(self):
        if self._fill is None:
            fake, scan, _ = start_fill_fake(self.args.entries, self.args.folders, self.args.latency_ms,
                                                  FILL_TOP_FOLDERS)
            self._fill = (fake, scan.lines)
        return self._fill

    def read(self):
        if self._read is None:
            fake = harness.FakeDropbox.start("--quiet")
            RES.add("read fake", fake.stop)
            fake.add_file("/big.bin", size=self.args.read_mib << 20, seed=11)
            self._read = (fake, hashlib.sha256(fake.content("/big.bin")).hexdigest())
        return self._read


def checked(r, expected, what):
    if r["lines"] != expected or not r["finished"]:
        log("    !! %s: find printed %d lines, expected %d" % (what, r["lines"], expected))


def m_cold(ctx, binary, label):
    fake, lines = ctx.std()
    r = measure_mount(ctx.args, binary, fake, ctx.workdir, label, persist=False)
    checked(r, lines, label)
    return {"cold_find": r["total_s"], "cold_cpu": r["cpu"], "cold_rss": r["hwm_kib"] / 1024}


def m_fill(ctx, binary, label):
    fake, lines = ctx.fill()
    r = measure_fill(ctx.args, binary, fake, ctx.workdir, label, "parallel", lines, None, 300)
    checked(r, lines, label)
    return {"fill_s": r["fill_s"], "fill_find": r["total_s"], "fill_rss": r["hwm_kib"] / 1024, "fill_cpu": r["cpu"]}


def m_remount(ctx, binary, label):
    fake, lines = ctx.std()
    cold = measure_mount(ctx.args, binary, fake, ctx.workdir, label + "-store")
    try:
        r = measure_mount(ctx.args, binary, fake, ctx.workdir, label, cache_dir=cold["cache_dir"])
    finally:
        shutil.rmtree(cold["cache_dir"], ignore_errors=True)
    checked(r, lines, label)
    if not r["restored"]:
        log("    !! %s did not restore the stored tree: %s" % (label, r["status"]))
    return {"remount": r["total_s"], "remount_loaded": r["loaded_s"], "remount_cpu": r["cpu"]}


def m_read(ctx, binary, label):
    fake, sha = ctx.read()
    m = Mount(binary, fake, ctx.workdir, label, extra=("--no-persist",))
    path = m.mnt + "/big.bin"
    cold = run_timed(["cat", path])[0]
    drop_page_cache(path)
    warm = run_timed(["cat", path])[0]
    cpu = m.cpu_seconds()
    drop_page_cache(path)
    got = subprocess.run(["sha256sum", path], capture_output=True, text=True).stdout.split()[:1]
    if got != [sha]:
        log("    !! %s served wrong bytes" % label)
    m.release(ctx.args.keep_logs)
    return {"read_cold": cold, "read_warm": warm, "read_cpu": cpu}


def m_walk(ctx, binary, label):
    fake, _ = ctx.std()
    m = Mount(binary, fake, ctx.workdir, label, extra=("--no-persist",))
    if not m.wait_filled(300):
        log("    !! %s: still filling after 300 s" % label)
    first, again = time_ls_lr(m.mnt), time_ls_lr(m.mnt)
    m.release(ctx.args.keep_logs)
    return {"walk_first": first, "walk_again": again}


MEASUREMENTS = {"cold": m_cold, "fill": m_fill, "remount": m_remount, "read": m_read, "walk": m_walk}


def fmt(v, unit):
    return "-" if v is None else ("%.1f" % v if unit == "MiB" else harness.fmt_s(v).replace(" s", ""))


def report(results, labels, args):
    rows = []
    for key, (_, title, unit) in FIGURES.items():
        a, b = ([v for v in results.get(key, {}).get(s, []) if v is not None] for s in "AB")
        if not a or not b:
            continue
        ma, mb = statistics.median(a), statistics.median(b)
        verdict = "B slower" if min(b) > max(a) else "B faster" if max(b) < min(a) else "noise"
        # the share of (A run, B run) pairs in which B was slower: 0.5 when the two do not differ
        slower = sum((y > x) + 0.5 * (y == x) for x in a for y in b) / (len(a) * len(b))
        rows.append([title.format(entries=args.entries, mib=args.read_mib), unit, fmt(ma, unit), fmt(mb, unit),
                     "%.2f" % (mb / ma), "%.2f" % slower,
                     "%.0f%% / %.0f%%" % ((max(a) / min(a) - 1) * 100, (max(b) / min(b) - 1) * 100),
                     verdict, " ".join(fmt(v, unit) for v in a) + " | " + " ".join(fmt(v, unit) for v in b)])
    log("")
    rounds = max(len(v["A"]) for v in results.values())
    log("A = %s, B = %s; medians of up to %d run(s) each" % (labels["A"], labels["B"], rounds))
    harness.print_table(rows, ["figure", "unit", "A", "B", "B/A", "P(B>A)", "spread A / B", "verdict",
                            "runs A | B"])


def report_files(args):
    results, loads = {}, []
    for path in args.report:
        with open(path) as f:
            saved = json.load(f)
        loads += saved["loads"]
        for k, v in saved["results"].items():
            for side in "AB":
                results.setdefault(k, {"A": [], "B": []})[side] += v[side]
    report(results, saved["labels"], argparse.Namespace(**saved["args"]) if "args" in saved else args)
    log("load average (1 min) during the runs: %.1f to %.1f, median %.1f"
        % (min(loads), max(loads), statistics.median(loads)))
    return 0


def version(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    return out.splitlines()[0] if out else "?"


def run_rounds(ctx, chosen, binaries, labels, info):
    """--rounds rounds of the chosen measurements, A then B (B then A every other round), then the table."""
    args = ctx.args
    results, loads = {}, []
    for rnd in range(args.rounds):
        order = "AB" if rnd % 2 == 0 else "BA"
        log("\n== round %d of %d (%s) ==" % (rnd + 1, args.rounds, " then ".join(order)))
        for name in chosen:
            for side in order:
                loads.append(float(harness.loadavg().split()[0]))
                figures = MEASUREMENTS[name](ctx, binaries[side], "%s-%s-%d" % (name, side, rnd + 1))
                for k, v in figures.items():
                    results.setdefault(k, {"A": [], "B": []})[side].append(v)
                log("%-8s %s: %s; load %s" % (name, side, ", ".join(
                    "%s %s" % (k, fmt(v, FIGURES[k][2])) for k, v in figures.items()), loads[-1]))
    report(results, labels, args)
    log("load average (1 min) during the run: %.1f to %.1f, median %.1f"
        % (min(loads), max(loads), statistics.median(loads)))
    if args.json:
        harness.write_json(args.json, {"machine": info, "args": vars(args), "binaries": binaries, "labels": labels,
                                       "loads": loads, "results": results})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", help="binary A (the baseline)")
    ap.add_argument("--b", help="binary B (compared with A: ratios are B/A)")
    ap.add_argument("--a-label")
    ap.add_argument("--b-label")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default=",".join(MEASUREMENTS), help="comma-separated: " + ",".join(MEASUREMENTS))
    ap.add_argument("--entries", type=int, default=100000)
    ap.add_argument("--folders", type=int, default=10000)
    ap.add_argument("--latency-ms", type=float, default=30)
    ap.add_argument("--read-mib", type=int, default=64)
    ap.add_argument("--json", help="also write every run's figures to this file")
    ap.add_argument("--keep-logs", help="copy each daemon's log into this folder")
    ap.add_argument("--report", nargs="+", metavar="JSON",
                    help="run nothing: the table of the runs these --json files hold, pooled")
    args = ap.parse_args()
    if args.report:
        return report_files(args)
    if not (args.a and args.b):
        sys.exit("bench-ab: --a and --b name the two binaries")
    chosen = [m for m in args.only.split(",") if m]
    if any(m not in MEASUREMENTS for m in chosen):
        sys.exit("bench-ab: --only takes " + ",".join(MEASUREMENTS))
    binaries = {"A": str(Path(args.a).resolve()), "B": str(Path(args.b).resolve())}
    labels = {"A": args.a_label or version(binaries["A"]), "B": args.b_label or version(binaries["B"])}

    harness.install_signal_handlers()
    info = harness.machine_info()
    log("dropboxfs A/B, %s; %s, nproc %s, kernel %s; load %s" % (info["date"], info["cpu"], info["nproc"],
                                                                  info["kernel"], harness.loadavg()))
    for s in "AB":
        log("%s: %s (%s)" % (s, binaries[s], labels[s]))
    workdir = tempfile.mkdtemp(prefix="dropboxfs-bench-ab-")
    RES.add("workdir", lambda: shutil.rmtree(workdir, ignore_errors=True))
    ctx = Context(args, workdir)
    return harness.run_cleaning_up("bench-ab", lambda: run_rounds(ctx, chosen, binaries, labels, info))

