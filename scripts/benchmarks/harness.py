"""The harness every benchmark of scripts/bench* shares: the fake Dropbox server
(tools/fakedropbox) started and warmed, the release binary mounted on it, tmpfs reference copies,
timed commands, the daemon's RSS and CPU read from /proc, the fake's request counts, and the
tables that print figures side by side with their ratios.

Everything a benchmark starts (fake servers, mounts, daemons, copies) is registered with a
Resources list (RES, the run's, or one of a single measurement) and undone in reverse order
exactly once: at the end, also on Ctrl-C or SIGTERM/SIGHUP (install_signal_handlers,
run_cleaning_up). The benchmarks run on one thread, so nothing here needs a lock.
"""

import http.client
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "fakedropbox"))
from fakedropbox.client import FakeDropbox  # noqa: E402

TOKEN = "test-token"
DEFAULT_BIN = ROOT / ".build-rel" / "release" / "dropboxfs"


def log(text=""):
    print(text, flush=True)


# ---- cleanup ---------------------------------------------------------------------------------

class Resources:
    """Everything the benchmark started, undone in reverse order exactly once. `name` prefixes
    the message of an undo action that fails."""

    def __init__(self, name="bench"):
        self.name = name
        self.undo = []  # (label, fn)
        self.done = False

    def add(self, label, fn):
        self.undo.append((label, fn))
        return len(self.undo) - 1

    def release(self, index):
        """Run one undo action now (and never again)."""
        label, fn = self.undo[index]
        self.undo[index] = (label, None)
        if fn is not None:
            fn()

    def cleanup(self):
        if self.done:
            return
        self.done = True
        for label, fn in reversed(self.undo):
            if fn is None:
                continue
            try:
                fn()
            except Exception as e:  # keep cleaning up the rest
                print("%s: cleanup of %s failed: %s" % (self.name, label, e), file=sys.stderr)


RES = Resources()


def _on_signal(signum, _frame):
    raise SystemExit(128 + signum)


def run_cleaning_up(name, body):
    """Runs body() and returns its exit status (0 for None); undoes everything registered with
    RES afterwards, also when it fails or is interrupted (Ctrl-C: said on stderr, status 130)."""
    try:
        return body() or 0
    except KeyboardInterrupt:
        print("\n%s: interrupted; cleaning up" % name, file=sys.stderr)
        return 130
    finally:
        RES.cleanup()


def write_json(path, data):
    """The raw figures of a run, for --json."""
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


def install_signal_handlers():
    """Ctrl-C raises KeyboardInterrupt (even when SIGINT was inherited as ignored, started with &)
    and SIGTERM or SIGHUP raise SystemExit, so a benchmark's finally block cleans up."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)


# ---- processes and mounts ---------------------------------------------------------------------

def is_mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def stop_process(proc, grace=10):
    """SIGTERM then SIGKILL one process we started (by its pid)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def unmount(mnt, proc=None):
    for attempt in range(20):
        if not is_mounted(mnt):
            break
        r = subprocess.run(["fusermount3", "-u", mnt], capture_output=True, text=True)
        if r.returncode == 0:
            break
        time.sleep(0.25)
    else:
        subprocess.run(["fusermount3", "-uz", mnt], capture_output=True)
    if proc is not None:
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            stop_process(proc)


