"""The Debian package, built by scripts/package-deb and given in DROPBOXFS_DEB
(scripts/test-package builds it): what it holds, what it depends on, and that its binary runs with
nothing of the Swift toolchain (the runtime is linked in statically)."""

import gzip
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEB = os.environ.get("DROPBOXFS_DEB")

EXPECTED_FILES = {
    "./usr/bin/dropboxfs",
    "./usr/lib/systemd/user/dropboxfs.service",
    "./usr/lib/systemd/user/dropboxfs@.service",
    "./usr/share/man/man1/dropboxfs.1.gz",
    "./usr/share/bash-completion/completions/dropboxfs",
    "./usr/share/zsh/vendor-completions/_dropboxfs",
    "./usr/share/fish/vendor_completions.d/dropboxfs.fish",
    "./usr/share/doc/dropboxfs/README.md",
    "./usr/share/doc/dropboxfs/copyright",
    "./usr/share/doc/dropboxfs/changelog.gz",
}
# What the binary may need: libfuse3, libcurl, libcrypto, SQLite, zlib, and the C and C++ runtimes.
ALLOWED_DEPENDS = {"fuse3", "libfuse3-3", "libcurl4", "libssl3", "libsqlite3-0", "zlib1g", "libc6", "libgcc-s1", "libstdc++6"}
TOOLCHAIN_LIBRARY = re.compile(r"libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime|libXCTest|libTesting")


def run(*cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, timeout=kw.pop("timeout", 120), **kw)


@pytest.fixture(scope="module")
def deb():
    if not DEB:
        pytest.fail("DROPBOXFS_DEB is not set: run scripts/test-package, which builds the package first")
    assert Path(DEB).is_file(), DEB
    return DEB


@pytest.fixture(scope="module")
def extracted(deb, tmp_path_factory):
    root = tmp_path_factory.mktemp("root")
    r = run("dpkg-deb", "-x", deb, root)
    assert r.returncode == 0, r.stderr
    return root


def field(deb, name):
    r = run("dpkg-deb", "-f", deb, name)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode().strip()


def toolchain_folder():
    swift = shutil.which("swift")
    assert swift, "swift is not on PATH"
    # /opt/swift/usr/bin/swift -> /opt/swift
    return Path(os.path.realpath(swift)).parents[2]


def test_contents(deb):
    r = run("dpkg-deb", "-c", deb)
    assert r.returncode == 0, r.stderr
    files = {line.split()[-1] for line in r.stdout.decode().splitlines() if not line.startswith("d")}
    assert files == EXPECTED_FILES
    modes = {line.split()[-1]: line.split()[0] for line in r.stdout.decode().splitlines()}
    assert modes["./usr/bin/dropboxfs"] == "-rwxr-xr-x"
    assert all(modes[f] == "-rw-r--r--" for f in EXPECTED_FILES if f != "./usr/bin/dropboxfs")
    assert all(" root/root " in line for line in r.stdout.decode().splitlines())


def test_control_fields(deb, extracted):
    version = run(extracted / "usr/bin/dropboxfs", "--version").stdout.decode().split()[1]
    assert field(deb, "Package") == "dropboxfs"
    assert field(deb, "Version") == version
    assert field(deb, "Architecture") == run("dpkg", "--print-architecture").stdout.decode().strip()
    listed = [d.strip() for d in field(deb, "Depends").split(",")]
    # dpkg-shlibdeps gives each library's package the version its symbols need.
    versioned = {d.split(" (")[0]: d for d in listed}
    assert all(re.fullmatch(r"[a-z0-9.+-]+ \(>= [^)]+\)", versioned[p]) for p in ("libc6", "libcurl4", "libfuse3-3")), listed
    depends = set(versioned)
    assert {"fuse3", "libfuse3-3", "libcurl4", "libssl3", "libsqlite3-0"} <= depends
    assert depends <= ALLOWED_DEPENDS, depends - ALLOWED_DEPENDS
    for package in depends:
        # Each is a package of this Debian release (apt knows it).
        r = run("apt-cache", "show", "--no-all-versions", package)
        assert r.returncode == 0 and b"Package: " + package.encode() in r.stdout, package


