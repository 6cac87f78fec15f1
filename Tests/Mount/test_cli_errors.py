"""Each command-line mistake gets its one-line message and its exit code (dropboxfs --help):
0 ok, 1 other, 2 usage, 3 mount point problem, 4 credentials, 5 unreachable, 6 no FUSE."""

import os
import re
import shutil
import subprocess

import pytest

from helpers import ROOT, closed_port, env_for, is_mounted, run



# A log line: its ISO-8601 time, then "dropboxfs[LEVEL]: ".
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d dropboxfs\[[a-z]+\]: ")


def dropboxfs(binary, *args, env=None, timeout=30):
    r = run(binary, *args, env=env, timeout=timeout)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def assert_fails(result, code, *fragments):
    """The command failed with `code`; its last stderr line is the one-line message "dropboxfs: ..."
    (earlier lines may only be log lines, e.g. retries while the server is unreachable)."""
    rc, out, err = result
    assert rc == code, (rc, out, err)
    lines = err.strip().splitlines()
    assert lines, "no error message"
    message = lines[-1]
    assert message.startswith("dropboxfs: "), err
    assert all(LOG_LINE.match(line) for line in lines[:-1]), err
    for fragment in fragments:
        assert fragment in message, (fragment, err)


@pytest.fixture
def fake(fake_factory):
    fake = fake_factory()
    fake.add_file("/hello.txt", b"hello\n")
    return fake


@pytest.fixture
def empty_dir(tmp_path):
    d = tmp_path / "mnt"
    d.mkdir()
    return d


def test_mount_point_missing(binary, fake, tmp_path):
    missing = tmp_path / "does" / "not" / "exist"
    assert_fails(dropboxfs(binary, "mount", missing, "--foreground", env=env_for(fake)), 3,
                 str(missing), "does not exist")
    assert not missing.exists()


