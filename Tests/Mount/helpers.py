"""Shared helpers for the mount tests: running tools with timeouts, polling, and the expected view of
the fake's tree (the rules of docs/SEMANTICS.md "Names").

Expected-listing rule: every entry of `/_control/tree` appears under its own `name` (exact UTF-8
bytes); folders as `d`, files as `f` with their exact size, symlinks (entries with a
symlink_target) as `l` with size = byte length of the target. Names the kernel cannot carry are
hidden together with everything below them: empty, ".", "..", containing "/" or NUL, longer than
255 UTF-8 bytes, or not valid Unicode (a lone surrogate cannot be encoded as UTF-8). Two entries of
one folder with the same `path_lower` are one Dropbox entry: the later one in listing order wins.
"""

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAME_MAX = 255
TOKEN = "test-token"


def env_for(fake, token=TOKEN, extra=None):
    """The daemon's environment: every endpoint pointing at `fake` (a FakeDropbox or a URL)."""
    url = fake if isinstance(fake, str) else fake.url
    env = dict(os.environ)
    env.update(
        DROPBOXFS_API_URL=url,
        DROPBOXFS_CONTENT_URL=url,
        DROPBOXFS_NOTIFY_URL=url,
        DROPBOXFS_OAUTH_URL=url,
    )
    if token is None:
        env.pop("DROPBOXFS_ACCESS_TOKEN", None)
    else:
        env["DROPBOXFS_ACCESS_TOKEN"] = token
    env.update(extra or {})
    return env


def run(*cmd, timeout=60, check=False, env=None, input=None, cwd=None):
    """Run a command with a timeout; returns CompletedProcess with bytes stdout/stderr."""
    return subprocess.run(
        [str(c) for c in cmd], capture_output=True, timeout=timeout, check=check, env=env,
        input=input, cwd=cwd)


def unmount(path, timeout=15, busy_for=5.0):
    """`fusermount3 -u path`, tried again while the kernel answers "Device or resource busy" (for
    up to `busy_for` seconds); returns the last CompletedProcess. Another test's `dropboxfs status`
    without a path reads the status attribute of every dropboxfs mount, this test's too, and the
    kernel refuses the unmount while such a getxattr is in flight. The daemon takes no part in
    that answer, so trying again tests the same thing."""
    deadline = time.monotonic() + busy_for
    while True:
        r = run("fusermount3", "-u", path, timeout=timeout)
        if r.returncode == 0 or b"busy" not in r.stderr or time.monotonic() > deadline:
            return r
        time.sleep(0.05)


def sh(script, timeout=60, env=None):
    return subprocess.run(["sh", "-c", script], capture_output=True, timeout=timeout, env=env)


def c_locale(extra=None):
    env = dict(os.environ, LC_ALL="C", LANG="C")
    env.update(extra or {})
    return env


