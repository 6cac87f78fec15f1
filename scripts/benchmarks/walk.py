"""The metadata walks of scripts/bench: cold `find | wc -l` and `du -s` on fresh mounts (prefetch
on, and `find` with --no-prefetch, capped), the first `du -s` after a `find` once the fill is done
(what a lean walk would make it list again), warm `find`, `du -s` and `ls -lR` once the mount has the
whole tree, each beside the same tool on a tmpfs copy of the same tree; the API requests, the fill
and the daemon's peak RSS and CPU. With --big, the cold walk and peak RSS per entry of a
1,000,000-entry tree.
"""

import time

from .harness import (Mount, add_run, build_tmpfs_copy, fmt_runs, fmt_s, log, loadavg, machine_line, print_table,
                      ratio_str, routes_str, time_du, time_find, time_ls_lr, verdict, warm_fake)

# Targets of the walks of a 100,000-entry tree at 30 ms per request.
TARGET_COLD_FIND_S = 5.0
TARGET_COLD_FIND_VS_OFF = 20.0
TARGET_COLD_DU_S = 6.0
TARGET_WARM_FIND_VS_TMPFS = 2.0
TARGET_DU_AFTER_FIND_VS_TMPFS = 1.5
TARGET_REQUESTS = 100
TARGET_BYTES_PER_ENTRY = 300

def first_du_after_find(m, fake, record):
    """Times the first `du -s` after the cold find on mount `m` (the kernel holds what the find
    left: every inode, or lean listings that the du must list again), with its requests and file
    lookups, into `record`."""
    before, lookups = fake.stats()["total"], int(m.status_fields().get("file_lookups", 0))
    du_s = time_du(m.mnt)[0]
    add_run(record, du_after_find=du_s, du_after_find_requests=fake.stats()["total"] - before,
            du_after_find_lookups=int(m.status_fields().get("file_lookups", 0)) - lookups)
    log("    then the first du -s %s (%d requests, %d files looked up)"
        % (fmt_s(du_s), record["du_after_find_requests"][-1], record["du_after_find_lookups"][-1]))