class Mount:
    """One dropboxfs daemon (--foreground, so the Popen pid is the daemon itself) on `fake`, in a
    folder of its own under `workdir` (mount point, log, cache folder unless `cache_dir` names
    one). `env` is the daemon's environment before the fake's URLs and token are added (default:
    ours, with XDG_CACHE_HOME and XDG_CONFIG_HOME in the mount's folder). The daemon is stopped
    by `release` or by the cleanup of `resources` (default RES), whichever comes first."""

    def __init__(self, binary, fake, workdir, label, prefetch=True, extra=(), cache_dir=None, env=None,
                 resources=None):
        self.label = label
        self.resources = resources or RES
        self.dir = Path(tempfile.mkdtemp(prefix="m-", dir=workdir))
        self.mnt = str(self.dir / "mnt")
        os.mkdir(self.mnt)
        self.log_path = self.dir / "daemon.log"
        # A cache folder of an earlier mount holds its stored tree (CACHE_DIR/trees): a remount.
        self.cache_dir = str(cache_dir) if cache_dir else str(self.dir / "cache")
        if env is None:
            env = dict(os.environ, XDG_CACHE_HOME=str(self.dir / "xdg-cache"),
                       XDG_CONFIG_HOME=str(self.dir / "xdg-config"))
        env = dict(env, DROPBOXFS_API_URL=fake.url, DROPBOXFS_CONTENT_URL=fake.url,
                   DROPBOXFS_NOTIFY_URL=fake.url, DROPBOXFS_ACCESS_TOKEN=TOKEN)
        cmd = [str(binary), "mount", self.mnt, "--foreground", "--cache-dir", self.cache_dir]
        if not prefetch:
            cmd.append("--no-prefetch")
        cmd += list(extra)
        self.cmd = cmd
        self.t0 = t0 = time.monotonic()
        with open(self.log_path, "wb") as logf:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, env=env,
                                         start_new_session=True)
        self._undo = self.resources.add("mount " + self.mnt, self.close)
        deadline = t0 + 60
        # A remount logs "serving the stored tree" once the tree is loaded, then catches up with
        # one list_folder/continue before mounting: that line splits the two (within 5 ms).
        self.loaded_seconds = None
        seen = b""
        while not is_mounted(self.mnt):
            if self.proc.poll() is not None:
                raise RuntimeError("dropboxfs exited with %s:\n%s" % (self.proc.returncode, self.log_tail()))
            if time.monotonic() > deadline:
                raise RuntimeError("dropboxfs did not mount within 60 s:\n" + self.log_tail())
            if self.loaded_seconds is None:
                with open(self.log_path, "rb") as f:
                    f.seek(len(seen))
                    seen += f.read()
                if b"serving the stored tree" in seen:
                    self.loaded_seconds = time.monotonic() - t0
            time.sleep(0.005)
        self.mount_seconds = time.monotonic() - t0

    def log_tail(self, n=30):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def vm_hwm_kib(self):
        """The daemon's peak RSS so far (VmHWM), KiB."""
        return self.proc_status_kib().get("VmHWM")

    def proc_status_kib(self):
        """The kB fields of /proc/PID/status (VmHWM, VmRSS, RssAnon, RssFile, RssShmem, ...)."""
        out = {}
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[2] == "kB":
                    out[parts[0].rstrip(":")] = int(parts[1])
        return out

    def cpu_seconds(self):
        """User + system CPU time of the daemon so far (load-independent, unlike wall time)."""
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def status(self):
        try:
            return os.getxattr(self.mnt, "user.dropboxfs.status").decode()
        except OSError as e:
            return "(status unavailable: %s)" % e

    def status_fields(self):
        out = {}
        for part in self.status().split():
            if "=" in part:
                k, v = part.split("=", 1)
                out[k] = v
        return out

    def wait_filled(self, timeout):
        """Waits until the background fill has finished (phase is no longer 'filling')."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.status_fields().get("phase") != "filling":
                return True
            time.sleep(0.05)
        return False

    def close(self):
        unmount(self.mnt, self.proc)
        stop_process(self.proc)

    def release(self, keep_logs=None):
        """Unmounts cleanly and waits for the daemon to exit; returns the seconds that took."""
        t = time.monotonic()
        self.resources.release(self._undo)
        dt = time.monotonic() - t
        if keep_logs:
            os.makedirs(keep_logs, exist_ok=True)
            shutil.copy(self.log_path, Path(keep_logs) / ("%s.log" % self.label.replace(" ", "_")))
        return dt


def run_timed(argv, timeout=None, stdout=subprocess.DEVNULL, text=True):
    """(seconds, returncode or None on timeout, stdout when captured: text, or bytes if not `text`)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, start_new_session=True)
    try:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise
        except BaseException:  # Ctrl-C or SIGTERM: do not leave the command holding the mount
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise
        dt = time.monotonic() - t0
        if p.returncode != 0:
            raise RuntimeError("%s failed (%s): %s" % (" ".join(argv), p.returncode,
                                                      (err or b"").decode(errors="replace")[-2000:]))
        if isinstance(out, bytes) and text:
            out = out.decode(errors="replace")
        return dt, p.returncode, out
    except subprocess.TimeoutExpired:
        dt = time.monotonic() - t0
        os.killpg(p.pid, signal.SIGKILL)  # the group of the one command we started
        p.communicate()
        return dt, None, None


