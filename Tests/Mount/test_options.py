"""One declaration per option: the parser, `--help`, the man page and the bash, zsh
and fish completions are all made from the declarations in Sources/CLI/CommandLine/Options.swift, which
`dropboxfs __generate options` prints. Each output must name exactly the declared options of each
command (hidden ones nowhere), and the parser must accept each of them. Also: every -o item
is checked before anything is sent."""

import gzip
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from helpers import ROOT, c_locale, env_for, is_mounted, mount_info, run

OPTION = r"(?<![\w-])(--[a-z][a-z-]+|-[a-zA-Z])(?![\w-])"


def declared(binary):
    r = run(binary, "__generate", "options")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def forms(option):
    out = []
    if option["short"]:
        out.append("-" + option["short"])
    if option["long"]:
        out.append("--" + option["name"])
    return out


def visible_forms(options):
    return {f for o in options if not o["hidden"] for f in forms(o)}


def hidden_forms(options):
    return {f for o in options if o["hidden"] for f in forms(o)} - visible_forms(options)


@pytest.fixture(scope="module")
def declarations(binary):
    return declared(binary)


@pytest.fixture(scope="module")
def installed(binary, tmp_path_factory):
    """The layout scripts/install makes, with the debug binary (no release build here)."""
    prefix = tmp_path_factory.mktemp("prefix")
    r = run(ROOT / "scripts" / "install", timeout=120,
            env=dict(os.environ, PREFIX=str(prefix), DROPBOXFS_BIN=binary, XDG_DATA_HOME=str(prefix / "share")))
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    return prefix


def help_options_section(text):
    """The option forms listed in a command's --help "Options:" section (first column only)."""
    section = text.split("\nOptions:\n", 1)[1]
    found = set()
    for line in section.splitlines():
        if not line.startswith("  -"):
            continue
        head = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        found.update(re.findall(OPTION, head))
    return found


def test_every_command_help_lists_exactly_its_declared_options(binary, declarations):
    for command, options in declarations["commands"].items():
        r = run(binary, command, "--help")
        assert r.returncode == 0 and r.stderr == b"", (command, r)
        text = r.stdout.decode()
        assert help_options_section(text) == visible_forms(options), command
        for form in hidden_forms(options):
            assert not re.search(rf"(?<![\w-]){re.escape(form)}(?![\w-])", text), (command, form)


def test_main_help_names_every_command_and_global_option(binary, declarations):
    text = run(binary, "--help").stdout.decode()
    for command in declarations["commands"]:
        if command != "version":
            assert f"dropboxfs {command}" in text, command
    for option in declarations["global"]:
        for form in forms(option):
            assert form in text, form


def man_sections(installed):
    """{command: set of option forms} from the installed man page's roff source."""
    source = gzip.decompress((installed / "share/man/man1/dropboxfs.1.gz").read_bytes()).decode()
    text = source.replace("\\-", "-").replace("\\fB", "").replace("\\fI", "").replace("\\fR", "")
    sections = {}
    for block in text.split('.SS "dropboxfs ')[1:]:
        name = block.split('"', 1)[0]
        block = block.split("\n.SH ", 1)[0]
        heads = re.findall(r"^\.TP\n(.*)$", block, re.M)
        sections[name] = {f for head in heads for f in re.findall(OPTION, head)}
    return sections, source


def test_man_page_lists_exactly_the_declared_options(binary, declarations, installed):
    sections, source = man_sections(installed)
    assert set(sections) == set(declarations["commands"])
    for command, options in declarations["commands"].items():
        assert sections[command] == visible_forms(options), command
    # groff reads it without a warning, and man renders it.
    r = subprocess.run(["groff", "-man", "-ww", "-z"], input=source.encode(), capture_output=True, timeout=30)
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    r = run("man", "-l", installed / "share/man/man1/dropboxfs.1.gz", env=dict(os.environ, MANPAGER="cat", MANWIDTH="100"))
    assert r.returncode == 0 and b"FSTAB" in r.stdout and b"EXIT STATUS" in r.stdout, r.stderr


