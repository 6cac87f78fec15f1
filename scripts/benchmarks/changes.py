"""The change section of scripts/bench: a large change made through the fake's control API while
mounted (files in new folders, that folder renamed, then deleted), with the store and with
--no-persist; for each step the time until the mount shows it, until the database holds it, and
the daemon CPU it cost.
"""

import http.client
import json
import time

from .harness import Mount, fmt_runs, fmt_s, log, print_table, ratio_str, settle_cpu, wait_for
from .remount import db_bytes, latest_seq, wait_stored

def post_many(fake, paths, size=100):
    """Creates one small file per path through POST /_control/files on one keep-alive connection
    (the fake has no batch endpoint). Returns the seconds it took."""
    conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=120)
    t0 = time.monotonic()
    for k, path in enumerate(paths):
        conn.request("POST", "/_control/files", json.dumps({"path": path, "size": size, "seed": k}).encode(),
                     {"Content-Type": "application/json"})
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise RuntimeError("POST /_control/files %s: %s %s" % (path, r.status, body[:200]))
    conn.close()
    return time.monotonic() - t0


def bench_changes(args, binary, workdir, results, fake, runs):
    """The cost of following a large change while mounted, with the store and with --no-persist:

      create: F files in D new folders, one control call each (the fake has no batch endpoint), so
              the mount follows them as they come, in many small batches;
      move:   the new folder (1 + D + F entries) renamed in one control call: one delete and
              1 + D + F upserts, in one list_folder/continue run of ceil(n / 2000) pages;
      delete: the moved folder deleted in one control call (one entry; the tree drops 1 + D + F).

    Each gives the time until the mount shows the change (status attribute: entries, or the
    delta pages applied), with the store the time until the database holds it too (its cursor
    reaches the fake's journal end), and the daemon CPU it cost."""
    D, F = args.change_folders, args.change_files
    per = -(-F // D)
    paths = ["/bench-changes/d%03d/f%04d.txt" % (k // per, k % per) for k in range(F)]
    n_new = 1 + D + F
    log("")
    log("== a %d-entry change while mounted (%d files in %d folders), with and without the store ==" % (n_new, F, D))
    C = {"persist": [], "nopersist": [], "new_entries": n_new, "files": F, "folders": D}
    for i in range(runs):
        for persist in (True, False):
            mode = "persist" if persist else "nopersist"
            m = Mount(binary, fake, workdir, "changes-%s-%d" % (mode, i + 1),
                      extra=() if persist else ("--no-persist",))
            m.wait_filled(900)
            if persist:
                wait_stored(m.cache_dir, 300)
            base = int(m.status_fields().get("entries", "0"))
            rec = {"base_entries": base}

            def op(name, action, visible, seq_after=True):
                batches0 = int(m.status_fields().get("delta_batches", "0"))
                cpu0 = settle_cpu(m)
                seq0 = latest_seq(fake)
                t0 = time.monotonic()
                call_s = action()
                t_vis = wait_for(visible, 600)
                seq1 = latest_seq(fake)
                t_sto = wait_stored(m.cache_dir, 600, seq=seq1) if persist else None
                cpu1 = settle_cpu(m)
                fields = m.status_fields()
                rec[name] = {"call_s": call_s, "visible_s": None if t_vis is None else t_vis - t0,
                             "stored_s": None if t_sto is None else t_sto - t0, "cpu_s": cpu1 - cpu0,
                             "events": seq1 - seq0 if None not in (seq0, seq1) else None,
                             "batches": int(fields.get("delta_batches", "0")) - batches0}
                return rec[name]

            def timed(fn):
                def run():
                    t = time.monotonic()
                    fn()
                    return time.monotonic() - t
                return run

            def entries():
                return int(m.status_fields().get("entries", "0") or 0)

            op("create", lambda: post_many(fake, paths), lambda: entries() >= base + n_new)
            # The move: one delete and 1 + D + F upserts, in pages of 2000 (the listing's limit).
            pages = -(-(1 + n_new) // 2000)
            b0 = int(m.status_fields().get("delta_batches", "0"))
            op("move", timed(lambda: fake.move("/bench-changes", "/bench-changes-moved")),
               lambda: int(m.status_fields().get("delta_batches", "0")) >= b0 + pages)
            op("delete", timed(lambda: fake.delete("/bench-changes-moved")), lambda: entries() <= base)
            rec["hwm_kib"] = m.vm_hwm_kib()
            rec["status"] = m.status()
            rec["unmount_s"] = m.release(args.keep_logs)
            rec["db_bytes"], rec["wal_bytes"] = db_bytes(m.cache_dir)
            C[mode].append(rec)
            log("    %s run %d: %s; VmHWM %.1f MiB; unmount %.2f s" % (
                mode, i + 1, "; ".join(
                    "%s: calls %.2f s, visible %s, stored %s, CPU %.2f s, %s events in %d pages"
                    % (name, rec[name]["call_s"], fmt_s(rec[name]["visible_s"]), fmt_s(rec[name]["stored_s"]),
                       rec[name]["cpu_s"], rec[name]["events"], rec[name]["batches"])
                    for name in ("create", "move", "delete")), rec["hwm_kib"] / 1024, rec["unmount_s"]))
    results["changes"] = C
    return C



def report_changes(results):
    C = results["changes"]
    log("")
    rows = []
    for name in ("create", "move", "delete"):
        for k, label in (("visible_s", "until the mount shows it"), ("stored_s", "until the database holds it"),
                         ("cpu_s", "daemon CPU")):
            p = [r[name][k] for r in C["persist"]]
            q = [r[name][k] for r in C["nopersist"]] if k != "stored_s" else []
            ratio = ", ".join(ratio_str(a, b) for a, b in zip(p, q)) if q else ""
            rows.append(["%s: %s" % (name, label), fmt_runs(p), fmt_runs(q), ratio])
        rows.append(["%s: events, delta pages" % name,
                     ", ".join("%s, %d" % (r[name]["events"], r[name]["batches"]) for r in C["persist"]),
                     ", ".join("%s, %d" % (r[name]["events"], r[name]["batches"]) for r in C["nopersist"]), ""])
    rows.append(["daemon peak RSS (VmHWM)",
                 fmt_runs([r["hwm_kib"] for r in C["persist"]], lambda k: "%.0f MiB" % (k / 1024)),
                 fmt_runs([r["hwm_kib"] for r in C["nopersist"]], lambda k: "%.0f MiB" % (k / 1024)), ""])
    print_table(rows, ["%d-entry change (%d files, %d folders)" % (C["new_entries"], C["files"], C["folders"]),
                       "store on", "--no-persist", "on/off"])
    log("create: %d control calls; the mount follows them as they come (calls took %s)"
        % (C["files"], fmt_runs([r["create"]["call_s"] for r in C["persist"] + C["nopersist"]])))