def time_find(root, workdir, timeout=None):
    """`find ROOT | wc -l`: (seconds, lines, finished). The lines go to a file so a run cut by the
    timeout still tells how far it got."""
    out_path = Path(workdir) / "find.out"
    with open(out_path, "wb") as out:
        dt, rc, _ = run_timed(["find", root], timeout=timeout, stdout=out)
    with open(out_path, "rb") as f:
        lines = sum(1 for _ in f)
    out_path.unlink()
    return dt, lines, rc is not None


def time_du(root):
    dt, _, out = run_timed(["du", "-s", root], stdout=subprocess.PIPE)
    return dt, int(out.split()[0])


def time_ls_lr(root):
    dt, _, _ = run_timed(["ls", "-lR", root])
    return dt


# ---- the fake and the tmpfs copy -----------------------------------------------------------

def start_fake(entries, folders, latency_ms, extra=()):
    t0 = time.monotonic()
    args = ["--quiet", "--synthetic", entries, "--latency-ms", latency_ms]
    if folders:
        args += ["--folders", folders]
    args += list(extra)
    fake = FakeDropbox.start(*args, timeout=600)
    RES.add("fake server", fake.stop)
    return fake, time.monotonic() - t0


def list_pages(fake, on_page=None):
    """Lists the whole account recursively in 2000-entry pages, handing each page's entries to
    on_page (so a 1,000,000-entry listing is never held whole)."""
    r = fake.rpc("files/list_folder", {"path": "", "recursive": True, "limit": 2000}, timeout=120)
    while True:
        if r.status != 200:
            raise RuntimeError("list_folder: %s %s" % (r.status, r.text[:200]))
        out = r.json()
        if on_page is not None:
            on_page(out["entries"])
        if not out["has_more"]:
            return
        r = fake.rpc("files/list_folder/continue", {"cursor": out["cursor"]}, timeout=120)


def warm_fake(fake, latency_ms, sample_pages=10, on_page=None):
    """Lists the whole tree once at 0 ms latency so the fake computes its content hashes and
    caches every entry's JSON (as a long-running server would have), then times a few warm
    2000-entry pages (request sent to body received, over one keep-alive connection, without
    decoding). Each page of the warm-up listing goes to on_page if given. Returns (seconds of the
    warm-up listing, warm page ms list)."""
    fake.config(latency_ms=0)
    t0 = time.monotonic()
    list_pages(fake, on_page)
    warmup = time.monotonic() - t0
    conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=120)
    headers = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    conn.request("POST", "/2/files/list_folder",
                 json.dumps({"path": "", "recursive": True, "limit": 2000}).encode(), headers)
    body = conn.getresponse().read()
    times = []
    for _ in range(sample_pages):
        out = json.loads(body)
        if not out["has_more"]:
            break
        t = time.monotonic()
        conn.request("POST", "/2/files/list_folder/continue", json.dumps({"cursor": out["cursor"]}).encode(),
                     headers)
        body = conn.getresponse().read()
        times.append((time.monotonic() - t) * 1000)
    conn.close()
    fake.config(latency_ms=latency_ms)
    fake.reset_stats()
    return warmup, times