def test_mount_point_is_a_file(binary, fake, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    assert_fails(dropboxfs(binary, "mount", f, "--foreground", env=env_for(fake)), 3, "not a directory")


def test_mount_point_not_empty(binary, fake, mount_factory, tmp_path):
    d = tmp_path / "full"
    d.mkdir()
    (d / "something").write_text("mine")
    assert_fails(dropboxfs(binary, "mount", d, "--foreground", env=env_for(fake)), 3,
                 "not empty", "--allow-non-empty")
    assert not is_mounted(d)
    # A hidden file counts too.
    h = tmp_path / "hidden"
    h.mkdir()
    (h / ".dotfile").write_text("x")
    assert_fails(dropboxfs(binary, "mount", h, "--foreground", env=env_for(fake)), 3, "not empty")
    # --allow-non-empty mounts over it; the old content is hidden while mounted and back afterwards.
    m = mount_factory(fake, "--allow-non-empty", mountpoint=d)
    assert os.listdir(m.path) == ["hello.txt"]
    m.unmount()
    assert os.listdir(d) == ["something"]


def test_already_mounted(binary, fake, mount_factory):
    m = mount_factory(fake)
    assert_fails(dropboxfs(binary, "mount", m.path, "--foreground", env=env_for(fake)), 3,
                 "already a mount point")
    assert_fails(dropboxfs(binary, "mount", m.path, "--foreground", "--allow-non-empty", env=env_for(fake)), 3,
                 "already a mount point")
    # The first mount is untouched.
    assert os.listdir(m.path) == ["hello.txt"]
    assert m.process.poll() is None


def test_no_credentials(binary, fake, empty_dir):
    assert_fails(dropboxfs(binary, "mount", empty_dir, "--foreground", env=env_for(fake, token=None)), 4,
                 "DROPBOXFS_ACCESS_TOKEN")
    assert_fails(dropboxfs(binary, "mount", empty_dir, "--foreground", env=env_for(fake, token="   ")), 4,
                 "DROPBOXFS_ACCESS_TOKEN")
    assert not is_mounted(empty_dir)
    # No request was made without a token.
    assert fake.stats()["total"] == 0


def test_token_file(binary, fake, empty_dir, tmp_path, mount_factory):
    missing = tmp_path / "no-token-file"
    assert_fails(dropboxfs(binary, "mount", empty_dir, "--foreground", "--access-token-file", missing,
                           env=env_for(fake, token=None)), 4, str(missing))
    empty = tmp_path / "empty-token"
    empty.write_text("\n")
    assert_fails(dropboxfs(binary, "mount", empty_dir, "--foreground", "--access-token-file", empty,
                           env=env_for(fake, token=None)), 4, "empty")
    wrong = tmp_path / "wrong-token"
    wrong.write_text("not-the-token\n")
    assert_fails(dropboxfs(binary, "mount", empty_dir, "--foreground", "--access-token-file", wrong,
                           env=env_for(fake)), 4, "rejected")
    good = tmp_path / "token"
    good.write_text("test-token\n")
    m = mount_factory(fake, "--access-token-file", str(good), env_extra={"DROPBOXFS_ACCESS_TOKEN": "wrong"})
    assert os.listdir(m.path) == ["hello.txt"]


def test_token_rejected(binary, fake, empty_dir):
    result = dropboxfs(binary, "mount", empty_dir, "--foreground", env=env_for(fake, token="wrong-token"))
    assert_fails(result, 4, "rejected")
    assert "wrong-token" not in result[1] + result[2], "the token must never be printed"
    assert not is_mounted(empty_dir)


def test_server_unreachable(binary, empty_dir):
    url = f"http://127.0.0.1:{closed_port()}"
    assert_fails(dropboxfs(binary, "mount", empty_dir, "--foreground", env=env_for(url), timeout=60), 5, url)
    assert not is_mounted(empty_dir)
    # The same through the flags.
    env = env_for("http://127.0.0.1:1")
    assert_fails(dropboxfs(binary, "mount", empty_dir, "--foreground", "--api-url", url, "--content-url", url,
                           "--notify-url", url, env=env, timeout=60), 5, url)


def test_server_not_speaking_http(binary, empty_dir):
    """A port that accepts and closes connections: unreachable too, not a hang."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.close()
            except OSError:
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        rc, out, err = dropboxfs(binary, "mount", empty_dir, "--foreground", env=env_for(url), timeout=90)
        assert rc == 5, (rc, err)
    finally:
        stop.set()
        t.join()
        server.close()


@pytest.mark.parametrize("args,fragment", [
    (["--bogus"], "--bogus"),
    (["-x"], "-x"),
    (["--threads", "0"], "--threads"),
    (["--threads", "lots"], "--threads"),
    (["--spin-us", "-1"], "--spin-us"),
    (["--spin-us", "200000"], "--spin-us"),
    (["--lean-walk-after", "-1"], "--lean-walk-after must be a number from 0 to 1000000000"),
    (["--lean-walk-after", "some"], "--lean-walk-after"),
    (["--fill-parallel", "33"], "--fill-parallel must be a number from 1 to 32"),
    (["--attr-timeout", "-1"], "--attr-timeout"),
    (["--attr-timeout", "soon"], "--attr-timeout"),
    (["--dir-cache-time", "nan"], "--dir-cache-time"),
    (["--log-level", "loud"], "--log-level"),
    (["--thumbnail-sizes", "huge"], "--thumbnail-sizes"),
    (["--thumbnail-sizes", "normal,"], "--thumbnail-sizes"),
    (["-o", "thumbnail-sizes=huge"], "--thumbnail-sizes"),
    (["--log-file"], "--log-file"),
    (["--foreground=yes"], "--foreground"),
    (["second-mount-point"], "one mount point"),
], ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_bad_options(binary, fake, empty_dir, args, fragment):
    assert_fails(dropboxfs(binary, "mount", empty_dir, "--foreground", *args, env=env_for(fake)), 2, fragment)
    assert not is_mounted(empty_dir)
    assert fake.stats()["total"] == 0


def test_bad_command(binary):
    assert_fails(dropboxfs(binary, "frobnicate"), 2, "frobnicate")
    rc, out, err = dropboxfs(binary)
    assert rc == 2 and "Usage" in out + err


def mount_spec_options(binary):
    """Every option the mount command's parser accepts, from its declaration (Options.swift)."""
    import json
    declared = json.loads(dropboxfs(binary, "__generate", "options")[1])["commands"]["mount"]
    names = set()
    for option in declared:
        if option["long"]:
            names.add(option["name"])
        if option["short"]:
            names.add(option["short"])
    assert {"foreground", "o", "help"} <= names
    return sorted(names)


def test_help(binary):
    rc, out, err = dropboxfs(binary, "--help")
    assert rc == 0 and err == ""
    assert "dropboxfs mount" in out and "fusermount3 -u" in out
    for code in range(8):
        assert re.search(rf"\b{code} [a-zA-Z]", out), f"exit code {code} undocumented"
    rc2, out2, _ = dropboxfs(binary, "-h")
    assert rc2 == 0 and out2 == out


def test_mount_help_mentions_every_option(binary):
    rc, out, err = dropboxfs(binary, "mount", "--help")
    assert rc == 0 and err == ""
    assert dropboxfs(binary, "mount", "-h")[1] == out
    # The basic mount options, and every one the parser knows, are documented.
    required = ["--foreground", "-f", "-o", "--allow-other", "--allow-non-empty", "--access-token-file",
                "--api-url", "--content-url", "--notify-url", "--attr-timeout", "--dir-cache-time",
                "--threads", "--log-level", "--debug", "-d", "--log-file", "--help", "-h"]
    for name in mount_spec_options(binary):
        required.append(("-" if len(name) == 1 else "--") + name)
    for option in required:
        assert re.search(rf"(^|[\s,]){re.escape(option)}([\s,=]|$)", out, re.M), f"{option} is not in mount --help"
    assert "EROFS" in out or "Read-only" in out


def test_every_documented_option_is_accepted(binary, fake, tmp_path):
    """Each option named in `mount --help` parses (the run then stops at the missing mount point)."""
    _, out, _ = dropboxfs(binary, "mount", "--help")
    documented = sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+|-[a-z])\b", out)))
    # A value for every option the help shows with a placeholder (e.g. "--threads N").
    samples = {"SECONDS": "5", "N": "4", "LEVEL": "info", "OPTIONS": "allow_other", "URL": fake.url,
               "FILE": str(tmp_path / "file"), "DIR": str(tmp_path / "dir"), "SIZE": "1048576",
               "BYTES": "1048576", "MIB": "64", "KEY": "fakeappkey", "SPEC": "rpc=60,stall=20",
               "DURATION": "30s", "NAME": "work", "SIZES": "normal,large"}
    values = {}
    for option, placeholder in re.findall(r"(?<![\w-])(--[a-z][a-z-]+|-[a-z]) ([A-Z]+)\b", out):
        assert placeholder in samples, f"no sample value for {option} {placeholder}"
        values[option] = samples[placeholder]
    values["--access-token-file"] = "/dev/null"
    missing = tmp_path / "missing"
    for option in documented:
        if option in ("--help", "-h"):
            continue
        args = [option] + ([values[option]] if option in values else [])
        rc, out2, err = dropboxfs(binary, "mount", missing, "--foreground", *args, env=env_for(fake))
        assert rc == 3 and "does not exist" in err, (option, rc, err)