def wait_until(predicate, timeout=10.0, interval=0.02, message="condition"):
    """Polls predicate() until it is truthy; returns its value or raises AssertionError."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message}")
        time.sleep(interval)


def closed_port():
    """A TCP port on 127.0.0.1 that nothing listens on (bound then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def kernel_name(name):
    """The name's UTF-8 bytes if the kernel can carry it, else None (entry hidden)."""
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError:
        return None
    if raw in (b"", b".", b"..") or b"/" in raw or b"\0" in raw or len(raw) > NAME_MAX:
        return None
    return raw


class Entry:
    __slots__ = ("kind", "size", "rel", "tree")

    def __init__(self, kind, size, rel, tree):
        self.kind, self.size, self.rel, self.tree = kind, size, rel, tree

    def __repr__(self):
        return f"Entry({self.kind} {self.size} {self.rel!r})"


def expected_entries(tree):
    """The entries the mount must show, as {relative path bytes: Entry}; the root is b""."""
    folders = {"": b""}  # path_display of a folder -> its relative path bytes, or None if hidden
    result = {b"": Entry("d", None, b"", None)}
    by_key = {}  # (parent rel, path_lower) -> rel of the entry currently shown for that key
    for e in tree:
        pd, name = e["path_display"], e["name"]
        assert pd.endswith("/" + name), (pd, name)
        parent_pd = pd[: len(pd) - len(name) - 1]
        parent_rel = folders.get(parent_pd)
        raw = kernel_name(name)
        rel = None
        if parent_rel is not None and raw is not None:
            rel = raw if parent_rel == b"" else parent_rel + b"/" + raw
        if e["tag"] == "folder":
            folders[pd] = rel
        if rel is None:
            continue
        key = (parent_rel, e["path_lower"])
        previous = by_key.get(key)
        if previous is not None:
            # The same Dropbox entry twice: the later one replaces the earlier one (and its subtree).
            for r in [r for r in result if r == previous or r.startswith(previous + b"/")]:
                del result[r]
        by_key[key] = rel
        if e["tag"] == "folder":
            result[rel] = Entry("d", None, rel, e)
        elif e.get("symlink_target") is not None:
            result[rel] = Entry("l", len(e["symlink_target"].encode("utf-8")), rel, e)
        else:
            result[rel] = Entry("f", e["size"], rel, e)
    return result


DIR_SIZE = re.compile(rb"^d \d+ ")


def normalise_find_lines(lines):
    """Folders' sizes are not part of the contract: 'd 4096 x' -> 'd * x'."""
    return sorted(DIR_SIZE.sub(b"d * ", line) for line in lines)


def expected_find_text(entries):
    """What `find MNT -printf '%y %s %P\\n'` prints, before sorting (folder sizes as 0)."""
    out = []
    for rel, e in entries.items():
        size = 0 if e.kind == "d" else e.size
        out.append(b"%s %d %s\n" % (e.kind.encode(), size, rel))
    return b"".join(out)


def expected_find_lines(entries):
    """Expected lines of `find ... | sort`, split and sorted the way `sort` sees them (names may
    contain newlines, so a line is not always a whole entry)."""
    return normalise_find_lines(expected_find_text(entries).split(b"\n")[:-1])


def find_records(path, timeout=120):
    """`find PATH -printf '%y %s %P\\0'` parsed to {rel: (kind, size)} (exact, newline-safe)."""
    r = run("find", path, "-printf", r"%y %s %P\0", timeout=timeout)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    out = {}
    for record in r.stdout.split(b"\0")[:-1]:
        kind, size, rel = record.split(b" ", 2)
        assert rel not in out, f"{rel!r} listed twice"
        out[rel] = (kind.decode(), int(size))
    return out


def expected_records(entries):
    return {rel: (e.kind, e.size) for rel, e in entries.items()}


def compare_records(got, entries):
    """Assert find records equal the expected entries; folder sizes are ignored."""
    want = expected_records(entries)
    got_n = {rel: (k, None if k == "d" else s) for rel, (k, s) in got.items()}
    missing = sorted(set(want) - set(got_n))
    extra = sorted(set(got_n) - set(want))
    wrong = sorted(rel for rel in set(want) & set(got_n) if want[rel] != got_n[rel])
    assert not (missing or extra or wrong), (
        f"{len(missing)} missing (first: {missing[:10]}), {len(extra)} unexpected (first: {extra[:10]}), "
        f"{len(wrong)} differ (first: {[(r, want[r], got_n[r]) for r in wrong[:10]]})")


def c_unquote(text):
    """Decode a name printed by `ls --quoting-style=c` under LC_ALL=C into bytes."""
    assert text.startswith('"') and text.endswith('"'), text
    body = text[1:-1]
    out = bytearray()
    simple = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("latin-1")
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in "01234567":
            j = i + 1
            while j < len(body) and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(int(body[i + 1:j], 8))
            i = j
        elif nxt in simple:
            out.append(simple[nxt])
            i += 2
        else:
            out += nxt.encode("latin-1")
            i += 2
    return bytes(out)


LS_LINE = re.compile(r'^(\S{10})\S?\s+(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(-?\d+)\s+("(?:[^"\\]|\\.)*")(?: -> ("(?:[^"\\]|\\.)*"))?$')


def ls_la(path, timeout=60):
    """`ls -la` of a folder, parsed: {name bytes: (mode string, links, owner, group, size, mtime,
    symlink target bytes or None)}."""
    r = run("ls", "-la", "--quoting-style=c", "--time-style=+%s", path, timeout=timeout, env=c_locale())
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    lines = r.stdout.decode("latin-1").splitlines()
    assert lines[0].startswith("total "), lines[0]
    out = {}
    for line in lines[1:]:
        m = LS_LINE.match(line)
        assert m, f"cannot parse ls line {line!r}"
        mode, links, owner, group, size, mtime, name, target = m.groups()
        out[c_unquote(name)] = (mode, int(links), owner, group, int(size), int(mtime),
                                c_unquote(target) if target else None)
    return out


def is_mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if unescape_mount_field(fields[4]) == path:
                return True
    return False


def mount_info(path):
    """(fstype, mount options, super options) of the mount at path, or None."""
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if unescape_mount_field(fields[4]) == path:
                sep = fields.index("-")
                return fields[sep + 1], fields[5].split(","), fields[sep + 3].split(",")
    return None


def unescape_mount_field(field):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def pids_of_daemon(mountpoint):
    """PIDs of dropboxfs processes whose command line names this mount point."""
    target = os.fsencode(str(mountpoint))
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) > 2 and argv[1] == b"mount" and target in argv:
            pids.append(int(d))
    return pids