def test_copyright_changelog_and_maintainer(deb, extracted):
    doc = extracted / "usr/share/doc/dropboxfs"
    copyright = (doc / "copyright").read_text()
    assert copyright.startswith("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
    assert "License: Apache-2.0" in copyright and "/usr/share/common-licenses/Apache-2.0" in copyright
    changelog = gzip.decompress((doc / "changelog.gz").read_bytes()).decode()
    version = field(deb, "Version")
    assert changelog.startswith(f"dropboxfs ({version}) unstable; urgency=medium\n"), changelog
    maintainer = field(deb, "Maintainer")
    assert re.fullmatch(r"[^<>]+ <[^<>@ ]+@[^<>@ ]+>", maintainer) and "localhost" not in maintainer, maintainer
    assert f" -- {maintainer}  " in changelog


def test_lintian_finds_no_errors(deb):
    """lintian, Debian's package checker: no error (E:) or warning (W:) lines. It is installed here if missing
    (scripts/test-package does; it is big, so scripts/install-deps does not)."""
    if shutil.which("lintian") is None:
        pytest.fail("lintian is needed (apt-get install lintian; scripts/test-package installs it)")
    r = run("lintian", "--no-tag-display-limit", deb, timeout=600)
    found = [line for line in r.stdout.decode().splitlines() if line[:2] in ("E:", "W:")]
    assert found == [], r.stdout.decode()


def test_the_binary_needs_no_toolchain_library(extracted):
    binary = extracted / "usr/bin/dropboxfs"
    r = run("ldd", binary)
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    assert "not found" not in text, text
    assert not TOOLCHAIN_LIBRARY.search(text), text
    assert str(toolchain_folder()) not in text, text
    needed = set(re.findall(r"\(NEEDED\).*\[(.*)\]", run("readelf", "-d", binary).stdout.decode()))
    assert needed and not any(TOOLCHAIN_LIBRARY.search(n) for n in needed), needed


def test_the_binary_runs_with_the_toolchain_hidden(extracted):
    """In a private mount namespace whose toolchain folder is an empty tmpfs (the host's is
    untouched), the packaged binary still starts: --version, --help and the generators."""
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed to hide the toolchain safely")
    folder = toolchain_folder()
    binary = extracted / "usr/bin/dropboxfs"
    r = run("unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs none "$0" && "$1" --version && "$1" mount --help >/dev/null && "$1" __generate man >/dev/null',
            folder, binary, env={"PATH": "/usr/bin:/bin"})
    assert folder.exists() and any(folder.iterdir()), "the host's toolchain must be untouched"
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().startswith("dropboxfs "), r.stdout


def test_man_page_and_completions(extracted):
    man = extracted / "usr/share/man/man1/dropboxfs.1.gz"
    r = run("man", "-l", man, env=dict(os.environ, MANPAGER="cat", MANWIDTH="100"))
    assert r.returncode == 0 and b"dropboxfs mount" in r.stdout, r.stderr
    source = gzip.decompress(man.read_bytes())
    r = subprocess.run(["groff", "-man", "-ww", "-z"], input=source, capture_output=True, timeout=30)
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    bash = extracted / "usr/share/bash-completion/completions/dropboxfs"
    r = run("bash", "-c", 'source "$0"; COMP_WORDS=(dropboxfs mount --allow-o); COMP_CWORD=2; _dropboxfs; '
                          'echo "${COMPREPLY[@]}"', bash)
    assert r.returncode == 0 and r.stdout.decode().split() == ["--allow-other"], r


def test_systemd_user_units_verify(extracted, tmp_path):
    """`systemd-analyze --user verify` of both units, with Documentation=man:dropboxfs(1) found in
    the package's man folder. The units name /usr/bin/dropboxfs, which is not installed on this
    machine, so that one path is pointed at the extracted binary; every other line is verified as
    packaged. A unit with a mistake in it makes verify print warnings, which fail the test."""
    if shutil.which("systemd-analyze") is None:
        pytest.fail("systemd-analyze (package systemd) is needed to verify the units")
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), MANPATH=str(extracted / "usr/share/man"))
    units = tmp_path / "units"
    units.mkdir()
    for name in ("dropboxfs.service", "dropboxfs@.service"):
        text = (extracted / "usr/lib/systemd/user" / name).read_text()
        for key in ("Type=notify", "Restart=on-failure", "EnvironmentFile=-%E/dropboxfs/",
                    "ExecStart=/usr/bin/dropboxfs mount --foreground", "WantedBy=default.target"):
            assert key in text, (name, key)
        # Inert in a user unit (the user manager never reaches network-online.target), and a stop
        # by fusermount3 -u fails on a busy mount: systemd's SIGTERM unmounts lazily instead.
        for key in ("network-online.target", "ExecStop="):
            assert key not in text, (name, key)
        (units / name).write_text(text.replace("/usr/bin/dropboxfs", str(extracted / "usr/bin/dropboxfs")))
    assert "--profile %i" in (units / "dropboxfs@.service").read_text()
    for unit in ("dropboxfs.service", "dropboxfs@work.service"):
        r = run("systemd-analyze", "--user", "verify", unit, env=env, cwd=units)
        assert r.returncode == 0 and r.stdout == b"" and r.stderr == b"", (unit, r.stdout, r.stderr)
    # The check itself catches mistakes.
    (units / "broken.service").write_text("[Service]\nType=notifyy\nExecStart=/bin/true\nRestart=sometimes\n")
    r = run("systemd-analyze", "--user", "verify", "broken.service", env=env, cwd=units)
    assert b"notifyy" in r.stderr + r.stdout


def test_dpkg_installs_it_into_a_private_root(deb, tmp_path):
    """dpkg itself unpacks and configures the package (into a root of its own, so nothing of this
    machine changes; the dependencies are not installed there, hence --force-depends)."""
    root = tmp_path / "root"
    (root / "var/lib/dpkg/info").mkdir(parents=True)
    (root / "var/lib/dpkg/updates").mkdir()
    (root / "var/lib/dpkg/status").touch()
    (root / "var/lib/dpkg/available").touch()
    r = run("dpkg", "--force-depends", "--force-not-root", f"--root={root}", "-i", deb)
    assert r.returncode == 0, r.stderr.decode()
    r = run("dpkg", f"--root={root}", "-L", "dropboxfs")
    listed = set(r.stdout.decode().split())
    assert {f[1:] for f in EXPECTED_FILES} <= listed
    assert run(root / "usr/bin/dropboxfs", "--version").returncode == 0
