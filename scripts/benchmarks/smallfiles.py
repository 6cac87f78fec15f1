"""Small-files benchmark (scripts/bench-small-files; figures in docs/PERFORMANCE.md): programs that
read many small files one after another, cold, on the release binary mounted on the fake Dropbox
server at --latency-ms (default 30) per request, with read-ahead across files fetching folders as
one zip (the default), reading ahead file by file (--no-folder-zips) and with --no-read-ahead,
beside the same command on a tmpfs copy of the same files, in one run.

The tree: --files files (default 2,000) of --mean-kib KiB on average (sizes spread evenly from a
fifth of it to 1.8 times it, seeded) in --folders folders (default 40). For each command (cold
`grep -r`, `tar c` into a pipe, `cp -r` to tmpfs) and each mode, a fresh mount with a cache
folder of its own, once its background listing is done: the command's seconds, the downloads the
fake served (downloads and zips), the daemon's peak RSS (VmHWM) and its CPU seconds since it started (the listing
included). `cp -r`'s copy is compared with the tmpfs copy
(`diff -r`) so wrong bytes cannot pass unnoticed. Targets: at most 3 s per command with
read-ahead. Each of --runs runs (default 1) is reported on its own; --no-off skips the runs
without read-ahead (each takes about a minute per command at 30 ms).

Beside them, a model of `files/download_zip` (one request per folder instead of one per file):
this process fetches each folder's zip from the fake at the same latency, one folder at a time in
walk order and then 4 at a time, checks every member against the listing's content_hash and
writes the files to tmpfs. The fake makes a zip at once unless --zip-delay-ms says how long it
takes (Dropbox's time to make one is not known here): the daemon's zips and the model wait it.

Usage: scripts/bench-small-files [--files N] [--folders N] [--mean-kib K] [--latency-ms MS]
                                 [--runs N] [--no-off] [--zip-delay-ms MS] [--bin PATH]
The binary defaults to .build-rel/release/dropboxfs (`swift build -c release --scratch-path
.build-rel`), or DROPBOXFS_BIN.
"""

import argparse
import concurrent.futures
import hashlib
import http.client
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

from .harness import (DEFAULT_BIN, RES, TOKEN, FakeDropbox, Mount, install_signal_handlers, log, machine_info,
                      machine_line, print_table, ratio_str, run_cleaning_up, run_timed)

TARGET_S = 3.0
COMMANDS = ("grep -r", "tar c", "cp -r")