def process_gone(pid):
    """True when pid no longer runs (absent or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


# ---- freshness and prefetch tests -----------------------------------------------------------------

LIST_ROUTES = ("files/list_folder", "files/list_folder/continue")


def poll_assert(check, timeout=5.0, interval=0.05, what="the expected state"):
    """Calls check() (which asserts) until it passes; returns its value and the seconds it took.
    After `timeout` seconds the last AssertionError is raised, prefixed with what was awaited. A
    check that returns False instead of asserting has not passed either (a bare predicate passed
    here by mistake must not pass at once)."""
    start = time.monotonic()
    deadline = start + timeout
    while True:
        try:
            value = check()
            assert value is not False, "the check returned False"
            return value, time.monotonic() - start
        except AssertionError as e:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not seen within {timeout} s: {e}") from None
        time.sleep(interval)


def sync_status(mountpoint):
    """The root's user.dropboxfs.status attribute as a dict ('phase=watching pages=3 ...')."""
    raw = os.getxattr(str(mountpoint), "user.dropboxfs.status").decode()
    return dict(part.split("=", 1) for part in raw.split())


def list_calls(fake):
    """list_folder + list_folder/continue requests counted by the fake so far."""
    routes = fake.stats()["routes"]
    return sum(routes.get(r, 0) for r in LIST_ROUTES)


def wait_for_fill(mountpoint, fake, timeout=60):
    """Waits until the background fill is over: the status attribute says `watching` (or
    `complete`, without a watcher), or the fake's list requests stopped changing for a second (a
    mount without the background listing, or a product without status), or for five seconds while
    the status still says `filling` (a fill that a hostile server stalls; on a loaded machine one
    page may take over a second). Over means the fake's count of list requests is also the same
    at two looks in a row: the fake counts a request after answering it, so the count of the fill's
    last page may land a moment after the status says the fill is over, and a test that takes or
    resets the counts next must not see it. Returns the last status dict ({} when there is none)."""
    last = [None, 0]
    over = [None]

    def done():
        try:
            status = sync_status(mountpoint)
        except OSError:
            status = {}
        now = list_calls(fake)
        if status.get("phase") in ("watching", "complete"):
            if over[0] == now:
                return status
            over[0] = now
            return None
        if now == last[0] and now > 0:
            last[1] += 1
        else:
            last[0], last[1] = now, 0
        needed = 25 if status.get("phase") == "filling" else 5
        return (status or {"phase": None}) if last[1] >= needed else None

    return wait_until(done, timeout=timeout, interval=0.2, message="the background fill to finish")


def stat_paths(paths, timeout=30):
    """`stat` of each path (one process): {path: (type letter, size, mtime)} for those that exist,
    None for those reported missing (ENOENT, or ENOTDIR below a file); other errors fail."""
    r = run("stat", "-c", "%n\t%F\t%s\t%Y", "--", *paths, timeout=timeout, env=c_locale())
    out = {}
    for line in r.stdout.decode("utf-8", "surrogateescape").splitlines():
        name, kind, size, mtime = line.split("\t")
        letter = {"regular file": "f", "regular empty file": "f", "directory": "d", "symbolic link": "l"}[kind]
        out[name] = (letter, int(size), int(mtime))
    for path in paths:
        if str(path) not in out:
            out[str(path)] = None
    err = r.stderr.decode(errors="replace")
    for line in err.splitlines():
        assert "No such file or directory" in line or "Not a directory" in line, f"stat failed: {line}"
    return out


class SwitchableProxy:
    """A TCP forwarder on 127.0.0.1 to a server: `down()` stops listening and cuts every open
    connection (new connections are refused, as when the network is gone); `up()` listens on the
    same port again. Point a mount at `url` to take its Dropbox away and give it back."""

    def __init__(self, target_url):
        import threading
        host, port = target_url.rsplit("//", 1)[1].split(":")
        self.target = (host, int(port))
        self.lock = threading.Lock()
        self.connections = set()
        self.listener = None
        self.port = 0
        self.up()
        self.url = f"http://127.0.0.1:{self.port}"

    def up(self):
        import threading
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self):
        listener, self.listener = self.listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        with self.lock:
            connections, self.connections = self.connections, set()
        for c in connections:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def _accept(self, listener):
        import threading
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.connections.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


# ---- readers that block on stalled downloads (test_stops, test_abort) -------------------------------

BLOCKED_READER = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
print("open", flush=True)
try:
    while os.read(fd, 1 << 20):
        pass
    print("read", flush=True)
except OSError as e:
    print("error", e.errno, flush=True)
    sys.exit(4)
"""


def start_blocked_reader(path):
    """A process reading `path` to its end: it prints "read" and exits 0, or prints "error ERRNO"
    and exits 4. Returns once the file is open."""
    p = subprocess.Popen([sys.executable, "-c", BLOCKED_READER, str(path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout.readline() == b"open\n", p.stderr.read()
    return p


def faults_fired(fake, route):
    """How many times the fake's fault rules on `route` fired."""
    return sum(r.get("fired", 0) for r in fake.faults() if r["route"] == route)