def test_man_page_gives_the_sign_in_steps_in_the_order_a_user_takes_them(installed):
    """The app console steps, then `dropboxfs auth`, as README.md's "Sign in" gives them."""
    r = run("man", "--nh", "--nj", "-l", installed / "share/man/man1/dropboxfs.1.gz",
            env=dict(os.environ, MANPAGER="cat", MANWIDTH="100"))
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.decode().replace("\u2212", "-").replace("\u2010", "-").split())
    section = text.split("SIGN IN", 1)[1].split("COMMANDS", 1)[0]
    steps = ["https://www.dropbox.com/developers/apps", "Create app", "Scoped access", "Full Dropbox", "Permissions",
             "account_info.read", "files.metadata.read", "files.content.read", "Submit", "Settings", "App key",
             "dropboxfs auth --app-key", "xdg-open", "paste the code"]
    positions = [section.find(step) for step in steps]
    assert -1 not in positions, [s for s, p in zip(steps, positions) if p == -1]
    assert positions == sorted(positions), section


def bash_complete(installed, *words):
    script = installed / "share/bash-completion/completions/dropboxfs"
    line = " ".join(f"'{w}'" for w in words)
    r = subprocess.run(
        ["bash", "-c", f'source "$0"; COMP_WORDS=({line}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); _dropboxfs; '
                       'printf "%s\\n" "${COMPREPLY[@]}"', str(script)],
        capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return set(r.stdout.decode().split())


def test_bash_completion_offers_exactly_the_declared_options(declarations, installed):
    assert bash_complete(installed, "dropboxfs", "") >= set(declarations["commands"])
    for command, options in declarations["commands"].items():
        assert bash_complete(installed, "dropboxfs", command, "-") == visible_forms(options), command
    assert bash_complete(installed, "dropboxfs", "mount", "--log-level", "") == {"debug", "info", "warning", "error"}
    assert bash_complete(installed, "dropboxfs", "mount", "--cache-s") == {"--cache-size"}
    # pin and unpin take paths on a mount (files or folders), pinned mount points (folders).
    assert bash_complete(installed, "dropboxfs", "pin", f"{installed}/sh") == {f"{installed}/share"}
    assert bash_complete(installed, "dropboxfs", "unpin", f"{installed}/sh") == {f"{installed}/share"}
    assert bash_complete(installed, "dropboxfs", "pinned", f"{installed}/sh") == {f"{installed}/share"}


def test_zsh_and_fish_completions_name_exactly_the_declared_options(declarations, installed):
    zsh = (installed / "share/zsh/site-functions/_dropboxfs").read_text()
    fish = (installed / "share/fish/vendor_completions.d/dropboxfs.fish").read_text()
    assert zsh.startswith("#compdef dropboxfs")
    for command, options in declarations["commands"].items():
        block = zsh.split(f"\n        {command})\n", 1)[1].split(";;", 1)[0]
        assert set(re.findall(r"'(-[a-zA-Z]|--[a-z][a-z-]+)[=+\[]", block)) == visible_forms(options), command
        found = set()
        for line in fish.splitlines():
            if f"'__fish_seen_subcommand_from {command}'" in line:
                found.update("-" + s for s in re.findall(r" -s (\S)", line))
                found.update("--" + s for s in re.findall(r" -l (\S+)", line))
        assert found == visible_forms(options), command
    # zsh and fish come from scripts/install-deps: zsh checks the syntax, fish completes for real.
    r = run("zsh", "-n", installed / "share/zsh/site-functions/_dropboxfs")
    assert r.returncode == 0, r.stderr
    script = installed / "share/fish/vendor_completions.d/dropboxfs.fish"
    r = run("fish", "--no-execute", script)
    assert r.returncode == 0, r.stderr

    def fish_complete(line):
        r = run("fish", "-c", f'source "{script}"; complete -C "{line}"', cwd=installed)
        assert r.returncode == 0, r.stderr
        return {entry.split("\t")[0] for entry in r.stdout.decode().splitlines()}

    assert fish_complete("dropboxfs ") == set(declarations["commands"])
    assert fish_complete("dropboxfs mount --cache-") == {"--cache-dir", "--cache-size"}
    assert fish_complete("dropboxfs mount --log-level ") == {"debug", "info", "warning", "error"}
    assert fish_complete("dropboxfs mount --cache-dir sh") == {"share/"}
    assert fish_complete("dropboxfs pin sh") == {"share/"}
    assert fish_complete("dropboxfs pinned sh") == {"share/"}
    assert fish_complete("dropboxfs status --threads") == set(), "an option of mount offered for status"

    # zsh, for real: an interactive zsh in a pty (zpty) with compinit and the generated function,
    # whose compadd calls are recorded, gets TAB after the typed words.
    def zsh_complete(line, tmp):
        out = tmp / "candidates"
        script = tmp / "probe.zsh"
        script.write_text(f"""
zmodload zsh/zpty
zpty z 'zsh -f -i'
zpty -w z 'fpath=({installed}/share/zsh/site-functions $fpath); autoload -U compinit; compinit -u -d {tmp}/dump'
zpty -w z 'compadd() {{ local -a found; builtin compadd -O found "$@"; print -l -- $found >> {out}; builtin compadd "$@" }}'
zpty -w z 'zstyle ":completion:*" menu no; print -r -- ready > {tmp}/ready'
for i in {{1..100}}; do [[ -e {tmp}/ready ]] && break; sleep 0.1; done
zpty -w -n z $'{line}\t'
for i in {{1..100}}; do [[ -s {out} ]] && break; sleep 0.1; done
sleep 0.5
zpty -d z
""")
        run("zsh", "-f", script, timeout=60)
        return set(out.read_text().split()) if out.exists() else set()

    for line, wanted in [("dropboxfs mount --cac", {"--cache-dir", "--cache-size"}),
                         ("dropboxfs mount --log-level ", {"debug", "info", "warning", "error"}),
                         ("dropboxfs stat", {"status"})]:
        with tempfile.TemporaryDirectory() as tmp:
            assert zsh_complete(line, Path(tmp)) == wanted, line


SAMPLES = {"KEY": "k", "URL": "http://127.0.0.1:9", "FILE": "/dev/null", "NAME": "work", "CODE": "c"}


@pytest.mark.parametrize("command,code,message", [("auth", 2, "takes no arguments"),
                                                  ("status", 3, "not a dropboxfs mount")])
def test_the_parser_accepts_every_declared_option(binary, declarations, command, code, message):
    """Each declared option parses: the run then stops at the stray argument after it, an error that
    is not about the option (nothing is sent: the URLs point at a closed port)."""
    for option in declarations["commands"][command]:
        if option["name"] in ("help", "code"):
            continue
        for form in forms(option):
            args = [form] + ([SAMPLES[option["value"]]] if option["value"] else [])
            r = run(binary, command, *args, "stray", env=env_for("http://127.0.0.1:9", token=None))
            err = r.stderr.decode()
            assert r.returncode == code and message in err, (command, args, err)


def test_version_command_forms(binary):
    outputs = {tuple(args): run(binary, *args) for args in (["--version"], ["-V"], ["version"])}
    texts = {r.stdout for r in outputs.values()}
    assert len(texts) == 1 and all(r.returncode == 0 for r in outputs.values()), outputs
    r = run(binary, "version", "--bogus")
    assert r.returncode == 2 and b"--bogus" in r.stderr


# ---- -o is checked before anything is sent ----------------------------------------------------------

@pytest.fixture
def fake(fake_factory):
    fake = fake_factory()
    fake.add_file("/hello.txt", b"hello\n")
    return fake


@pytest.mark.parametrize("items,fragment", [
    ("bogus", '"bogus"'),
    ("cache_size", "needs a value"),
    ("cache_size=lots", "--cache-size"),
    ("allow_other=yes", "takes no value"),
    ("attr_timeout=soon", "--attr-timeout"),
    ("timeouts=rpc=0", "--timeouts"),
    ("threads=0", "--threads"),
    ("spin_us=soon", "--spin-us"),
    ("profile=../x", "profile name"),
    ("max_read=lots", "max_read"),
    ("allow_other,allow_root", "exclude each other"),
    ("foreground", '"foreground"'),
])
@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
def test_bad_mount_options_are_usage_errors_before_any_request(binary, fake, tmp_path, items, fragment, background):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    args = ["mount", mnt, "-o", items] + ([] if background else ["--foreground"])
    r = run(binary, *args, env=env_for(fake, extra={"XDG_STATE_HOME": str(tmp_path / "state")}), timeout=30)
    err = r.stderr.decode()
    assert r.returncode == 2, (r.returncode, err)
    assert fragment in err.strip().splitlines()[-1], err
    assert fake.stats()["total"] == 0
    assert not is_mounted(mnt)


def test_fstab_options_are_accepted_and_ignored(binary, fake, mount_factory):
    """What fstab, mount(8) and mount.fuse3 leave in -o is accepted; dropboxfs's own options in
    NAME=VALUE form take effect (here: the log level and the attribute timeout in a duration)."""
    m = mount_factory(fake, "-o", "ro,noauto,nofail,_netdev,user,users,dev,suid,exec,x-systemd.automount,"
                                  "x-systemd.idle-timeout=5min,comment=x,log_level=debug,attr_timeout=5m,"
                                  "timeouts=rpc=2m:stall=30s,cache_size=64M,nonempty")
    assert os.listdir(m.path) == ["hello.txt"]
    options = open("/proc/self/mountinfo").read()
    m.unmount()
    text = m.log_text()
    assert "[debug]" in text, "log_level=debug had no effect"
    assert "mount option x-systemd.automount is not for dropboxfs: ignored" in text
    mine = [line for line in options.splitlines() if f" {m.path} " in line]
    assert mine and " ro," in mine[0] + "," and "nosuid" in mine[0] and "nodev" in mine[0], mine


# What the daemon says once for -o rw (mount(8) adds rw to every fstab line that does not say ro).
RW_WARNING = "mount option rw ignored: the mount is read-only whatever rw asks"


def assert_read_only(path):
    """The kernel mount is ro (mount table) and a write fails with EROFS."""
    fstype, options, _ = mount_info(path)
    assert fstype == "fuse.dropboxfs" and "ro" in options and "rw" not in options, options
    r = run("touch", f"{path}/hello.txt", env=c_locale())
    assert r.returncode != 0 and b"Read-only file system" in r.stderr, r
    r = run("sh", "-c", f"echo x > '{path}/new.txt'", env=c_locale())
    assert r.returncode != 0 and b"Read-only file system" in r.stderr, r


@pytest.mark.parametrize("items", ["rw", "ro,rw", "rw,noauto,user,cache_size=64M"])
def test_rw_mounts_read_only_with_one_warning(fake, mount_factory, items):
    """-o rw is accepted, as the kernel mounts read-only media asked for rw: the mount is read-only
    all the same (ro in the mount table, EROFS on writes), and one warning line says so."""
    m = mount_factory(fake, "-o", items)
    assert os.listdir(m.path) == ["hello.txt"]
    assert_read_only(m.path)
    warnings = [line for line in m.log_text().splitlines() if RW_WARNING in line]
    assert len(warnings) == 1 and "[warning]" in warnings[0], m.log_text()


def test_rw_in_the_background_warns_on_the_terminal_and_in_the_log(binary, fake, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    log = tmp_path / "bg.log"
    r = run(binary, "mount", mnt, "-o", "rw", "--log-file", log, env=env_for(fake), timeout=60)
    try:
        err = r.stderr.decode()
        assert r.returncode == 0, err
        assert len([line for line in err.splitlines() if RW_WARNING in line]) == 1, err
        assert len([line for line in log.read_text().splitlines() if RW_WARNING in line]) == 1
        assert_read_only(mnt)
    finally:
        run("fusermount3", "-u", mnt)


# ---- failures reported before mounting, and with their real reason ----------------------------------

NOBODY = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]


@pytest.fixture
def as_nobody(binary, fake):
    """Runs dropboxfs as user nobody in a private mount namespace where /etc/fuse.conf is a file of
    the test's and /dev/fuse is usable by anyone (a new device node on a tmpfs, bound over it); the
    host's files are untouched. Returns run(fuse_conf_text, *args) -> CompletedProcess."""
    if shutil.which("unshare") is None or shutil.which("setpriv") is None:
        pytest.fail("unshare and setpriv (util-linux) are needed")
    shared = tempfile.mkdtemp(prefix="dropboxfs-nobody-", dir="/tmp")
    os.chmod(shared, 0o777)
    copy = os.path.join(shared, "dropboxfs")
    shutil.copy(binary, copy)
    os.chmod(copy, 0o755)
    for folder in ("home", "mnt", "dev"):
        os.mkdir(os.path.join(shared, folder))
        os.chmod(os.path.join(shared, folder), 0o777)

    def start(fuse_conf, *args):
        conf = os.path.join(shared, "fuse.conf")
        with open(conf, "w") as f:
            f.write(fuse_conf)
        os.chmod(conf, 0o644)
        script = ('mount -t tmpfs none "$0/dev" && mknod -m 666 "$0/dev/fuse" c 10 229 && '
                  'mount --bind "$0/dev/fuse" /dev/fuse && mount --bind "$0/fuse.conf" /etc/fuse.conf && '
                  'shift 0 && exec "$@"')
        env = env_for(fake, extra={"HOME": os.path.join(shared, "home")})
        for key in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            env.pop(key, None)
        return run("unshare", "--mount", "--propagation", "private", "sh", "-c", script, shared, *NOBODY, copy,
                   *args, env=env, timeout=60)

    start.mountpoint = os.path.join(shared, "mnt")
    yield start
    shutil.rmtree(shared, ignore_errors=True)


@pytest.mark.parametrize("option", [["--allow-other"], ["-o", "allow_other"], ["-o", "allow_root"]])
@pytest.mark.parametrize("mode", [["--foreground"], []], ids=["foreground", "background"])
def test_allow_other_without_user_allow_other_is_refused_before_mounting(as_nobody, fake, option, mode):
    fake.reset_stats()
    r = as_nobody("# user_allow_other\nmount_max = 100\n", "mount", as_nobody.mountpoint, *mode, *option)
    err = r.stderr.decode()
    assert r.returncode == 6, (r.returncode, err)
    message = err.strip().splitlines()[-1]
    assert "user_allow_other" in message and "/etc/fuse.conf" in message, message
    assert fake.stats()["total"] == 0, "the refusal must come before any request"
    # With the line, the check passes (the run then stops at the next check: a missing mount point).
    r = as_nobody("user_allow_other\n", "mount", "/nonexistent/mnt", "--foreground", *option)
    assert r.returncode == 3, r.stderr


def test_background_failures_show_their_real_reason(as_nobody, fake):
    """A failure only the daemon meets (here fusermount3 refusing a mount past fuse.conf's
    mount_max) used to say "see the message above" while that message went to the log; the
    command now shows the daemon's explaining lines on the terminal above its own."""
    r = as_nobody("mount_max = 0\n", "mount", as_nobody.mountpoint)
    err = r.stderr.decode()
    assert r.returncode == 3, (r.returncode, err)
    lines = err.strip().splitlines()
    assert any(line.startswith("fusermount3: too many FUSE filesystems mounted") for line in lines), err
    assert lines[-1].startswith("dropboxfs: could not mount on"), err


@pytest.mark.parametrize("what", ["log-file in a missing folder", "log-file through a symlink",
                                  "cache-dir that is a file"])
def test_paths_are_checked_before_any_request(binary, fake, tmp_path, what):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    target = tmp_path / "some-file"
    target.write_text("untouched\n")
    if what == "log-file in a missing folder":
        args, fragment = ["--log-file", tmp_path / "missing" / "x.log"], "cannot open the log file"
    elif what == "log-file through a symlink":
        (tmp_path / "link.log").symlink_to(target)
        args, fragment = ["--log-file", tmp_path / "link.log"], "symbolic link"
    else:
        args, fragment = ["--cache-dir", target], "not a folder"
    r = run(binary, "mount", mnt, *args, env=env_for(fake, extra={"XDG_STATE_HOME": str(tmp_path / "state")}))
    err = r.stderr.decode()
    assert r.returncode == 2 and fragment in err.strip().splitlines()[-1], (r.returncode, err)
    assert fake.stats()["total"] == 0
    assert target.read_text() == "untouched\n"
    assert not is_mounted(mnt)


def test_unreadable_mount_point_is_not_reported_as_not_empty(as_nobody, fake):
    """A mount point the user may enter but not list (root's folder, mode 0311) is a permission
    problem, said as such, not as "not empty", whose advice (--allow-non-empty) does not help."""
    os.chmod(as_nobody.mountpoint, 0o311)
    r = as_nobody("", "mount", as_nobody.mountpoint, "--foreground")
    err = r.stderr.decode()
    assert r.returncode == 3, (r.returncode, err)
    message = err.strip().splitlines()[-1]
    assert "not empty" not in message and "cannot read mount point" in message, message
    assert "Permission denied" in message, message


@pytest.mark.parametrize("value", ["131072", "1048576"])
def test_max_read_mount_option_gives_a_working_mount(fake, mount_factory, value):
    """-o max_read=N is passed to libfuse, and the init callback asks for the same: libfuse fails
    the kernel's INIT when they differ, and the mount used to vanish right after it appeared."""
    m = mount_factory(fake, "-o", f"max_read={value}")
    assert os.listdir(m.path) == ["hello.txt"]
    assert (Path(m.path) / "hello.txt").read_bytes() == fake.content("/hello.txt")
    assert is_mounted(m.path)
    assert m.process.poll() is None, m.log_text()


def installed_files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())