def test_no_fuse_device(binary, fake, empty_dir):
    """Exit code 6 when /dev/fuse is missing: run in a private mount namespace whose /dev is an empty
    tmpfs, so the machine's /dev is untouched."""
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed to hide /dev/fuse safely")
    script = 'mount -t tmpfs none /dev && exec "$0" mount "$1" --foreground'
    r = run("unshare", "--mount", "--propagation", "private", "sh", "-c", script, binary, empty_dir,
            env=env_for(fake), timeout=30)
    assert os.path.exists("/dev/fuse"), "the host's /dev/fuse must be untouched"
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 6, (r.returncode, err)
    message = err.strip().splitlines()[-1]
    assert message.startswith("dropboxfs: ") and "/dev/fuse" in message, err
    assert not is_mounted(empty_dir)


@pytest.mark.parametrize("variable,url", [
    ("DROPBOXFS_API_URL", "http://192.0.2.1"),
    ("DROPBOXFS_CONTENT_URL", "http://10.1.2.3:8080"),
    ("DROPBOXFS_NOTIFY_URL", "http://localhost:1"),
    ("DROPBOXFS_API_URL", "ftp://127.0.0.1"),
])
@pytest.mark.parametrize("command", [["mount", "--foreground"], ["status"], ["auth", "--sign-out"]])
def test_plain_http_to_another_machine_is_refused_before_any_request(binary, fake, empty_dir, variable, url, command):
    """A bearer token never travels in clear text: plain http is allowed to loopback addresses
    only, and the refusal names https (exit 2, nothing mounted, nothing sent to the fake)."""
    env = env_for(fake, extra={variable: url})
    fake.reset_stats()
    args = command[:1] + ([str(empty_dir)] if command[0] == "mount" else []) + command[1:]
    assert_fails(dropboxfs(binary, *args, env=env, timeout=15), 2, url, "https://")
    assert not is_mounted(str(empty_dir))
    assert fake.stats()["total"] == 0


