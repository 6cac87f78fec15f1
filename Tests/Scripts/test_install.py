"""scripts/install builds the static binary in a build folder of its own (.build/static), so a plain
`swift build -c release` before it (which SwiftPM would not link again for --static-swift-stdlib in
the same folder) never makes the package need the toolchain's libraries; run with sudo by the
checkout's owner, it builds as that user and only installs as root. Checked on a copy of the
script and the units in a folder of the test's own, with `swift` and `sudo` replaced by stubs that
record how they were called."""

import os
import shutil
import stat
import subprocess

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

SWIFT = """#!/bin/sh
echo "swift $*" >> "$CALLS"
case " $* " in *" --show-bin-path "*) echo "$STUB_BIN" ;; esac
"""
SUDO = """#!/bin/sh
echo "sudo $*" >> "$CALLS"
while [ "$1" != "--" ]; do shift; done
shift
exec "$@"
"""
BINARY = """#!/bin/sh
case "$1" in
  __generate) echo "generated $2" ;;
  --version) echo "dropboxfs 0.0.0 (commit stub)" ;;
esac
"""


def executable(path, text):
    path.write_text(text)
    path.chmod(0o755)


def checkout(tmp_path):
    """A folder with scripts/install and the unit templates, and stubs on a PATH of its own."""
    top = tmp_path / "checkout"
    (top / "scripts").mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, "scripts", "install"), top / "scripts" / "install")
    shutil.copytree(os.path.join(ROOT, "dist", "systemd"), top / "dist" / "systemd")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    executable(stubs / "swift", SWIFT)
    executable(stubs / "sudo", SUDO)
    built = tmp_path / "built"
    built.mkdir()
    executable(built / "dropboxfs", BINARY)
    env = dict(os.environ, PATH=f"{stubs}:{os.environ['PATH']}", CALLS=str(tmp_path / "calls"),
               STUB_BIN=str(built), PREFIX="/usr", DESTDIR=str(tmp_path / "root"))
    env.pop("SUDO_USER", None)
    env.pop("DROPBOXFS_BIN", None)
    return top, env


def install(top, env):
    r = subprocess.run([str(top / "scripts" / "install")], env=env, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return [line.split() for line in open(env["CALLS"]).read().splitlines()]


def test_the_static_build_has_a_build_folder_of_its_own(tmp_path):
    top, env = checkout(tmp_path)
    calls = install(top, env)
    builds = [c for c in calls if c[0] == "swift"]
    assert len(builds) == 2, calls  # the build, then --show-bin-path
    for call in builds:
        assert call[1:5] == ["build", "-c", "release", "--static-swift-stdlib"], call
        assert call[call.index("--scratch-path") + 1] == ".build/static", call
    assert not any(c[0] == "sudo" for c in calls), "built through sudo though not run with it"
    installed = tmp_path / "root" / "usr" / "bin" / "dropboxfs"
    assert installed.read_text() == BINARY


def test_run_with_sudo_it_builds_as_the_owner_of_the_checkout(tmp_path):
    assert os.geteuid() == 0, "this test gives its checkout to another user: run it as root (as CI does)"
    top, env = checkout(tmp_path)
    owner = "nobody"
    for folder, _, files in os.walk(top):
        shutil.chown(folder, owner)
        for name in files:
            shutil.chown(os.path.join(folder, name), owner)
    env["SUDO_USER"] = owner
    calls = install(top, env)
    sudo = [c for c in calls if c[0] == "sudo"]
    assert len(sudo) == 2, calls
    for call in sudo:
        assert call[1:5] == ["-u", owner, "-H", "--"], call
        assert call[call.index("--scratch-path") + 1] == ".build/static", call

    # A .build left by root keeps the build as root, said so.
    (top / ".build").mkdir()
    os.remove(env["CALLS"])
    r = subprocess.run([str(top / "scripts" / "install")], env=env, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert b"building as root: .build is not nobody's" in r.stdout, r.stdout
    assert not any(line.startswith("sudo") for line in open(env["CALLS"]).read().splitlines())
    assert stat.S_ISDIR(os.stat(top / ".build").st_mode)
