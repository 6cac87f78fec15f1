"""What `dropboxfs status` says of each mount: one readable line (the raw status line only with
-v and in --json), the daemon's version and pid, where that mount's log is (the file of
--log-file, the file its standard error went to, a background daemon's log file), and until when
Dropbox rate-limits it; and `status --report`, a text for bug reports with versions, system,
each mount's status, options, command line and last log lines, and never a token, secret or
e-mail address."""

import calendar
import json
import os
import re
import subprocess
import time

from helpers import env_for, is_mounted, run, unmount, wait_for_fill, wait_until

SECRET = "sl.SECRET-token-0123456789abcdefghij"
REFRESH = "refresh-SECRET-9876543210zyx"


def version(binary):
    return run(binary, "--version").stdout.decode().split()[1]


def status_json(binary, fake, *paths, env=None):
    r = run(binary, "status", "--json", *paths, env=env or env_for(fake), timeout=30)
    assert r.returncode == 0, r
    return json.loads(r.stdout)["mounts"]


def mount_lines(out, path):
    """The mount's line and its indented lines after it."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"mount:       {path}"))
    block = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("             "):
            break
        block.append(line.strip())
    return block


def test_one_readable_line_per_mount_with_its_version_and_log(binary, fake_factory, mount_factory, background_mounts,
                                                               tmp_path):
    fake = fake_factory("--synthetic", "200")
    log = tmp_path / "with log file.log"
    logged = mount_factory(fake, "--log-file", str(log))
    plain = mount_factory(fake)
    state = tmp_path / "state"
    background = tmp_path / "bg"
    background.mkdir()
    env = env_for(fake, extra={"XDG_STATE_HOME": str(state), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    r = run(binary, "mount", str(background), env=env, timeout=60)
    assert r.returncode == 0, r
    background_mounts.append(background)
    for m in (logged.path, plain.path, str(background)):
        wait_for_fill(m, fake)
    paths = [logged.path, plain.path, str(background)]
    wanted = version(binary)

    r = run(binary, "status", *paths, env=env, timeout=30)
    out = r.stdout.decode()
    assert r.returncode == 0, r
    assert "phase=" not in out, "the raw line only with -v"
    # --log-file; the file the foreground daemon's standard error went to; the background log.
    where = {logged.path: str(log), plain.path: str(plain.log_path),
             str(background): str(state / "dropboxfs" / "dropboxfs.log")}
    for path in paths:
        block = mount_lines(out, path)
        assert re.match(rf"^mount:       {re.escape(path)}: complete: [\d,]+ entries", block[0]), block
        daemon = [line for line in block if line.startswith("daemon: ")]
        assert daemon and f"dropboxfs {wanted} (commit " in daemon[0] and "remount" not in daemon[0], block
        assert daemon[0].endswith(f"; log: {where[path]}"), block

    r = run(binary, "status", "-v", logged.path, env=env, timeout=30)
    raw = [line.strip() for line in r.stdout.decode().splitlines() if line.strip().startswith("status: ")]
    assert len(raw) == 1 and raw[0].startswith("status: phase=watching "), r.stdout

    mounts = {m["path"]: m for m in status_json(binary, fake, *paths, env=env)}
    for path in paths:
        m = mounts[path]
        assert m["log"] == where[path] and m["version"] == wanted and m["rate_limited_until"] is None, m
        assert m["raw"].startswith("phase=watching ") and m["status"]["phase"] == "watching", m
        assert m["summary"].startswith("complete: "), m
    assert mounts[logged.path]["pid"] == logged.process.pid
    # A path with a space is one word of the raw line.
    assert "log=" + str(log).replace(" ", "%20") in mounts[logged.path]["raw"].split(" ")


def test_report_has_versions_status_options_and_log_but_no_secret(binary, fake_factory, mount_factory, tmp_path):
    fake = fake_factory("--token", SECRET)
    fake.add_file("/a.txt", b"a\n")
    log = tmp_path / "mount.log"
    config = tmp_path / "config"
    (config / "dropboxfs").mkdir(parents=True)
    (config / "dropboxfs" / "credentials.json").write_text(
        json.dumps({"app_key": "fakeappkey", "refresh_token": REFRESH}))
    env_extra = {"DROPBOXFS_ACCESS_TOKEN": SECRET, "XDG_CONFIG_HOME": str(config)}
    m = mount_factory(fake, "--log-file", str(log), env_extra=env_extra)
    assert run("cat", os.path.join(m.path, "a.txt")).stdout == b"a\n"
    wait_until(lambda: log.exists() and b"mounted" in log.read_bytes(), message="the mount's log line")
    # What an older version, or a library, might have let into the log.
    with open(log, "a") as f:
        for i in range(60):
            f.write(f"line-{i:03d}\n")
        f.write(f"leaked {SECRET} and {REFRESH}\n")
        f.write("Authorization: Bearer opaque-bearer-value\n")
        f.write('{"access_token": "json-token-value", "token_type": "bearer"}\n')
        f.write("client_secret=app-secret-value&x=1\n")
        f.write("signed in as franz.ferdinand+dbx@example.co.uk\n")

    env = env_for(fake, token=SECRET, extra={"XDG_CONFIG_HOME": str(config)})
    r = run(binary, "status", "--report", m.path, env=env, timeout=30)
    out = r.stdout.decode()
    assert r.returncode == 0, r
    for secret in (SECRET, REFRESH, "opaque-bearer-value", "json-token-value", "app-secret-value"):
        assert secret not in out, f"{secret} in the report:\n{out}"
    assert out.count("[redacted]") >= 5, out
    uname = os.uname()
    assert f"dropboxfs:   dropboxfs {version(binary)} (commit " in out, out
    assert re.search(r"^libraries:   libfuse \d+\.\d+\S*, libcurl \d+\.\d+", out, re.M), out
    assert f"system:      {uname.sysname} {uname.release} " in out, out
    assert "credentials: access token from DROPBOXFS_ACCESS_TOKEN" in out, out
    assert f"== mount {m.path}\n" in out and "summary:     " in out, out
    options = re.search(r"^options:     (\S+); (\S+)$", out, re.M)
    assert options and "ro" in options.group(1).split(",") and "user_id=" in options.group(2), out
    command = re.search(r"^command:     (.*)$", out, re.M)
    assert command and "--foreground" in command.group(1) and str(log) in command.group(1), out
    assert re.search(r"^status:      phase=\w+ ", out, re.M), out
    assert f"log:         {log}" in out, out
    assert re.search(rf"^daemon:      dropboxfs {re.escape(version(binary))} \(commit \S+\), pid {m.process.pid}$", out,
                     re.M), out
    # The last 50 lines of the log, and only those.
    assert "line-059" in out and "line-020" in out and "line-010" not in out, out
    assert "Authorization: Bearer [redacted]" in out and "client_secret=[redacted]&x=1" in out, out
    assert "@example" not in out and "signed in as [e-mail]" in out, out

    # Not with --json or --watch: a usage error.
    r = run(binary, "status", "--report", "--json", env=env, timeout=30)
    assert r.returncode == 2 and b"--report" in r.stderr, r


def test_status_says_until_when_dropbox_rate_limits_the_mount(binary, fake_factory, mount_factory):
    fake = fake_factory()
    data = os.urandom(300_000)
    fake.add_file("/big.bin", data)
    m = mount_factory(fake)
    os.listdir(m.path)
    fake.add_fault("files/download", "429json", retry_after=10, count=1)
    reader = subprocess.Popen(["cat", os.path.join(m.path, "big.bin")], stdout=subprocess.PIPE)
    try:
        wait_until(lambda: status_json(binary, fake, m.path)[0]["rate_limited_until"] is not None, timeout=15,
                   message="the status to show the rate limit")
        until = status_json(binary, fake, m.path)[0]["rate_limited_until"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", until), until
        seconds = calendar.timegm(time.strptime(until, "%Y-%m-%dT%H:%M:%SZ")) - time.time()
        assert -1 <= seconds <= 12, (until, seconds)
        out = run(binary, "status", m.path, env=env_for(fake), timeout=30).stdout.decode()
        line = mount_lines(out, m.path)[0]
        assert f"; rate limited by Dropbox until {until}" in line, out
        got, _ = reader.communicate(timeout=60)
        assert got == data
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    wait_until(lambda: status_json(binary, fake, m.path)[0]["rate_limited_until"] is None, timeout=15,
               message="the rate limit to end in the status")


def test_a_daemon_logging_to_the_journal_says_so(binary, fake_factory, tmp_path):
    """Standard error that JOURNAL_STREAM names is systemd's journal (as under a unit): the status
    says the log is in the journal, and the report has no file to read."""
    fake = fake_factory()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    with open(tmp_path / "journal.log", "wb") as stream:
        st = os.fstat(stream.fileno())
        env = env_for(fake, extra={"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}", "XDG_CACHE_HOME": str(tmp_path / "c")})
        p = subprocess.Popen([binary, "mount", str(mnt), "--foreground"], env=env, stdout=stream, stderr=stream,
                             stdin=subprocess.DEVNULL)
        try:
            wait_until(lambda: is_mounted(str(mnt)), timeout=20, message="the mount")
            m = status_json(binary, fake, str(mnt))[0]
            assert m["log"] == "journal" and m["status"]["log"] == "journal", m
            out = run(binary, "status", str(mnt), env=env_for(fake), timeout=30).stdout.decode()
            assert re.search(r"; log: the journal( \(journalctl( --user)? -u \S+\.service\))?$", out, re.M), out
            out = run(binary, "status", "--report", str(mnt), env=env_for(fake), timeout=30).stdout.decode()
            assert re.search(r"^log:         the journal", out, re.M), out
        finally:
            unmount(str(mnt))
            assert p.wait(timeout=15) == 0