def test_endpoints_that_are_not_dropbox_are_named_in_a_warning(binary, fake, empty_dir):
    rc, out, err = dropboxfs(binary, "status", env=env_for(fake))
    assert rc == 0, (out, err)
    warnings = [line for line in err.splitlines() if "not Dropbox's own" in line]
    assert len(warnings) == 1, err
    assert f'API "{fake.url}"' in warnings[0] and f'content "{fake.url}"' in warnings[0]


def test_auth_code_on_the_command_line_is_refused(binary, fake):
    """A code is bound to the PKCE verifier of the run that printed its address: one given as an
    argument could never be accepted (and `ps` would show it)."""
    result = dropboxfs(binary, "auth", "--app-key", "fakeappkey", "--code", "abc", env=env_for(fake, token=None))
    assert_fails(result, 2, "--code", "standard input")
    assert "abc" not in result[1] + result[2]


@pytest.mark.parametrize("spec", ["bogus=1", "rpc=0", "stall=-1", "low-speed=1000", "max-pause=601", "rpc", "answer=0",
                                  "stale=0", "stale=2d"])
def test_bad_timeouts_are_usage_errors(binary, fake, empty_dir, spec):
    """--timeouts is checked before anything is sent: exit 2 with a message naming it."""
    fake.reset_stats()
    assert_fails(dropboxfs(binary, "mount", empty_dir, "--foreground", "--timeouts", spec, env=env_for(fake)), 2,
                 "--timeouts")
    assert fake.stats()["total"] == 0


def test_mount_point_check_compares_paths_as_bytes(binary, fake, mount_factory, tmp_path):
    """Linux paths are bytes: a mount on ".../caf\u00e9" (composed) does not make ".../cafe\u0301"
    (decomposed, another folder) a mount point. Swift's String == compares canonical equivalents as
    equal, so the check used to refuse the second folder as "already a mount point"."""
    nfc, nfd = tmp_path / "caf\u00e9", tmp_path / "cafe\u0301"
    nfc.mkdir()
    nfd.mkdir()
    assert os.fsencode(str(nfc)) != os.fsencode(str(nfd))
    subprocess.run(["mount", "-t", "tmpfs", "none", str(nfc)], check=True)
    try:
        m = mount_factory(fake, mountpoint=nfd)
        assert os.listdir(m.path) == ["hello.txt"]
    finally:
        subprocess.run(["umount", str(nfc)], check=False)


