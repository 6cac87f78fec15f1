"""Read benchmark (scripts/bench-read; figures in docs/READS.md): the release binary mounted on the
fake Dropbox server.

(a) Cold sequential `cat` of a 1 GiB file with the fake limited to 50 MB/s per connection and 30 ms
    per request, beside ONE `curl` download of the same file from the same fake: parallel ranged
    prefetch should make the mount at least 2x faster.
(b) Unlimited loopback: the mount's MB/s cold (network) and warm (disk cache), beside `cat` of the
    same bytes on tmpfs; time to first byte; random 4 KiB read latency; the daemon's peak RSS
    (VmHWM).

Every ratio is computed from figures measured in the same run. Needs FUSE (run as root), curl, and
`swift build -c release` (done here unless --no-build or DROPBOXFS_BIN names a binary).
Each of --runs cold runs (default 2; the machine is small and noisy) is reported on its own.
Each mount has a cache folder of its own (the disk cache survives a remount: a shared one would
serve (b)'s cold reads from what (a) downloaded).
Usage: scripts/bench-read [--size MiB] [--runs N] [--no-build]
"""

import argparse
import hashlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from .harness import (ROOT, TOKEN, FakeDropbox, Mount, Resources, build_release, drop_page_cache,
                      install_signal_handlers, log, machine_info, run_timed)

MiB = 1 << 20


def timed(cmd):
    """Seconds `cmd` took, its output read by this process through a pipe (so are the figures in
    docs/READS.md)."""
    return run_timed(cmd, stdout=subprocess.PIPE, text=False)[0]


def first_byte_seconds(path):
    start = time.monotonic()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.read(fd, 4096)
    finally:
        os.close(fd)
    return time.monotonic() - start


def random_read_ms(path, size, count, seed):
    rng = random.Random(seed)
    fd = os.open(path, os.O_RDONLY)
    times = []
    try:
        for _ in range(count):
            offset = rng.randrange(0, size - 4096) & ~4095
            start = time.monotonic()
            os.pread(fd, 4096, offset)
            times.append((time.monotonic() - start) * 1000)
    finally:
        os.close(fd)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def mbps(size, seconds):
    return size / seconds / 1e6


def machine():
    info = machine_info()
    return f"{info['cpu']}, {info['nproc']} cores, {info['mem_gib']:.0f} GiB RAM, Linux {info['kernel']}"


def measure(binary, fake, size, expected, workdir):
    """One cold run of every measurement; returns the figures."""
    r = {}
    resources = Resources("bench-read")

    def mount(name, *extra):
        m = Mount(binary, fake, workdir, name, extra=extra, resources=resources)
        return m, m.mnt

    try:
        # (a) limited: 50 MB/s per connection, 30 ms per request.
        fake.config(bandwidth=50_000_000, latency_ms=30)
        r["curl"] = timed(["curl", "-sS", "-f", "-H", f"Authorization: Bearer {TOKEN}",
                           "-H", 'Dropbox-API-Arg: {"path":"/big.bin"}', "-X", "POST",
                           f"{fake.url}/2/files/download", "-o", "/dev/null"])
        limited, path = mount("limited")
        r["limited_cat"] = timed(["cat", f"{path}/big.bin"])
        drop_page_cache(f"{path}/big.bin")
        check = subprocess.run(["sha256sum", f"{path}/big.bin"], capture_output=True)
        if check.stdout.split()[0].decode() != expected:
            sys.exit("the mount served wrong bytes")
        r["limited_ttfb"] = first_byte_seconds(f"{path}/random.bin")
        r["limited_random"] = random_read_ms(f"{path}/random.bin", size, 50, 1)
        r["limited_rss"] = limited.vm_hwm_kib() / 1024
        limited.release()

        # (b) unlimited loopback.
        fake.config(bandwidth=0, latency_ms=0)
        shm = tempfile.mkdtemp(prefix="bench-read-", dir="/dev/shm")
        try:
            local = os.path.join(shm, "big.bin")
            with open(local, "wb") as f:
                f.write(fake.content("/big.bin"))
            timed(["cat", local])
            r["tmpfs"] = timed(["cat", local])
        finally:
            shutil.rmtree(shm)
        fast, path = mount("fast")
        fake.reset_stats()
        r["cold"] = timed(["cat", f"{path}/big.bin"])
        sent = fake.stats()["bytes_sent"]
        if sent < size:
            log(f"    !! the cold cat came from a cache: the fake sent {sent} bytes of {size}")
        drop_page_cache(f"{path}/big.bin")
        r["warm"] = timed(["cat", f"{path}/big.bin"])
        r["hot"] = timed(["cat", f"{path}/big.bin"])
        r["ttfb"] = first_byte_seconds(f"{path}/random.bin")
        r["random"] = random_read_ms(f"{path}/random.bin", size, 300, 2)
        r["rss"] = fast.vm_hwm_kib() / 1024
        fast.release()
        memory_only, path = mount("memory", "--no-disk-cache")
        r["cold_memory"] = timed(["cat", f"{path}/big.bin"])
        r["rss_memory"] = memory_only.vm_hwm_kib() / 1024
    finally:
        resources.cleanup()
    return r


