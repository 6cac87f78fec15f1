"""Pin benchmark (scripts/bench-pin; figures in docs/PERFORMANCE.md): `dropboxfs pin` of a folder of
about --mib (1024) MiB of mixed files at link speed, beside `curl` fetching the same files from the
same fake, in one run.

Link speed: the fake sends at most --bandwidth-mbps (50) MB/s per connection with --latency-ms (30)
per request. The folder holds many small files (10 to 200 KiB), some middling ones (1 to 8 MiB)
and a few large ones (64 to 160 MiB), seeded. Measured, per run, on a fresh mount with a cache
folder of its own (`--cache-size` room for the pin):
- the pin: from `dropboxfs pin` to the folder's `user.dropboxfs.offline` saying every file is
  present; the downloads and bytes the fake served; the daemon's peak RSS (VmHWM) and CPU;
- every file then read back through the mount (`sha256sum` of each, against the fake's bytes),
  counting the downloads the fake served meanwhile (none: the pinned copies are what is read);
- `curl` of the same files, 4 at a time (the keeper's own number of downloads at once), and one
  after another: the link's speed for those bytes.
Target: the pin takes at most 1.3x the 4-at-a-time curl.

Usage: scripts/bench-pin [--mib N] [--latency-ms MS] [--bandwidth-mbps N] [--runs N] [--bin PATH]
The binary defaults to .build-rel/release/dropboxfs (`swift build -c release --scratch-path
.build-rel`), or DROPBOXFS_BIN.
"""

import argparse
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from .harness import (DEFAULT_BIN, RES, TOKEN, FakeDropbox, Mount, install_signal_handlers, log, machine_info,
                      machine_line, print_table, ratio_str, run_cleaning_up)

MiB = 1 << 20
TARGET_VS_CURL = 1.3


def build_folder(fake, total_mib, seed=5):
    """Adds /Offline to the fake: mixed files summing to about `total_mib` MiB; returns {path: size}."""
    rng = random.Random(seed)
    total = total_mib * MiB
    sizes = {}
    large = 0
    # About 55% of the bytes in a few large files, 35% in middling ones, the rest in many small ones.
    while large < total * 0.55:
        size = rng.randint(64 * MiB, 160 * MiB)
        sizes["/Offline/video/v%02d.mp4" % len(sizes)] = size
        large += size
    middling = 0
    while middling < total * 0.35:
        size = rng.randint(1 * MiB, 8 * MiB)
        sizes["/Offline/photos/IMG_%04d.jpg" % len(sizes)] = size
        middling += size
    small = 0
    while small < total * 0.10:
        size = rng.randint(10 << 10, 200 << 10)
        sizes["/Offline/docs/d%02d/note_%05d.txt" % (len(sizes) % 20, len(sizes))] = size
        small += size
    for i, (path, size) in enumerate(sorted(sizes.items())):
        fake.add_file(path, size=size, seed=1000 + i)
    return sizes


def offline_state(mnt):
    try:
        return os.getxattr(os.path.join(mnt, "Offline"), "user.dropboxfs.offline").decode()
    except OSError as e:
        return "error: %s" % e


def curl_files(fake, paths, parallel, scratch):
    """Seconds to download `paths` with `parallel` curls at once (each file to /dev/null)."""
    script = ('curl -sS -f -o /dev/null -H "Authorization: Bearer $0" -H "Dropbox-API-Arg: {\\"path\\":\\"$1\\"}" '
              '-X POST "$2/2/files/download"')
    listing = os.path.join(scratch, "paths")
    with open(listing, "w") as f:
        for p in paths:
            f.write(p + "\n")
    start = time.monotonic()
    subprocess.run(["sh", "-c", 'xargs -P "$1" -I{} sh -c "$2" "$3" {} "$4" < "$5"', "sh", str(parallel), script,
                    TOKEN, fake.url, listing], check=True)
    return time.monotonic() - start


