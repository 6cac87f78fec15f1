"""Running under systemd: the sd_notify protocol (READY=1 once the mount is
visible, STOPPING=1 at unmount, one datagram each to $NOTIFY_SOCKET, a path or an abstract name),
checked against a socket of the test's own; the daemon's working directory (/) and HOME from the
user database; the user units as scripts/install writes them, checked with systemd-analyze."""

import os
import shutil
import socket
import signal
import subprocess
import tempfile
import time

import pytest

from helpers import ROOT, env_for, is_mounted, run, unmount, wait_until


@pytest.fixture
def fake(fake_factory):
    fake = fake_factory()
    fake.add_file("/hello.txt", b"hello\n")
    fake.add_file("/folder/inside.txt", b"inside\n")
    return fake


class NotifySocket:
    """A datagram socket standing in for systemd's: records each datagram with whether the mount
    was visible when it arrived."""

    def __init__(self, address, mountpoint):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(address)
        self.sock.settimeout(0.1)
        self.mountpoint = mountpoint
        self.messages = []

    def poll(self):
        try:
            data = self.sock.recv(4096)
        except socket.timeout:
            return None
        message = (data.decode(), is_mounted(self.mountpoint))
        self.messages.append(message)
        return message

    def wait_for(self, key, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for text, mounted in self.messages:
                if key in text.splitlines():
                    return text, mounted
            self.poll()
        raise AssertionError(f"no {key} datagram within {timeout} s: {self.messages}")

    def close(self):
        self.sock.close()


def start_daemon(binary, fake, mnt, tmp_path, notify_socket, cwd=None, extra=None):
    env = env_for(fake, extra={"NOTIFY_SOCKET": notify_socket, "XDG_CACHE_HOME": str(tmp_path / "cache"),
                               **(extra or {})})
    log = open(tmp_path / "daemon.log", "wb")
    p = subprocess.Popen([binary, "mount", str(mnt), "--foreground"], env=env, stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, cwd=cwd)
    return p, log


def stop(p, mnt):
    if is_mounted(mnt):
        unmount(mnt)
    try:
        return p.wait(timeout=15)
    finally:
        if p.poll() is None:
            p.kill()
            run("fusermount3", "-uz", mnt)


@pytest.mark.parametrize("kind", ["path", "abstract"])
def test_ready_and_stopping_reach_the_notify_socket(binary, fake, tmp_path, kind):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if kind == "path":
        address = str(tmp_path / "notify.sock")
        variable = address
    else:
        name = f"dropboxfs-test-{os.getpid()}-{time.monotonic_ns()}"
        address = "\0" + name
        variable = "@" + name
    notify = NotifySocket(address, mnt)
    p, log = start_daemon(binary, fake, mnt, tmp_path, variable)
    try:
        text, mounted = notify.wait_for("READY=1")
        assert mounted, "READY=1 came before the mount was visible"
        lines = text.splitlines()
        assert f"MAINPID={p.pid}" in lines and any(line.startswith("STATUS=mounted on ") for line in lines), text
        assert os.listdir(mnt) == ["folder", "hello.txt"]
        # The variable is the daemon's alone: the mount guard it started does not inherit it.
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == p.pid:
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
                if len(argv) > 1 and argv[1] == b"__guard-mount":
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        assert b"NOTIFY_SOCKET" not in f.read()
            except OSError:
                continue
        assert unmount(mnt).returncode == 0
        text, _ = notify.wait_for("STOPPING=1")
        assert p.wait(timeout=15) == 0
        ready = [m for m, _ in notify.messages if "READY=1" in m.splitlines()]
        assert len(ready) == 1, notify.messages
    finally:
        stop(p, mnt)
        log.close()
        notify.close()


def test_a_refused_init_never_says_ready(binary, fake, tmp_path):
    """READY=1 waits for the kernel's INIT to be answered: when libfuse refuses it (the test-only
    hook of docs/TESTING.md "Test-only hooks"), systemd gets no READY=1 and sees the daemon fail
    (exit code 1, which the units restart after), not a started service with nothing mounted."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    notify = NotifySocket(str(tmp_path / "notify.sock"), mnt)
    p, log = start_daemon(binary, fake, mnt, tmp_path, str(tmp_path / "notify.sock"),
                          extra={"DROPBOXFS_TEST_REFUSE_INIT": "1"})
    try:
        code = p.wait(timeout=60)
        while notify.poll() is not None:
            pass
        text = (tmp_path / "daemon.log").read_text()
        assert code == 1, (code, text)
        assert not [m for m, _ in notify.messages if "READY=1" in m.splitlines()], notify.messages
        assert not is_mounted(mnt)
    finally:
        stop(p, mnt)
        log.close()
        notify.close()


def test_a_bad_notify_socket_does_not_stop_the_mount(binary, fake, tmp_path):
    """A NOTIFY_SOCKET nobody listens on (or that is no address at all) costs one warning."""
    for variable in (str(tmp_path / "nobody-listens.sock"), "not-an-address"):
        mnt = tmp_path / f"mnt{len(variable)}"
        mnt.mkdir()
        p, log = start_daemon(binary, fake, mnt, tmp_path, variable)
        try:
            wait_until(lambda: is_mounted(mnt), timeout=20, message="the mount")
            assert os.listdir(mnt) == ["folder", "hello.txt"]
        finally:
            assert stop(p, mnt) == 0
            log.close()
        text = (tmp_path / "daemon.log").read_text()
        assert "[error]" not in text and "notify" in text, text


def test_the_daemon_works_from_the_root_folder(binary, fake, tmp_path):
    """Started in some folder with a relative mount point and cache folder, the daemon resolves them,
    then moves to / so it never keeps that folder busy (it can be unmounted or removed)."""
    work = tmp_path / "work"
    (work / "mnt").mkdir(parents=True)
    mnt = work / "mnt"
    notify = NotifySocket(str(tmp_path / "n.sock"), mnt)
    env = env_for(fake, extra={"NOTIFY_SOCKET": str(tmp_path / "n.sock")})
    log = open(tmp_path / "daemon.log", "wb")
    p = subprocess.Popen([binary, "mount", "mnt", "--foreground", "--cache-dir", "cache"], env=env, stdout=log,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=work)
    try:
        notify.wait_for("READY=1")
        assert os.readlink(f"/proc/{p.pid}/cwd") == "/"
        assert os.listdir(mnt) == ["folder", "hello.txt"]
        assert run("cat", mnt / "hello.txt").stdout == b"hello\n"
        assert (work / "cache" / "content").is_dir(), "the relative --cache-dir was not resolved where it was given"
    finally:
        assert stop(p, mnt) == 0
        log.close()
        notify.close()


def test_home_comes_from_the_user_database_when_unset(binary, fake, tmp_path):
    """Without HOME (as a service manager may start it), the sign-in is looked for under the home
    folder the user database gives (nobody's: /nonexistent), not under / or root's."""
    shared = tempfile.mkdtemp(prefix="dropboxfs-home-", dir="/tmp")
    try:
        os.chmod(shared, 0o755)
        copy = os.path.join(shared, "dropboxfs")
        shutil.copy(binary, copy)
        os.chmod(copy, 0o755)
        home = run("getent", "passwd", "65534").stdout.decode().split(":")[5]
        env = {k: v for k, v in env_for(fake, token=None).items()
               if k not in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")}
        r = run("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", copy, "auth", "--sign-out",
                env=env, cwd="/")
        assert r.returncode == 0, r
        assert f"{home}/.config/dropboxfs/credentials.json" in r.stdout.decode(), r.stdout
    finally:
        shutil.rmtree(shared, ignore_errors=True)


@pytest.fixture(scope="module")
def installed_units(binary, tmp_path_factory):
    prefix = tmp_path_factory.mktemp("prefix")
    # A PREFIX other than /usr or /usr/local puts the user units where systemd looks for the
    # installing user's: XDG_DATA_HOME/systemd/user, here inside the prefix.
    r = run(ROOT / "scripts" / "install", timeout=120,
            env=dict(os.environ, PREFIX=str(prefix), DROPBOXFS_BIN=binary, XDG_DATA_HOME=str(prefix / "share")))
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    return prefix


def test_user_units_verify(installed_units, tmp_path):
    """The units scripts/install writes (ExecStart at PREFIX/bin/dropboxfs) pass
    `systemd-analyze --user verify` without a single warning, man page included. (Tests/Package
    does the same for the packaged units.)"""
    if shutil.which("systemd-analyze") is None:
        pytest.fail("systemd-analyze (package systemd) is needed to verify the units")
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), MANPATH=str(installed_units / "share/man"))
    units = installed_units / "share/systemd/user"
    service = (units / "dropboxfs.service").read_text()
    template = (units / "dropboxfs@.service").read_text()
    assert f"ExecStart={installed_units}/bin/dropboxfs mount --foreground $DROPBOXFS_OPTIONS\n" in service
    assert f"ExecStart={installed_units}/bin/dropboxfs mount --foreground --profile %i $DROPBOXFS_OPTIONS\n" in template
    for text in (service, template):
        for key in ("Type=notify", "Restart=on-failure", "EnvironmentFile=-%E/dropboxfs/", "WantedBy="):
            assert key in text
        for key in ("network-online.target", "ExecStop="):
            assert key not in text, key
    for unit in ("dropboxfs.service", "dropboxfs@work.service"):
        r = run("systemd-analyze", "--user", "verify", unit, env=env, cwd=units)
        assert r.returncode == 0 and r.stdout == b"" and r.stderr == b"", (unit, r.stdout, r.stderr)


def unit_command(unit_text, home, instance=None):
    """ExecStart of a unit as systemd runs it: the specifiers filled in (%h, %i, %E the user's
    config folder), and $DROPBOXFS_OPTIONS split into words from the unit's EnvironmentFile when
    that file exists (a leading '-' makes a missing one fine), dropped when unset."""
    config = str(home / ".config")

    def fill(value):
        value = value.replace("%h", str(home)).replace("%E", config)
        return value.replace("%i", instance) if instance is not None else value

    fields = {}
    for line in unit_text.splitlines():
        key, _, value = line.partition("=")
        if key in ("ExecStart", "EnvironmentFile", "ExecStop"):
            fields[key] = fill(value)
    assert "ExecStop" not in fields, "systemd's SIGTERM stops the daemon"
    options = {}
    env_file = fields["EnvironmentFile"]
    assert env_file.startswith("-"), "a missing options file is fine"
    if os.path.exists(env_file[1:]):
        for line in open(env_file[1:]):
            key, _, value = line.strip().partition("=")
            if key and not key.startswith("#"):
                options[key] = value
    words = []
    for word in fields["ExecStart"].split():
        if word.startswith("$"):
            words += options.get(word[1:], "").split()
        else:
            words.append(word)
    return words, env_file[1:]


@pytest.mark.parametrize("unit,instance,folder", [("dropboxfs.service", None, "dropbox"),
                                                   ("dropboxfs@.service", "work", "dropbox-work")])
def test_units_start_and_stop_as_systemd_runs_them(installed_units, fake, tmp_path, unit, instance, folder):
    """What systemd does with a unit, done by hand: run ExecStart in a clean environment with HOME
    and NOTIFY_SOCKET (no systemd runs here), wait for READY=1, check ~/dropbox(-NAME) is mounted,
    stop it as systemd does (SIGTERM: the unit has no ExecStop) while a shell is still inside the
    folder, and see STOPPING=1, a clean exit and no mount left. Then the same with options from the
    unit's options file (another mount point), without touching the unit. A failure that a restart
    cannot fix (no credentials: exit 4) is one the unit does not restart."""
    home = tmp_path / "home"
    home.mkdir()
    text = (installed_units / "share/systemd/user" / unit).read_text()
    env = env_for(fake, extra={"HOME": str(home), "NOTIFY_SOCKET": str(tmp_path / "notify.sock")})
    for key in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        env.pop(key, None)
    for attempt, mnt in enumerate((home / folder, home / "elsewhere")):
        command, options_file = unit_command(text, home, instance)
        if attempt == 0:
            assert not os.path.exists(options_file)
        notify = NotifySocket(str(tmp_path / f"notify{attempt}.sock"), mnt)
        env["NOTIFY_SOCKET"] = str(tmp_path / f"notify{attempt}.sock")
        log = open(tmp_path / f"unit{attempt}.log", "wb")
        p = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, cwd="/")
        inside = None
        try:
            text_ready, mounted = notify.wait_for("READY=1")
            assert mounted and f"STATUS=mounted on {mnt}" in text_ready.splitlines(), text_ready
            assert os.listdir(mnt) == ["folder", "hello.txt"]
            # A shell left in the folder: fusermount3 -u would fail with EBUSY.
            inside = subprocess.Popen(["sleep", "60"], cwd=mnt / "folder")
            p.send_signal(signal.SIGTERM)
            notify.wait_for("STOPPING=1")
            assert p.wait(timeout=15) == 0
            wait_until(lambda: not is_mounted(mnt), timeout=5, message="the mount gone")
        finally:
            if inside is not None:
                inside.kill()
                inside.wait()
            stop(p, mnt)
            log.close()
            notify.close()
        # Options for the next start, in the file the unit reads.
        os.makedirs(os.path.dirname(options_file), exist_ok=True)
        (home / "elsewhere").mkdir(exist_ok=True)
        with open(options_file, "w") as f:
            f.write(f"# mount elsewhere\nDROPBOXFS_OPTIONS={home / 'elsewhere'} --attr-timeout 10m\n")
    command, _ = unit_command(text, home, instance)
    prevented = next(line for line in text.splitlines() if line.startswith("RestartPreventExitStatus="))
    bare = {k: v for k, v in env_for(fake, token=None, extra={"HOME": str(home)}).items() if not k.startswith("XDG_")}
    r = run(*command, env=bare, timeout=30)
    assert r.returncode == 4 and "4" in prevented.split("=", 1)[1].split(), (r, prevented)
