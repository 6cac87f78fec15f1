"""Read benchmark (scripts/bench-read; figures in docs/READS.md): the release binary mounted on the
fake Dropbox server.

(a) Cold sequential `cat` of a 1 GiB file with the fake limited to 50 MB/s per connection and 30 ms
    per request, beside ONE `curl` download of the same file from the same fake: parallel ranged
    prefetch should make the mount at least 2x faster.
(b) Unlimited loopback: the mount's MB/s cold (network) and warm (disk cache), beside `cat` of the
    same bytes on tmpfs; time to first byte; random 4 KiB read latency; the daemon's peak RSS
    (VmHWM).
(c) A cold `sha256sum` of a --sha-size (256) MiB file on a fresh mount, beside the same bytes
    through `curl ... | sha256sum` from the same fake and through a local FUSE passthrough (bindfs
    over a tmpfs copy; left out with a note when bindfs is not installed): the mount should take at
    most 1.3x the slower of the two. Unlimited loopback (where the daemon's own work shows most),
    then 30 ms per request and 50 MB/s per connection (the mount against curl alone).

Every ratio is computed from figures measured in the same run. Needs FUSE (run as root), curl, and
`swift build -c release` (done here unless --no-build or DROPBOXFS_BIN names a binary).
Each of --runs cold runs (default 2; the machine is small and noisy) is reported on its own.
Each mount has a cache folder of its own (the disk cache survives a remount: a shared one would
serve (b)'s cold reads from what (a) downloaded).
Usage: scripts/bench-read [--size MiB] [--runs N] [--no-build] [--sha-size MiB] [--sha-only]
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


def timed_sha(cmd, expected, shell=False):
    """Seconds a `sha256sum` (or a pipeline ending in one) took; exits if its hash is not `expected`."""
    start = time.monotonic()
    out = subprocess.run(cmd, shell=shell, stdout=subprocess.PIPE, check=True).stdout
    seconds = time.monotonic() - start
    if out.split()[0].decode() != expected:
        sys.exit(f"wrong bytes from {cmd!r}")
    return seconds


def measure_sha(binary, fake, size, expected, workdir):
    """(c): one cold run of each way to hash /sha.bin; returns the figures."""
    r = {}
    resources = Resources("bench-read-sha")
    curl = (f"curl -sS -f -H 'Authorization: Bearer {TOKEN}' -H 'Dropbox-API-Arg: {{\"path\":\"/sha.bin\"}}' "
            f"-X POST {fake.url}/2/files/download | sha256sum")
    try:
        fake.config(bandwidth=0, latency_ms=0)
        shm = tempfile.mkdtemp(prefix="bench-read-sha-", dir="/dev/shm")
        resources.add("tmpfs copy", lambda: shutil.rmtree(shm, ignore_errors=True))
        local = os.path.join(shm, "sha.bin")
        with open(local, "wb") as f:
            f.write(fake.content("/sha.bin"))
        r["tmpfs"] = timed_sha(["sha256sum", local], expected)
        if shutil.which("bindfs"):
            passthrough = tempfile.mkdtemp(prefix="bench-read-bindfs-", dir=workdir)
            subprocess.run(["bindfs", shm, passthrough], check=True)
            resources.add("bindfs " + passthrough,
                          lambda: subprocess.run(["fusermount", "-u", passthrough], capture_output=True))
            drop_page_cache(os.path.join(passthrough, "sha.bin"))
            r["bindfs"] = timed_sha(["sha256sum", os.path.join(passthrough, "sha.bin")], expected)
        r["curl"] = timed_sha(curl, expected, shell=True)
        m = Mount(binary, fake, workdir, "sha-fast", resources=resources)
        fake.reset_stats()
        cpu = m.cpu_seconds()
        r["mount"] = timed_sha(["sha256sum", os.path.join(m.mnt, "sha.bin")], expected)
        r["mount_cpu"] = m.cpu_seconds() - cpu
        if fake.stats()["bytes_sent"] < size:
            log("    !! the cold sha256sum came from a cache")
        r["rss"] = m.vm_hwm_kib() / 1024
        m.release()

        fake.config(bandwidth=50_000_000, latency_ms=30)
        r["limited_curl"] = timed_sha(curl, expected, shell=True)
        m = Mount(binary, fake, workdir, "sha-limited", resources=resources)
        r["limited_mount"] = timed_sha(["sha256sum", os.path.join(m.mnt, "sha.bin")], expected)
        r["limited_rss"] = m.vm_hwm_kib() / 1024
        m.release()
    finally:
        resources.cleanup()
    return r


def report_sha(r, size):
    log(f"(c) cold sha256sum of {size // MiB} MiB")
    log(f"    tmpfs (warm page cache)   {r['tmpfs']:7.2f} s  {mbps(size, r['tmpfs']):7.1f} MB/s")
    if "bindfs" in r:
        log(f"    bindfs over tmpfs, cold   {r['bindfs']:7.2f} s  {mbps(size, r['bindfs']):7.1f} MB/s")
    else:
        log("    bindfs over tmpfs         (not measured: bindfs is not installed; apt install bindfs)")
    log(f"    curl | sha256sum          {r['curl']:7.2f} s  {mbps(size, r['curl']):7.1f} MB/s")
    log(f"    mount, cold               {r['mount']:7.2f} s  {mbps(size, r['mount']):7.1f} MB/s"
        f"  (daemon CPU {r['mount_cpu']:.2f} s, peak RSS {r['rss']:.0f} MiB)")
    slower = max(r["curl"], r.get("bindfs", 0))
    ratio = r["mount"] / slower
    log(f"    mount / the slower of curl and bindfs  {ratio:5.2f} x   (target: at most 1.3 x: "
        f"{'met' if ratio <= 1.3 else 'NOT met'})")
    log("    30 ms per request, 50 MB/s per connection:")
    log(f"    curl | sha256sum          {r['limited_curl']:7.2f} s  {mbps(size, r['limited_curl']):7.1f} MB/s")
    log(f"    mount, cold               {r['limited_mount']:7.2f} s  {mbps(size, r['limited_mount']):7.1f} MB/s"
        f"  (peak RSS {r['limited_rss']:.0f} MiB)")
    ratio = r["limited_mount"] / r["limited_curl"]
    log(f"    mount / curl              {ratio:7.2f} x   (target: at most 1.3 x: {'met' if ratio <= 1.3 else 'NOT met'})")


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
    parser.add_argument("--sha-size", type=int, default=256, help="file size of part (c) in MiB (default 256)")
    parser.add_argument("--sha-only", action="store_true", help="run only part (c), the cold sha256sum")
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
        sha_size = args.sha_size * MiB
        fake.add_file("/sha.bin", size=sha_size, seed=13)
        sha_expected = hashlib.sha256(fake.content("/sha.bin")).hexdigest()
        if not args.sha_only:
            log(f"adding /big.bin and /random.bin ({args.size} MiB each) to the fake ...")
            fake.add_file("/big.bin", size=size, seed=11)
            fake.add_file("/random.bin", size=size, seed=12)
            expected = hashlib.sha256(fake.content("/big.bin")).hexdigest()
        for run in range(1, args.runs + 1):
            log(f"\nrun {run} of {args.runs} (cold: fresh mounts and caches; load {os.getloadavg()[0]:.1f})")
            if not args.sha_only:
                report(measure(binary, fake, size, expected, tempfile.mkdtemp(dir=workdir)), size)
            report_sha(measure_sha(binary, fake, sha_size, sha_expected, tempfile.mkdtemp(dir=workdir)), sha_size)
    finally:
        if fake is not None:
            fake.stop()
        shutil.rmtree(workdir, ignore_errors=True)