def kernel_name_ok(name):
    """A name the kernel can carry (the mount hides the others, and their subtrees)."""
    return bool(name) and "/" not in name and "\0" not in name and name not in (".", "..") \
        and len(name.encode("utf-8", "surrogatepass")) <= 255


def build_tmpfs_copy(fake, workdir):
    """The fake's tree as real folders, sparse files and symlinks under /dev/shm (tmpfs).
    Returns (root, entries created, names skipped)."""
    base = Path(tempfile.mkdtemp(prefix="dropboxfs-bench-", dir="/dev/shm"))
    RES.add("tmpfs copy " + str(base), lambda: shutil.rmtree(base, ignore_errors=True))
    root = base / "tree"
    root.mkdir()
    entries = fake.tree()  # folders before their children; computes the content hashes
    local = {"": str(root)}
    made = skipped = 0
    for e in entries:
        pl = e["path_lower"]
        parent = local.get(pl.rpartition("/")[0])
        if parent is None or not kernel_name_ok(e["name"]):
            skipped += 1  # what the kernel cannot carry (the mount hides these too)
            continue
        name = e["name"]
        path = os.path.join(parent, name)
        try:
            if e["tag"] == "folder":
                os.mkdir(path)
                local[pl] = path
            elif e.get("symlink_target"):
                os.symlink(e["symlink_target"], path)
            else:
                with open(path, "wb") as f:
                    f.truncate(e["size"] or 0)
        except (OSError, UnicodeEncodeError):
            skipped += 1
            continue
        made += 1
    return str(root), made, skipped


# ---- formatting -------------------------------------------------------------------------------

def fmt_s(v):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if v >= 100:
        return "%.0f s" % v
    if v >= 10:
        return "%.1f s" % v
    if v >= 0.1:
        return "%.2f s" % v
    return "%.3f s" % v


def fmt_runs(values, fmt=fmt_s):
    return ", ".join(fmt(v) for v in values) if values else "-"


def ratio_str(a, b, lower_bound=False):
    if a is None or b is None or b <= 0:
        return "-"
    r = a / b
    s = ("%.0f" % r) if r >= 10 else ("%.1f" % r) if r >= 1 else ("%.2f" % r)
    return (">" if lower_bound else "") + s + "x"


def verdict(flags):
    """'met' when every run meets the target, else how many did."""
    if not flags:
        return "-"
    n = sum(1 for f in flags if f)
    if n == len(flags):
        return "met"
    if n == 0:
        return "NOT met"
    return "met in %d/%d runs" % (n, len(flags))


