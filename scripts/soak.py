"""The soak run behind scripts/soak.

A mount of a synthetic account (tools/fakedropbox --synthetic) under load for a given time:
- 16 readers: 6 with pread at random offsets, 5 with `cat` of whole files, 5 with mmap. Every read
  is checked against the fake's content generator: each 4 KiB block carries (block index, seed), a
  handle must see one seed throughout (one revision), and every byte must equal the generator's
  bytes for that seed. A file deleted meanwhile may fail with ENOENT; faults may surface as EIO
  when every retry failed (counted; more than 1% fails the run).
- 4 walkers: `find` and `du` over the whole mount, in a loop.
- the server changes all along: files rewritten with a new seed and size, files added and deleted,
  folders made and moved; the cursor is reset every few minutes; about 1% of API requests fail
  (429, 500, 503, connection reset, truncated body) through seeded fault rules.
- every 5 s the daemon's RSS and open descriptors are sampled.
Afterwards (faults off, changes stopped) the mount must show exactly the account.
"""

import argparse
import errno
import mmap
import os
import random
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools" / "fakedropbox"))
sys.path.insert(0, str(ROOT / "Tests" / "Mount"))

from fakedropbox.client import FakeDropbox  # noqa: E402
from fakedropbox.content import synth_read  # noqa: E402
from helpers import compare_records, env_for, expected_entries, find_records, is_mounted, wait_until  # noqa: E402

BLOCK = 4096


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.wrong = []

    def add(self, key, n=1):
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + n

    def bad(self, text):
        with self.lock:
            self.wrong.append(text)
        print("WRONG BYTES: " + text, flush=True)