def test_a_token_given_by_mistake_is_not_echoed(binary, fake, empty_dir):
    """No token in an error: a token pasted where the token file's name belongs, or a mistyped
    -o item carrying one, is not repeated in the one-line message (it would reach the journal
    from an fstab line or a unit)."""
    token = "sl.u.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCdEfGhIjKl"
    result = dropboxfs(binary, "mount", empty_dir, "--foreground", "--access-token-file", token, env=env_for(fake))
    assert_fails(result, 4, "access token file", "looks like a token")
    result2 = dropboxfs(binary, "mount", empty_dir, "--foreground", "-o", "access_token=" + token, env=env_for(fake))
    assert_fails(result2, 2, "unknown mount option", "access_token")
    for rc, out, err in (result, result2):
        assert token not in out + err
    assert fake.stats()["total"] == 0


def test_a_mount_point_that_is_not_utf8_is_named_as_such(binary, fake, tmp_path):
    """Linux paths are bytes: a Latin-1 folder name reaches dropboxfs as bytes that are not UTF-8.
    Until such paths are carried as bytes through the mount, the argument is refused with that
    reason, its bytes escaped, instead of "does not exist" for another (repaired) path."""
    folder = os.fsencode(tmp_path) + b"/caf\xe9"
    os.mkdir(folder)
    r = subprocess.run([str(binary), "mount", folder, "--foreground"], env=env_for(fake),
                       capture_output=True, timeout=30)
    assert b"\xe9" not in r.stderr, r.stderr
    result = (r.returncode, r.stdout.decode(), r.stderr.decode())
    assert_fails(result, 2, "caf\\xe9", "not valid UTF-8")
    assert "does not exist" not in result[2]
    assert os.listdir(folder) == []


def test_a_mistyped_command_suggests_the_right_one_and_never_mounts(binary, fake, tmp_path):
    """Two stray words were taken as the fstab helper's form: `dropboxfs mout ~/dropbox` asked to
    sign in to a profile named "mout", or with a token in the environment, mounted. Now only the
    helper's own shape (SOURCE MOUNTPOINT -o OPTIONS, an absolute mount point) is a helper call."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    state = tmp_path / "state"
    env = env_for(fake, extra={"XDG_STATE_HOME": str(state), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    for typed, near in (("mout", "mount"), ("moutn", "mount"), ("stauts", "status"), ("atuh", "auth"),
                        ("verison", "version"), ("Mount", "mount")):
        assert_fails(dropboxfs(binary, typed, str(mnt), env=env), 2, f"unknown command '{typed}'",
                     f"did you mean '{near}'?")
        assert not is_mounted(str(mnt))
    assert_fails(dropboxfs(binary, "xyzzy", str(mnt), env=env), 2, "unknown command 'xyzzy' (see dropboxfs --help)")
    assert_fails(dropboxfs(binary, "m", env=env), 2, "unknown command 'm' (see")
    # The helper's shape with a relative mount point is not a helper call either.
    assert_fails(dropboxfs(binary, "mout", "mnt", "-o", "ro", env=env, ), 2, "did you mean 'mount'?")
    assert not state.exists() or not any(state.rglob("*.log")), "no log file for a typo"
    assert not is_mounted(str(mnt))


def test_completion_prints_each_shells_script(binary):
    for shell, marker in (("bash", "complete -F"), ("zsh", "#compdef dropboxfs"), ("fish", "complete -c dropboxfs")):
        rc, out, err = dropboxfs(binary, "completion", shell)
        assert rc == 0, err
        assert marker in out, (shell, out[:200])
        assert "completion" in out, "the completion command completes too"
    assert_fails(dropboxfs(binary, "completion", "tcsh"), 2, "completion takes one of: bash, zsh, fish")
    assert_fails(dropboxfs(binary, "completion"), 2, "completion takes one of")
    rc, out, _ = dropboxfs(binary, "completion", "--help")
    assert rc == 0 and "dropboxfs completion bash|zsh|fish" in out