def measure(binary, fake, sizes, workdir, latency_ms, bandwidth, scratch):
    r = {}
    total = sum(sizes.values())
    fake.config(latency_ms=0, bandwidth=0)
    m = Mount(binary, fake, workdir, "pin", extra=("--cache-size", "%dM" % (total // MiB * 2 + 256)))
    try:
        if not m.wait_filled(120):
            sys.exit("the mount's background listing did not finish:\n" + m.log_tail())
        fake.config(latency_ms=latency_ms, bandwidth=bandwidth)
        fake.reset_stats()
        cpu = m.cpu_seconds()
        start = time.monotonic()
        p = subprocess.run([binary, "pin", os.path.join(m.mnt, "Offline")], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("dropboxfs pin failed: %s%s" % (p.stdout, p.stderr))
        want = "present %d/%d files" % (len(sizes), len(sizes))
        while offline_state(m.mnt) != want:
            if time.monotonic() - start > 900:
                sys.exit("the pin was not done after 900 s: %s\n%s" % (offline_state(m.mnt), m.log_tail()))
            time.sleep(0.02)
        r["pin"] = time.monotonic() - start
        stats = fake.stats()
        r["downloads"] = stats["routes"].get("files/download", 0)
        r["bytes_sent"] = stats["bytes_sent"]
        r["cpu"] = m.cpu_seconds() - cpu
        r["rss"] = m.vm_hwm_kib() / 1024
        # Read every file back: the pinned copies are what is read, so the fake serves nothing.
        fake.config(latency_ms=0, bandwidth=0)
        fake.reset_stats()
        start = time.monotonic()
        for path in sorted(sizes):
            digest = subprocess.run(["sha256sum", m.mnt + path], capture_output=True, check=True).stdout.split()[0]
            if digest.decode() != hashlib.sha256(fake.content(path)).hexdigest():
                sys.exit("the pinned copy of %s has other bytes than the fake's" % path)
        r["read_back"] = time.monotonic() - start
        r["read_back_downloads"] = fake.stats()["routes"].get("files/download", 0)
        if r["read_back_downloads"]:
            log("    !! reading the pinned files back downloaded %d of them again" % r["read_back_downloads"])
        r["rss_after_read"] = m.vm_hwm_kib() / 1024
    finally:
        m.release()
    fake.config(latency_ms=latency_ms, bandwidth=bandwidth)
    r["curl4"] = curl_files(fake, sorted(sizes), 4, scratch)
    r["curl1"] = curl_files(fake, sorted(sizes), 1, scratch)
    fake.config(latency_ms=0, bandwidth=0)
    return r


def report(r, sizes):
    total = sum(sizes.values())
    mb = total / 1e6
    rows = [
        ["dropboxfs pin, until every file is present", "%.2f s" % r["pin"], "%.0f MB/s" % (mb / r["pin"]),
         ratio_str(r["pin"], r["curl4"]), "<= %.1fx curl x4" % TARGET_VS_CURL,
         "met" if r["pin"] / r["curl4"] <= TARGET_VS_CURL else "NOT met"],
        ["curl, 4 files at a time", "%.2f s" % r["curl4"], "%.0f MB/s" % (mb / r["curl4"]), "", "", ""],
        ["curl, one file after another", "%.2f s" % r["curl1"], "%.0f MB/s" % (mb / r["curl1"]),
         ratio_str(r["pin"], r["curl1"]), "", ""],
    ]
    print_table(rows, ["measurement (%d files, %.0f MB)" % (len(sizes), mb), "seconds", "rate", "pin / this",
                       "target", "verdict"])
    log("pin: %d downloads, %.0f MB served (%.2fx the files' bytes), daemon CPU %.2f s, peak RSS %.0f MiB"
        % (r["downloads"], r["bytes_sent"] / 1e6, r["bytes_sent"] / total, r["cpu"], r["rss"]))
    log("read back through the mount (sha256sum of every file, all equal the fake's): %.2f s, %d downloads; "
        "peak RSS after it %.0f MiB" % (r["read_back"], r["read_back_downloads"], r["rss_after_read"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=1024, help="size of the pinned folder in MiB (default 1024)")
    parser.add_argument("--latency-ms", type=int, default=30)
    parser.add_argument("--bandwidth-mbps", type=int, default=50, help="MB/s per connection (default 50)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--bin", default=os.environ.get("DROPBOXFS_BIN", str(DEFAULT_BIN)))
    args = parser.parse_args()
    if not os.path.exists(args.bin):
        sys.exit("no binary at %s: build it with `swift build -c release --scratch-path .build-rel`" % args.bin)
    install_signal_handlers()

    def body():
        info = machine_info()
        workdir = tempfile.mkdtemp(prefix="bench-pin-")
        RES.add("workdir " + workdir, lambda: shutil.rmtree(workdir, ignore_errors=True))
        fake = FakeDropbox.start("--quiet", timeout=120)
        RES.add("fake server", fake.stop)
        sizes = build_folder(fake, args.mib)
        fake.tree()  # computes the content hashes once, as a long-running server has them
        kinds = {}
        for path, size in sizes.items():
            kind = path.split("/")[2]
            n, b = kinds.get(kind, (0, 0))
            kinds[kind] = (n + 1, b + size)
        log("/Offline: %d files, %.0f MB (%s); %d ms per request, %d MB/s per connection"
            % (len(sizes), sum(sizes.values()) / 1e6,
               ", ".join("%s %d files %.0f MB" % (k, n, b / 1e6) for k, (n, b) in sorted(kinds.items())),
               args.latency_ms, args.bandwidth_mbps))
        for run in range(1, args.runs + 1):
            log("\nrun %d of %d (a fresh mount and cache folder; load %.1f)" % (run, args.runs, os.getloadavg()[0]))
            result = measure(args.bin, fake, sizes, workdir, args.latency_ms, args.bandwidth_mbps * 1_000_000, workdir)
            report(result, sizes)
        log("")
        log(machine_line(info))

    return run_cleaning_up("bench-pin", body)