def report(r, size):
    log("(a) 50 MB/s per connection, 30 ms per request")
    log(f"    curl, one download        {r['curl']:7.2f} s  {mbps(size, r['curl']):7.1f} MB/s")
    log(f"    mount, cold cat           {r['limited_cat']:7.2f} s  {mbps(size, r['limited_cat']):7.1f} MB/s")
    log(f"    speed-up                  {r['curl'] / r['limited_cat']:7.2f} x   (target: at least 2 x)")
    log(f"    time to first byte        {r['limited_ttfb'] * 1000:7.1f} ms")
    med, p99 = r["limited_random"]
    log(f"    random 4 KiB read         {med:7.1f} ms median, {p99:.1f} ms p99")
    log(f"    daemon peak RSS           {r['limited_rss']:7.1f} MiB")
    log("(b) unlimited loopback")
    tmpfs = mbps(size, r["tmpfs"])
    log(f"    cat on tmpfs              {r['tmpfs']:7.2f} s  {tmpfs:7.1f} MB/s")
    for key, label in (("cold", "mount, cold (network)"), ("cold_memory", "mount, cold, no disk cache"),
                       ("warm", "mount, warm (disk cache)"), ("hot", "mount, hot (page cache)")):
        rate = mbps(size, r[key])
        log(f"    {label:<26}{r[key]:7.2f} s  {rate:7.1f} MB/s  ({rate / tmpfs * 100:.0f}% of tmpfs)")
    log(f"    time to first byte        {r['ttfb'] * 1000:7.1f} ms")
    med, p99 = r["random"]
    log(f"    random 4 KiB read         {med:7.2f} ms median, {p99:.2f} ms p99")
    log(f"    daemon peak RSS           {r['rss']:7.1f} MiB (with disk cache), {r['rss_memory']:.1f} MiB (without)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1024, help="file size in MiB (default 1024)")
    parser.add_argument("--runs", type=int, default=2, help="cold runs, each reported (default 2)")
    parser.add_argument("--no-build", action="store_true", help="use the existing release binary")
    args = parser.parse_args()
    size = args.size * MiB
    if shutil.which("curl") is None or shutil.which("fusermount3") is None:
        sys.exit("needs curl and fusermount3")
    binary = os.environ.get("DROPBOXFS_BIN")
    if binary is None:
        if not args.no_build:
            log("building the release binary ...")
            build_release(name="bench-read")
        binary = str(ROOT / ".build" / "release" / "dropboxfs")
    install_signal_handlers()
    workdir = tempfile.mkdtemp(prefix="bench-read-")
    fake = None
    try:
        log(f"machine: {machine()}")
        log(f"date: {time.strftime('%Y-%m-%d %H:%M %Z')}")
        fake = FakeDropbox.start("--quiet")
        log(f"adding /big.bin and /random.bin ({args.size} MiB each) to the fake ...")
        fake.add_file("/big.bin", size=size, seed=11)
        fake.add_file("/random.bin", size=size, seed=12)
        expected = hashlib.sha256(fake.content("/big.bin")).hexdigest()
        for run in range(1, args.runs + 1):
            log(f"\nrun {run} of {args.runs} (cold: fresh mounts and caches)")
            report(measure(binary, fake, size, expected, tempfile.mkdtemp(dir=workdir)), size)
    finally:
        if fake is not None:
            fake.stop()
        shutil.rmtree(workdir, ignore_errors=True)