class Handle:
    """Checks the bytes read through one open handle."""

    def __init__(self, path, stats):
        self.path = path
        self.stats = stats
        self.seed = None

    def check(self, offset, data):
        if not data:
            return
        # Learn the seed from a block stamp inside the data.
        first_block = -(-offset // BLOCK) * BLOCK
        if first_block + 16 <= offset + len(data):
            rel = first_block - offset
            index, seed = struct.unpack_from("<QQ", data, rel)
            if index != first_block // BLOCK:
                self.stats.bad(f"{self.path} @{offset}: block {first_block // BLOCK} stamped {index}")
                return
            if self.seed is not None and seed != self.seed:
                self.stats.bad(f"{self.path} @{offset}: seed {seed} after {self.seed} in one handle")
                return
            self.seed = seed
        if self.seed is None:
            return  # nothing to check against yet (the caller reads block 0 first)
        want = bytes(synth_read(self.seed, offset, len(data)))
        if want != data:
            at = next(i for i in range(len(data)) if data[i] != want[i])
            self.stats.bad(f"{self.path} @{offset}+{at}: bytes differ from seed {self.seed}")
        self.stats.add("bytes_checked", len(data))


class Soak:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.stats = Stats()
        self.stop = threading.Event()
        self.files = []  # paths (relative) of files of 16 bytes or more
        self.files_lock = threading.Lock()
        self.samples = []

    # ---- setup -------------------------------------------------------------------
    def start(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="dropboxfs-soak-"))
        self.fake = FakeDropbox.start("--quiet", "--synthetic", str(self.args.entries), "--seed", str(self.args.seed))
        self.mnt = self.tmp / "mnt"
        self.mnt.mkdir()
        self.log = open(self.tmp / "daemon.log", "wb")
        env = env_for(self.fake, extra={"XDG_CACHE_HOME": str(self.tmp / "cache")})
        self.daemon = subprocess.Popen(
            [self.args.bin, "mount", str(self.mnt), "--foreground", "--cache-size", "64M"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_until(lambda: is_mounted(str(self.mnt)), timeout=60, message="the mount")
        for e in self.fake.tree(hashes=False):
            if e["tag"] == "file" and e.get("symlink_target") is None and (e["size"] or 0) >= 16 \
                    and e.get("is_downloadable", True) and "/ Nasty names" not in e["path_display"] \
                    and "/Unicode" not in e["path_display"]:
                self.files.append(e["path_display"])
        print(f"soak: {self.args.entries} entries, {len(self.files)} readable files, {self.args.minutes} min, "
              f"mount {self.mnt}, daemon pid {self.daemon.pid}", flush=True)

    # ---- load --------------------------------------------------------------------
    def pick(self, rng):
        with self.files_lock:
            return rng.choice(self.files)

    def reader(self, kind, seed):
        rng = random.Random(seed)
        while not self.stop.is_set():
            rel = self.pick(rng)
            path = str(self.mnt) + rel
            handle = Handle(rel, self.stats)
            try:
                if kind == "cat":
                    data = subprocess.run(["cat", path], capture_output=True, timeout=120)
                    if data.returncode != 0:
                        raise OSError(errno.ENOENT if b"No such file" in data.stderr else errno.EIO, data.stderr)
                    handle.check(0, data.stdout)
                else:
                    fd = os.open(path, os.O_RDONLY)
                    try:
                        size = os.fstat(fd).st_size
                        if kind == "pread":
                            handle.check(0, os.pread(fd, 16, 0))
                            for _ in range(rng.randrange(1, 8)):
                                off = rng.randrange(0, max(1, size))
                                handle.check(off, os.pread(fd, rng.randrange(1, 200_000), off))
                        elif size > 0:
                            with mmap.mmap(fd, size, prot=mmap.PROT_READ) as m:
                                handle.check(0, m[:16])
                                off = rng.randrange(0, size)
                                handle.check(off, m[off:off + rng.randrange(1, 100_000)])
                    finally:
                        os.close(fd)
                self.stats.add("reads")
            except OSError as e:
                self.stats.add("read_enoent" if e.errno == errno.ENOENT else "read_errors")
            except ValueError:
                self.stats.add("read_enoent")  # mmap of a file that became empty
            except subprocess.TimeoutExpired:
                self.stats.add("read_errors")

    def walker(self, seed):
        rng = random.Random(seed)
        while not self.stop.is_set():
            cmd = ["find", str(self.mnt), "-printf", ""] if rng.random() < 0.5 else ["du", "-s", str(self.mnt)]
            r = subprocess.run(cmd, capture_output=True, timeout=600)
            # Entries vanish under a walk on a changing server: ENOENT lines are expected.
            other = [line for line in r.stderr.decode(errors="replace").splitlines()
                     if "No such file" not in line]
            self.stats.add("walks")
            if other:
                self.stats.add("walk_errors")
                print("walk error: " + other[0], flush=True)

    def mutator(self):
        rng = random.Random(self.args.seed + 1)
        n = 0
        while not self.stop.is_set():
            n += 1
            r = rng.random()
            try:
                if r < 0.5:
                    rel = self.pick(rng)
                    self.fake.add_file(rel, size=rng.randrange(16, 300_000), seed=rng.randrange(1, 2**40))
                elif r < 0.65:
                    rel = f"/soak/new{n}.bin"
                    self.fake.add_file(rel, size=rng.randrange(16, 100_000), seed=rng.randrange(1, 2**40))
                    with self.files_lock:
                        self.files.append(rel)
                elif r < 0.8:
                    with self.files_lock:
                        rel = self.files.pop(rng.randrange(len(self.files)))
                    self.fake.delete(rel)
                elif r < 0.9:
                    self.fake.mkdir(f"/soak/dir{n}/sub")
                else:
                    self.fake.move(f"/soak/dir{n - rng.randrange(1, 20)}", f"/soak/moved{n}")
                self.stats.add("changes")
            except Exception:
                self.stats.add("changes_refused")  # e.g. moving a folder that does not exist
            time.sleep(0.1)

    def resets(self):
        while not self.stop.wait(self.args.reset_every):
            self.fake.reset_cursors()
            self.stats.add("cursor_resets")

    def sampler(self):
        pid = self.daemon.pid
        while not self.stop.wait(5):
            if self.daemon.poll() is not None:
                print("THE DAEMON EXITED", flush=True)
                return
            rss = 0
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
            fds = len(os.listdir(f"/proc/{pid}/fd"))
            self.samples.append((time.monotonic(), rss, fds))

    def run(self):
        self.start()
        kinds = ["pread"] * 6 + ["cat"] * 5 + ["mmap"] * 5
        faults = [{"route": "*", "kind": k, "count": 0, "probability": 0.002, "seed": i}
                  for i, k in enumerate(["429json", "500", "503", "reset", "truncate"])]
        self.fake.add_faults(faults)
        threads = [threading.Thread(target=self.reader, args=(k, i), daemon=True) for i, k in enumerate(kinds)]
        threads += [threading.Thread(target=self.walker, args=(100 + i,), daemon=True) for i in range(4)]
        threads += [threading.Thread(target=f, daemon=True) for f in (self.mutator, self.resets, self.sampler)]
        started = time.monotonic()
        for t in threads:
            t.start()
        deadline = started + self.args.minutes * 60
        while time.monotonic() < deadline and self.daemon.poll() is None:
            time.sleep(min(30, max(0.1, deadline - time.monotonic())))
            print(f"soak: {int(time.monotonic() - started)} s {dict(sorted(self.stats.counts.items()))}", flush=True)
        self.stop.set()
        for t in threads:
            t.join(timeout=660)
        return self.finish(time.monotonic() - started)

    # ---- verdict ----------------------------------------------------------------
    def finish(self, seconds):
        problems = []
        alive = self.daemon.poll() is None
        if not alive:
            problems.append(f"the daemon exited with {self.daemon.returncode}")
        self.fake.clear_faults()
        if alive:
            try:
                self.fake.add_file("/soak/last-change.txt", b"the end\n")
                wait_until(lambda: os.path.exists(str(self.mnt) + "/soak/last-change.txt"), timeout=180,
                           interval=0.5, message="the last change")
                compare_records(find_records(str(self.mnt), timeout=600), expected_entries(self.fake.tree(hashes=False)))
            except AssertionError as e:
                problems.append(f"the tree differs from the account: {e}")
        if self.stats.wrong:
            problems.append(f"{len(self.stats.wrong)} reads returned wrong bytes")
        c = self.stats.counts
        reads = c.get("reads", 0) + c.get("read_errors", 0)
        if reads and c.get("read_errors", 0) > reads * 0.01:
            problems.append(f"{c.get('read_errors')} of {reads} reads failed")
        if c.get("walk_errors", 0):
            problems.append(f"{c['walk_errors']} walks reported errors other than vanished entries")
        rss_note = fds_note = "no samples"
        if len(self.samples) >= 4:
            settled = self.samples[len(self.samples) // 4:]
            first_rss = settled[0][1]
            max_rss = max(s[1] for s in settled)
            max_fds = max(s[2] for s in settled)
            first_fds = settled[0][2]
            rss_note = f"RSS after warm-up {first_rss // 1024} MiB, max {max_rss // 1024} MiB"
            fds_note = f"descriptors after warm-up {first_fds}, max {max_fds}"
            if max_rss > first_rss * 1.5 + 64 * 1024:
                problems.append(f"RSS grew from {first_rss} KiB to {max_rss} KiB")
            if max_fds > first_fds * 2 + 32:
                problems.append(f"open descriptors grew from {first_fds} to {max_fds}")
        if is_mounted(str(self.mnt)):
            subprocess.run(["fusermount3", "-u", str(self.mnt)], capture_output=True)
        try:
            self.daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.daemon.kill()
            problems.append("the daemon did not exit after unmount")
        self.fake.stop()
        gb = c.get("bytes_checked", 0) / 1e9
        print(f"soak result ({time.strftime('%Y-%m-%d')}): {seconds / 60:.1f} min, "
              f"{c.get('reads', 0)} reads ({gb:.2f} GB checked, {len(self.stats.wrong)} wrong), "
              f"{c.get('read_errors', 0)} read errors, {c.get('read_enoent', 0)} reads of vanished files, "
              f"{c.get('walks', 0)} walks, {c.get('changes', 0)} server changes, "
              f"{c.get('cursor_resets', 0)} cursor resets; {rss_note}; {fds_note}", flush=True)
        for p in problems:
            print("SOAK FAILED: " + p, flush=True)
        if problems:
            print(f"daemon log: {self.tmp / 'daemon.log'}", flush=True)
        return 1 if problems else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--bin", default=os.environ.get("DROPBOXFS_BIN", str(ROOT / ".build" / "debug" / "dropboxfs")))
    p.add_argument("--entries", type=int, default=20000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--reset-every", type=float, default=None, help="seconds between cursor resets")
    args = p.parse_args()
    if args.reset_every is None:
        args.reset_every = max(20.0, args.minutes * 60 / 6)
    sys.exit(Soak(args).run())


if __name__ == "__main__":
    main()