def build_tree(fake, files, folders, mean_kib, seed=7):
    """Adds the files to the fake; returns {path: size}."""
    rng = random.Random(seed)
    mean = mean_kib * 1024
    sizes = {}
    for i in range(files):
        path = "/small/d%02d/f%04d.txt" % (i % folders, i)
        size = rng.randint(mean // 5, mean * 9 // 5)
        fake.add_file(path, size=size, seed=i + 1)
        sizes[path] = size
    return sizes


def tmpfs_copy(fake, sizes):
    base = tempfile.mkdtemp(prefix="bench-small-", dir="/dev/shm")
    RES.add("tmpfs copy " + base, lambda: shutil.rmtree(base, ignore_errors=True))
    for path in sizes:
        local = base + path
        os.makedirs(os.path.dirname(local), exist_ok=True)
        with open(local, "wb") as f:
            f.write(fake.content(path))
    return base + "/small"


def run_command(name, root, scratch):
    """Seconds `name` took over `root`; `cp -r` copies into `scratch` (returned for checking)."""
    if name == "grep -r":
        # A pattern that never matches, so grep reads every byte of every file (it exits 1 then).
        dt, _, _ = run_timed(["sh", "-c", 'grep -r -c -- "$1" "$2"; test $? -le 1', "sh",
                              "no such text in these files", root], stdout=subprocess.PIPE)
        return dt, None
    if name == "tar c":
        dt, _, _ = run_timed(["tar", "-c", "-f", "-", "-C", root, "."], stdout=subprocess.PIPE, text=False)
        return dt, None
    target = os.path.join(scratch, "copy")
    dt, _, _ = run_timed(["cp", "-r", root, target])
    return dt, target


def content_hash(data):
    """Dropbox's content_hash: SHA-256 over the SHA-256 of each 4 MiB block."""
    blocks = b"".join(hashlib.sha256(data[i:i + (4 << 20)]).digest() for i in range(0, len(data), 4 << 20))
    return hashlib.sha256(blocks).hexdigest()


def zip_model(fake, hashes, latency_ms, parallel, scratch):
    """Seconds to fetch /small's folders by files/download_zip, `parallel` at a time in walk order,
    check every member against `hashes` ({path_lower: content_hash}) and write it to tmpfs."""
    folders = sorted({path.rsplit("/", 1)[0] for path in hashes})
    target = tempfile.mkdtemp(prefix="bench-small-zip-", dir=scratch)

    def fetch(folder):
        conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=120)
        conn.request("POST", "/2/files/download_zip", b"", {
            "Authorization": "Bearer " + TOKEN, "Dropbox-API-Arg": json.dumps({"path": folder})})
        reply = conn.getresponse()
        body = reply.read()
        conn.close()
        if reply.status != 200:
            sys.exit("download_zip %s: %d %s" % (folder, reply.status, body[:200]))
        checked = 0
        with zipfile.ZipFile(io.BytesIO(body)) as z:
            for info in z.infolist():
                if info.is_dir():
                    continue
                data = z.read(info)
                path = folder.rsplit("/", 1)[0] + "/" + info.filename
                if content_hash(data) != hashes[path.lower()]:
                    sys.exit("download_zip: %s does not match its content_hash" % path)
                local = os.path.join(target, info.filename)
                os.makedirs(os.path.dirname(local), exist_ok=True)
                with open(local, "wb") as f:
                    f.write(data)
                checked += 1
        return checked

    fake.config(latency_ms=latency_ms)
    fake.reset_stats()
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
        checked = sum(pool.map(fetch, folders))
    seconds = time.monotonic() - start
    requests = fake.stats()["routes"].get("files/download_zip", 0)
    fake.config(latency_ms=0)
    shutil.rmtree(target)
    if checked != len(hashes):
        sys.exit("download_zip: %d files checked of %d" % (checked, len(hashes)))
    return seconds, requests


def measure(binary, fake, tmp_root, workdir, latency_ms, modes):
    """One cold run: {command: {"tmpfs": s, mode: (s, downloads, rss MiB)}}."""
    out = {}
    scratch = tempfile.mkdtemp(prefix="bench-small-scratch-", dir="/dev/shm")
    RES.add("scratch " + scratch, lambda: shutil.rmtree(scratch, ignore_errors=True))
    for command in COMMANDS:
        row = out.setdefault(command, {})
        run_command(command, tmp_root, scratch)  # warm the tmpfs copy's page cache
        shutil.rmtree(os.path.join(scratch, "copy"), ignore_errors=True)
        row["tmpfs"] = run_command(command, tmp_root, scratch)[0]
        shutil.rmtree(os.path.join(scratch, "copy"), ignore_errors=True)
        for mode, extra in modes:
            fake.config(latency_ms=0)
            m = Mount(binary, fake, workdir, "%s-%s" % (command, mode), extra=extra)
            if not m.wait_filled(120):
                sys.exit("the mount's background listing did not finish:\n" + m.log_tail())
            fake.config(latency_ms=latency_ms)
            fake.reset_stats()
            dt, copied = run_command(command, m.mnt + "/small", scratch)
            served = fake.stats()["routes"]
            downloads = served.get("files/download", 0) + served.get("files/download_zip", 0)
            rss = m.vm_hwm_kib() / 1024
            cpu = m.cpu_seconds()
            status = m.status_fields()
            m.release()
            if copied:
                d = subprocess.run(["diff", "-r", "-q", tmp_root, copied], capture_output=True)
                if d.returncode != 0:
                    sys.exit("cp -r through the mount gave other bytes than the tmpfs copy:\n"
                             + d.stdout.decode(errors="replace")[-2000:])
                shutil.rmtree(copied)
            row[mode] = (dt, downloads, rss)
            log("    %-8s %-14s %7.2f s  %5d requests (%d zips)  peak RSS %5.1f MiB  daemon CPU %5.2f s  %s"
                % (command, mode, dt, downloads, served.get("files/download_zip", 0), rss, cpu,
                   " ".join("%s=%s" % (k, v) for k, v in status.items()
                            if k.startswith("read_ahead") or k.startswith("zip_"))))
    fake.config(latency_ms=0)
    return out