def print_table(rows, headers):
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    log(line)
    log("  ".join("-" * w for w in widths))
    for r in rows:
        log("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))


def machine_info():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        swift = subprocess.run(["swift", "--version"], capture_output=True, text=True, timeout=60).stdout
        swift = swift.splitlines()[0] if swift else "?"
    except Exception:
        swift = "?"
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "Sources"],
                               capture_output=True, text=True).stdout.strip()
        rev += " (Sources/ modified)" if dirty else ""
    except Exception:
        rev = "?"
    return {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "nproc": os.cpu_count(), "cpu": model,
            "kernel": platform.release(), "swift": swift, "git": rev, "idle": idle_info(),
            "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30, 1)}


HALT_POLL_NS = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")


def read_text(path, default="?"):
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def idle_info():
    """How an idle CPU waits: a kernel-cold walk is two FUSE round trips per folder, each a wake-up
    of the walker by the daemon, and what a wake-up costs depends on this. In a KVM guest with the
    haltpoll governor, guest_halt_poll_ns = 0 makes an idle vCPU halt at once, so every wake-up is
    an interrupt through the hypervisor."""
    cpuidle = Path("/sys/devices/system/cpu/cpuidle")
    s = "cpuidle %s/%s" % (read_text(cpuidle / "current_driver", "none"),
                           read_text(cpuidle / "current_governor", "none"))
    if HALT_POLL_NS.exists():
        s += ", guest_halt_poll_ns %s" % read_text(HALT_POLL_NS)
    return s


def set_halt_poll(ns):
    """--guest-halt-poll-ns: sets the haltpoll governor's polling window for this run, restored at exit."""
    if not HALT_POLL_NS.exists():
        sys.exit("bench: --guest-halt-poll-ns needs the haltpoll cpuidle governor (%s is missing)" % HALT_POLL_NS)
    before = read_text(HALT_POLL_NS)
    try:
        HALT_POLL_NS.write_text(str(ns))
    except OSError as e:
        sys.exit("bench: cannot set %s (root needed): %s" % (HALT_POLL_NS, e))
    RES.add("guest_halt_poll_ns " + before, lambda: HALT_POLL_NS.write_text(before))


def machine_line(info):
    """One line naming the machine, the build measured and the load, for a report."""
    return ("Machine: %s, %s CPUs, %s GiB RAM, kernel %s (%s); %s; dropboxfs %s; date %s; load %s"
            % (info["cpu"], info["nproc"], info["mem_gib"], info["kernel"], info["idle"], info["swift"], info["git"],
               info["date"], loadavg()))


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def routes_str(stats):
    short = {"files/list_folder": "list_folder", "files/list_folder/continue": "continue",
             "files/list_folder/longpoll": "longpoll", "users/get_current_account": "account",
             "users/get_space_usage": "space", "files/get_metadata": "get_metadata",
             "files/list_folder/get_latest_cursor": "latest_cursor", "files/download": "download"}
    return " ".join("%s=%d" % (short.get(k, k), v) for k, v in sorted(stats.get("routes", {}).items()))


def add_run(record, **figures):
    """Appends each figure of one run to its list in `record` (a section's results, one list per
    figure, one value per run)."""
    for k, v in figures.items():
        record.setdefault(k, []).append(v)


def routes_split(stats):
    """(requests without longpolls, longpolls) of a /_control/stats answer."""
    longpoll = stats.get("routes", {}).get("files/list_folder/longpoll", 0)
    return stats["total"] - longpoll, longpoll


# ---- waiting and sampling ---------------------------------------------------------------------

def wait_for(predicate, timeout, step=0.005):
    """Polls until predicate() is true; returns the time it became true (monotonic) or None."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return time.monotonic()
        if time.monotonic() > deadline:
            return None
        time.sleep(step)


def settle_cpu(m, quiet=0.4, timeout=120):
    """The daemon's CPU seconds once it has stopped using CPU for `quiet` seconds (the store
    writes on its own queue, after the tree shows a change)."""
    last = m.cpu_seconds()
    changed = time.monotonic()
    deadline = changed + timeout
    while time.monotonic() - changed < quiet and time.monotonic() < deadline:
        time.sleep(0.05)
        c = m.cpu_seconds()
        if c != last:
            last, changed = c, time.monotonic()
    return last


def drop_page_cache(path):
    """Evicts `path` from the kernel's page cache (a FUSE file: the mount's own cache stays)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


# ---- the release binary -------------------------------------------------------------------------

def build_release(scratch_path=None, name="bench"):
    """`swift build -c release --product dropboxfs` (in `scratch_path` if given), waiting while
    another SwiftPM holds the build folder; exits with the build's last output if it fails."""
    cmd = ["swift", "build", "-c", "release", "--product", "dropboxfs"]
    if scratch_path:
        cmd += ["--scratch-path", str(scratch_path)]
    for _ in range(5):
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode == 0:
            return
        if "Another instance of SwiftPM" in r.stderr + r.stdout or "modified during the build" in r.stderr + r.stdout:
            time.sleep(10)
            continue
        sys.exit("%s: release build failed:\n%s%s" % (name, r.stdout[-3000:], r.stderr[-3000:]))
    sys.exit("%s: release build: SwiftPM stayed busy" % name)