def listing_breakdown(stats, status_fields):
    """Listings besides the whole-account fill, derived from the fake's request counts and the
    daemon's status (pages applied by recursive listings): (subtree listings, single-folder
    listings, extra recursive pages). Assumes the whole-account fill used full 2000-entry pages."""
    routes = stats.get("routes", {})
    entries = int(status_fields.get("entries", "0") or 0)
    pages = int(status_fields.get("pages", "0") or 0)
    main_pages = max(1, -(-entries // 2000))
    extra_pages = max(0, pages - main_pages)
    extra_continues = max(0, routes.get("files/list_folder/continue", 0) - (main_pages - 1))
    subtree = max(0, extra_pages - extra_continues)
    single = max(0, routes.get("files/list_folder", 0) - 1 - subtree)
    return subtree, single, extra_pages


def bench_standard(args, binary, workdir, results, fake):
    """The cold, warm and --no-prefetch walks of the standard tree on `fake` (left running)."""
    n, folders, lat = args.entries, args.folders, args.latency_ms
    t0 = time.monotonic()
    tmp_root, made, skipped = build_tmpfs_copy(fake, workdir)
    log("tmpfs copy: %d entries (%d names skipped: empty, '/', > 255 bytes) in %.1f s at %s"
        % (made, skipped, time.monotonic() - t0, tmp_root))
    warmup, page_ms = warm_fake(fake, lat)
    log("fake warm-up listing (0 ms latency): %.1f s; warm 2000-entry page: %s ms"
        % (warmup, ", ".join("%.1f" % t for t in sorted(page_ms))))
    R = results.setdefault("standard", {})
    R.update(entries=n, folders=folders, latency_ms=lat, tmpfs_entries=made, tmpfs_skipped=skipped,
             fake_page_ms=page_ms)

    runs = args.runs
    # tmpfs
    T = {"find": [], "du": [], "ls": [], "find_lines": None}
    for _ in range(runs):
        dt, lines, _ = time_find(tmp_root, workdir)
        T["find"].append(dt)
        T["find_lines"] = lines
        T["du"].append(time_du(tmp_root)[0])
        T["ls"].append(time_ls_lr(tmp_root))
    log("tmpfs: find %s (%d lines), du -s %s, ls -lR %s"
        % (fmt_runs(T["find"]), T["find_lines"], fmt_runs(T["du"]), fmt_runs(T["ls"])))

    # prefetch on: cold find on fresh mounts; the first mount also gives the warm figures
    P = {"cold_find": [], "cold_find_lines": [], "cold_requests": [], "cold_routes": [], "fill_requests": [],
         "fill_routes": [], "fill_status": [], "status_after_find": [], "mount_s": [], "hwm_kib": [],
         "warm_find": [], "warm_du": [], "warm_ls": [], "warm_find_lines": None, "cpu_after_find": [],
         "cpu_after_fill": [], "fill_seconds": [], "fill_rate": [], "du_after_find": [],
         "du_after_find_requests": [], "du_after_find_lookups": []}
    for i in range(runs):
        fake.reset_stats()
        m = Mount(binary, fake, workdir, "prefetch-cold-find-%d" % (i + 1))
        P["mount_s"].append(m.mount_seconds)
        dt, lines, _ = time_find(m.mnt, workdir)
        stats = fake.stats()
        add_run(P, cold_find=dt, cold_find_lines=lines, cold_requests=stats["total"], cold_routes=routes_str(stats),
                status_after_find=m.status(), cpu_after_find=m.cpu_seconds())
        log("prefetch on, run %d: mounted in %.2f s; cold find %s, %d lines, %d requests (%s); daemon CPU %.2f s"
            % (i + 1, m.mount_seconds, fmt_s(dt), lines, stats["total"], routes_str(stats), P["cpu_after_find"][-1]))
        log("    status after find: " + m.status())
        first_du_after_find(m, fake, P)
        if not m.wait_filled(300):
            log("    background fill still running after 300 s")
        stats = fake.stats()
        add_run(P, fill_requests=stats["total"], fill_routes=routes_str(stats), fill_status=m.status(),
                cpu_after_fill=m.cpu_seconds())
        fields = m.status_fields()
        add_run(P, breakdown=listing_breakdown(stats, fields), fill_seconds=float(fields.get("fill_seconds", "nan")),
                fill_rate=fields.get("rate", "?"))
        log("    fill done: %s; requests %d (%s); daemon CPU %.2f s"
            % (m.status(), stats["total"], routes_str(stats), P["cpu_after_fill"][-1]))
        if i == 0:
            for _ in range(runs):
                dt, lines, _ = time_find(m.mnt, workdir)
                P["warm_find"].append(dt)
                P["warm_find_lines"] = lines
                P["warm_du"].append(time_du(m.mnt)[0])
                P["warm_ls"].append(time_ls_lr(m.mnt))
            log("    warm: find %s, du -s %s, ls -lR %s; requests after warm runs: %d"
                % (fmt_runs(P["warm_find"]), fmt_runs(P["warm_du"]), fmt_runs(P["warm_ls"]),
                   fake.stats()["total"]))
        P["hwm_kib"].append(m.vm_hwm_kib())
        log("    daemon VmHWM %.1f MiB" % (P["hwm_kib"][-1] / 1024))
        m.release(args.keep_logs)

    # cold du -s on fresh mounts
    D = {"cold_du": [], "cold_du_requests": [], "cold_du_kib": []}
    for i in range(runs):
        fake.reset_stats()
        m = Mount(binary, fake, workdir, "prefetch-cold-du-%d" % (i + 1))
        dt, kib = time_du(m.mnt)
        stats = fake.stats()
        add_run(D, cold_du=dt, cold_du_kib=kib, cold_du_requests=stats["total"])
        log("prefetch on, run %d: cold du -s %s (%d KiB), %d requests (%s)"
            % (i + 1, fmt_s(dt), kib, stats["total"], routes_str(stats)))
        m.release(args.keep_logs)

    # prefetch off: cold find, capped
    O = {"cold_find": [], "finished": [], "lines": [], "requests": [], "routes": []}
    for i in range(args.off_runs):
        fake.reset_stats()
        m = Mount(binary, fake, workdir, "no-prefetch-cold-find-%d" % (i + 1), prefetch=False)
        dt, lines, finished = time_find(m.mnt, workdir, timeout=args.off_timeout)
        stats = fake.stats()
        total = T["find_lines"]
        add_run(O, cold_find=dt, finished=finished, lines=lines, requests=stats["total"], routes=routes_str(stats),
                extrapolated=dt if finished else dt * total / max(1, lines))
        log("prefetch off, run %d: cold find %s%s, %d of %d lines (%.0f entries/s, whole walk about %s), "
            "%d requests (%s)" % (i + 1, "" if finished else "> ", fmt_s(dt), lines, total, lines / dt,
                                  fmt_s(O["extrapolated"][-1]), stats["total"], routes_str(stats)))
        m.release(args.keep_logs)

    R.update(tmpfs=T, prefetch=P, cold_du=D, no_prefetch=O)
    return R


def bench_big(args, binary, workdir, results, fake, page_ms):
    """The cold walk of the --big tree on `fake` (warmed, left running)."""
    n, lat = args.big_entries, args.latency_ms
    B = {"entries": n, "latency_ms": lat, "fake_page_ms": page_ms, "cold_find": [], "lines": [], "finished": [],
         "cold_requests": [], "cold_routes": [], "fill_requests": [], "fill_status": [], "hwm_kib": [],
         "tree_entries": [], "warm_find": []}
    for i in range(args.runs):
        fake.reset_stats()
        m = Mount(binary, fake, workdir, "big-prefetch-%d" % (i + 1))
        dt, lines, finished = time_find(m.mnt, workdir, timeout=args.big_timeout)
        stats = fake.stats()
        add_run(B, cold_find=dt, lines=lines, finished=finished, cold_requests=stats["total"],
                cold_routes=routes_str(stats))
        log("big run %d: mounted in %.2f s; cold find %s%s, %d lines, %d requests (%s)"
            % (i + 1, m.mount_seconds, "" if finished else "> ", fmt_s(dt), lines, stats["total"],
               routes_str(stats)))
        log("    status after find: " + m.status())
        first_du_after_find(m, fake, B)
        m.wait_filled(900)
        stats = fake.stats()
        fill_status = m.status()
        fields = m.status_fields()
        add_run(B, fill_requests=stats["total"], fill_status=fill_status,
                tree_entries=int(fields.get("entries", "0") or 0), cpu_after_fill=m.cpu_seconds(),
                breakdown=listing_breakdown(stats, fields), fill_seconds=fields.get("fill_seconds", "?"),
                fill_rate=fields.get("rate", "?"))
        if i == 0:
            for _ in range(args.runs):
                B["warm_find"].append(time_find(m.mnt, workdir)[0])
            log("    warm find %s" % fmt_runs(B["warm_find"]))
        B["hwm_kib"].append(m.vm_hwm_kib())
        log("    fill done: %s; requests %d; VmHWM %.1f MiB = %.0f B/entry"
            % (m.status(), stats["total"], B["hwm_kib"][-1] / 1024,
               B["hwm_kib"][-1] * 1024 / max(1, B["tree_entries"][-1])))
        m.release(args.keep_logs)
    results["big"] = B
    return B



def off_verdict(O, P, k):
    """A timed-out --no-prefetch run gives a lower bound: it meets the target when the bound does,
    and is undecided otherwise (see the extrapolated row)."""
    out = []
    for o, p, finished in zip(O["cold_find"][:k], P["cold_find"][:k], O["finished"][:k]):
        if o / p >= TARGET_COLD_FIND_VS_OFF:
            out.append(True)
        elif finished:
            out.append(False)
        else:
            out.append(None)
    if None in out:
        met = sum(1 for x in out if x)
        return "undecided: lower bound only (%d/%d runs met)" % (met, len(out))
    return verdict(out)



def report_standard(info, results):
    R = results["standard"]
    T, P, D, O = R["tmpfs"], R["prefetch"], R["cold_du"], R["no_prefetch"]
    runs = len(P["cold_find"])
    log("")
    log(machine_line(info))
    log("Tree: --synthetic %d --folders %d, %g ms latency; tmpfs copy %d entries; every run shown, ratios "
        "per run (run i / run i)" % (R["entries"], R["folders"], R["latency_ms"], R["tmpfs_entries"]))
    log("")
    rows = []

    def per_run(a, b, lower=None):
        return ", ".join(ratio_str(x, y, lower_bound=(lower[i] if lower else False))
                         for i, (x, y) in enumerate(zip(a, b)))

    off_lb = [not f for f in O["finished"]]
    off_vals = [("> " if not f else "") + fmt_s(t) for t, f in zip(O["cold_find"], O["finished"])]
    rows.append(["cold find | wc -l (fresh mount)", fmt_runs(P["cold_find"]), fmt_runs(T["find"]),
                 per_run(P["cold_find"], T["find"]), "<= %g s" % TARGET_COLD_FIND_S,
                 verdict([t <= TARGET_COLD_FIND_S for t in P["cold_find"]])])
    k = min(len(O["cold_find"]), runs)
    rows.append(["cold find, --no-prefetch vs prefetch", ", ".join(off_vals), fmt_runs(P["cold_find"][:k]),
                 per_run(O["cold_find"][:k], P["cold_find"][:k], off_lb),
                 ">= %gx faster" % TARGET_COLD_FIND_VS_OFF, off_verdict(O, P, k)])
    if not all(O["finished"]):
        rows.append(["  (--no-prefetch extrapolated to the whole walk)", fmt_runs(O["extrapolated"]),
                     fmt_runs(P["cold_find"][:k]), per_run(O["extrapolated"][:k], P["cold_find"][:k]), "",
                     verdict([e / p >= TARGET_COLD_FIND_VS_OFF
                              for e, p in zip(O["extrapolated"][:k], P["cold_find"][:k])]) + " (estimate)"])
    rows.append(["cold du -s (fresh mount)", fmt_runs(D["cold_du"]), fmt_runs(T["du"]),
                 per_run(D["cold_du"], T["du"]), "<= %g s" % TARGET_COLD_DU_S,
                 verdict([t <= TARGET_COLD_DU_S for t in D["cold_du"]])])
    rows.append(["first du -s after the cold find", fmt_runs(P["du_after_find"]), fmt_runs(T["du"]),
                 per_run(P["du_after_find"], T["du"]), "<= %gx tmpfs" % TARGET_DU_AFTER_FIND_VS_TMPFS,
                 verdict([a / b <= TARGET_DU_AFTER_FIND_VS_TMPFS for a, b in zip(P["du_after_find"], T["du"])])])
    rows.append(["warm find | wc -l", fmt_runs(P["warm_find"]), fmt_runs(T["find"]),
                 per_run(P["warm_find"], T["find"]), "<= %gx tmpfs" % TARGET_WARM_FIND_VS_TMPFS,
                 verdict([a / b <= TARGET_WARM_FIND_VS_TMPFS for a, b in zip(P["warm_find"], T["find"])])])
    rows.append(["warm du -s", fmt_runs(P["warm_du"]), fmt_runs(T["du"]), per_run(P["warm_du"], T["du"]), "", ""])
    rows.append(["warm ls -lR > /dev/null", fmt_runs(P["warm_ls"]), fmt_runs(T["ls"]),
                 per_run(P["warm_ls"], T["ls"]), "", ""])
    rows.append(["API requests, mount + cold find", fmt_runs(P["cold_requests"], str), "0", "",
                 "<= %d" % TARGET_REQUESTS, verdict([r <= TARGET_REQUESTS for r in P["cold_requests"]])])
    rows.append(["API requests, whole fill", fmt_runs(P["fill_requests"], str), "0", "", "", ""])
    rows.append(["API requests, mount + cold du -s", fmt_runs(D["cold_du_requests"], str), "0", "", "", ""])
    rows.append(["API requests, --no-prefetch find", fmt_runs(O["requests"], str), "0", "", "", ""])
    rows.append(["daemon peak RSS (VmHWM)", fmt_runs(P["hwm_kib"], lambda k: "%.0f MiB" % (k / 1024)), "", "",
                 "", ""])
    rows.append(["background fill (status xattr)",
                 ", ".join("%s s, %s" % (f, r) for f, r in zip(P["fill_seconds"], P["fill_rate"])), "", "", "", ""])
    rows.append(["daemon CPU: mount + cold find", fmt_runs(P["cpu_after_find"]), "", "", "", ""])
    print_table(rows, ["measurement (%d entries)" % R["entries"], "dropboxfs", "tmpfs / prefetch on",
                       "ratio", "target", "verdict"])
    log("")
    log("load average (1/5/15 min) at start %s, at end %s: with 2 cores, wall times scale with it"
        % (info.get("load_start", "?"), loadavg()))
    log("entries seen by find: mount %s, tmpfs %d; mount time %s; fake warm page %.1f ms"
        % (fmt_runs(P["cold_find_lines"], str), T["find_lines"], fmt_runs(P["mount_s"]),
           sorted(R["fake_page_ms"])[len(R["fake_page_ms"]) // 2] if R["fake_page_ms"] else 0))
    log("requests by route, mount + cold find: " + " | ".join(P["cold_routes"]))
    log("listings besides the whole-account fill (derived from the counts): "
        + " | ".join("%d subtree listings (%d recursive pages beyond the %d-entry fill), %d single-folder listings"
                     % (sub, extra, R["entries"], single) for sub, single, extra in P.get("breakdown", [])))
    log("status after the fill: " + " | ".join(P["fill_status"]))


def report_big(results):
    B = results["big"]
    log("")
    rows = []
    rows.append(["cold find | wc -l (fresh mount)",
                 ", ".join(("" if f else "> ") + fmt_s(t) for t, f in zip(B["cold_find"], B["finished"])),
                 "", ""])
    rows.append(["entries seen by find", fmt_runs(B["lines"], str), "", ""])
    rows.append(["first du -s after the cold find", fmt_runs(B.get("du_after_find", [])), "", ""])
    rows.append(["warm find", fmt_runs(B["warm_find"]), "", ""])
    rows.append(["API requests, mount + cold find", fmt_runs(B["cold_requests"], str), "", ""])
    rows.append(["API requests, whole fill", fmt_runs(B["fill_requests"], str), "", ""])
    bpe = [k * 1024 / max(1, e) for k, e in zip(B["hwm_kib"], B["tree_entries"])]
    rows.append(["daemon peak RSS (VmHWM)", fmt_runs(B["hwm_kib"], lambda k: "%.0f MiB" % (k / 1024)), "", ""])
    rows.append(["background fill (status xattr)",
                 ", ".join("%s s, %s" % (f, r) for f, r in zip(B["fill_seconds"], B["fill_rate"])), "", ""])
    rows.append(["daemon CPU after the fill", fmt_runs(B["cpu_after_fill"]), "", ""])
    rows.append(["VmHWM / entries", fmt_runs(bpe, lambda b: "%.0f B" % b),
                 "<= %d B" % TARGET_BYTES_PER_ENTRY, verdict([b <= TARGET_BYTES_PER_ENTRY for b in bpe])])
    print_table(rows, ["--big: %d entries, %g ms" % (B["entries"], B["latency_ms"]), "dropboxfs", "target",
                       "verdict"])
    log("status after the fill: " + " | ".join(B["fill_status"]))
    log("requests by route, mount + cold find: " + " | ".join(B["cold_routes"]))
    log("listings besides the whole-account fill (derived from the counts): "
        + " | ".join("%d subtree listings (%d recursive pages beyond the fill), %d single-folder listings"
                     % (sub, extra, single) for sub, single, extra in B.get("breakdown", [])))