def report(result, modes):
    headers = ["command", "tmpfs"]
    for mode, _ in modes:
        headers += [mode, "x tmpfs", "requests", "peak RSS"]
    for mode, _ in modes[1:]:
        headers += ["%s / %s" % (mode, modes[0][0])]
    headers += ["target (<= %.0f s)" % TARGET_S]
    rows = []
    for command in COMMANDS:
        r = result[command]
        row = [command, "%.3f s" % r["tmpfs"]]
        for mode, _ in modes:
            dt, downloads, rss = r[mode]
            row += ["%.2f s" % dt, ratio_str(dt, r["tmpfs"]), str(downloads), "%.0f MiB" % rss]
        for mode, _ in modes[1:]:
            row.append(ratio_str(r[mode][0], r[modes[0][0]][0]))
        row.append("met" if r[modes[0][0]][0] <= TARGET_S else "NOT met")
        rows.append(row)
    print_table(rows, headers)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--folders", type=int, default=40)
    parser.add_argument("--mean-kib", type=int, default=10)
    parser.add_argument("--latency-ms", type=int, default=30)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--no-off", action="store_true", help="skip the runs with --no-read-ahead")
    parser.add_argument("--zip-delay-ms", type=int, default=0,
                        help="the fake's time to make each zip, beside the latency (Dropbox's is not known)")
    parser.add_argument("--bin", default=os.environ.get("DROPBOXFS_BIN", str(DEFAULT_BIN)))
    args = parser.parse_args()
    if not os.path.exists(args.bin):
        sys.exit("no binary at %s: build it with `swift build -c release --scratch-path .build-rel`" % args.bin)
    install_signal_handlers()
    modes = [("folder zips", ()), ("file by file", ("--no-folder-zips",))]
    if not args.no_off:
        modes.append(("no read-ahead", ("--no-read-ahead",)))

    def body():
        info = machine_info()
        workdir = tempfile.mkdtemp(prefix="bench-small-")
        RES.add("workdir " + workdir, lambda: shutil.rmtree(workdir, ignore_errors=True))
        fake = FakeDropbox.start("--quiet", timeout=120)
        RES.add("fake server", fake.stop)
        fake.config(zip_delay_ms=args.zip_delay_ms)
        t0 = time.monotonic()
        sizes = build_tree(fake, args.files, args.folders, args.mean_kib)
        fake.tree()  # computes the content hashes once, as a long-running server has them
        tmp_root = tmpfs_copy(fake, sizes)
        log("%d files, %.1f MB in %d folders (mean %.1f KB), tmpfs copy made in %.1f s; %d ms per request,"
            " %d ms more to make each zip"
            % (len(sizes), sum(sizes.values()) / 1e6, args.folders, sum(sizes.values()) / len(sizes) / 1e3,
               time.monotonic() - t0, args.latency_ms, args.zip_delay_ms))
        hashes = {e["path_lower"]: e["content_hash"] for e in fake.tree() if e.get("tag") == "file"}
        for run in range(1, args.runs + 1):
            log("\nrun %d of %d (cold: a fresh mount and cache folder per command and mode)" % (run, args.runs))
            result = measure(args.bin, fake, tmp_root, workdir, args.latency_ms, modes)
            log("")
            report(result, modes)
            for parallel in (1, 4):
                seconds, requests = zip_model(fake, hashes, args.latency_ms, parallel, workdir)
                log("download_zip model, %d folder%s at a time: %.2f s for every file fetched, checked and written"
                    " (%d requests; the fake makes a zip at once)"
                    % (parallel, "" if parallel == 1 else "s", seconds, requests))
        log("")
        log(machine_line(info))

    return run_cleaning_up("bench-small-files", body)