def test_uninstall_removes_exactly_what_install_put_in_place(binary, tmp_path):
    """scripts/install writes its list; scripts/uninstall removes those files and the folders it
    made, for a one-user PREFIX (units in XDG_DATA_HOME/systemd/user, where systemd looks) and a
    staged /usr/local (units in lib/systemd/user); a second uninstall says nothing is installed."""
    data = tmp_path / "data"
    (data / "keep").mkdir(parents=True)
    (data / "keep" / "mine").write_text("not dropboxfs's")
    user = {"PREFIX": str(tmp_path / "local"), "XDG_DATA_HOME": str(data)}
    staged = {"PREFIX": "/usr/local", "DESTDIR": str(tmp_path / "stage")}
    for extra, units in ((user, data / "systemd/user"), (staged, tmp_path / "stage/usr/local/lib/systemd/user")):
        env = dict(os.environ, DROPBOXFS_BIN=binary, **extra)
        r = run(ROOT / "scripts" / "install", env=env, timeout=120)
        assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
        assert sorted(os.listdir(units)) == ["dropboxfs.service", "dropboxfs@.service"]
        root = Path(extra.get("DESTDIR", "") + extra["PREFIX"])
        listed = (root / "share/dropboxfs/installed-files").read_text().split()
        assert len(listed) == 8 and all(p.startswith("/") for p in listed), listed
        assert not any(p.startswith(extra.get("DESTDIR", "//")) for p in listed), "paths as installed, without DESTDIR"
        r = run(ROOT / "scripts" / "uninstall", env=env, timeout=60)
        assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
        assert b"8 files removed" in r.stdout, r.stdout
        assert installed_files(root) == [], installed_files(root)
        assert not units.exists() or os.listdir(units) == []
        r = run(ROOT / "scripts" / "uninstall", env=env, timeout=60)
        assert r.returncode == 1 and b"no dropboxfs installed" in r.stderr, r
    assert (data / "keep" / "mine").read_text() == "not dropboxfs's"
