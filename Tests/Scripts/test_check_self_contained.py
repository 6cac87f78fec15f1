"""Tests/ci/check-self-contained, which the test command runs first: it fails on citations of
documents outside the repository, of an issue tracker that is not in it, and on absolute paths
into one machine (root's home, a real user's home, the folder that holds the checkout), and passes
the legitimate look-alikes (placeholder users in examples, owner/repo#N, paths that merely contain
such a word). Checked on a copy of the script in a git checkout of the test's own."""

import os
import shutil
import subprocess

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(ROOT, "Tests", "ci", "check-self-contained")


def checkout(tmp_path, files, git=True):
    """A checkout at tmp_path/holder/repo with the script and `files` ({path: text})."""
    top = tmp_path / "holder" / "repo"
    (top / "Tests" / "ci").mkdir(parents=True)
    shutil.copy(SCRIPT, top / "Tests" / "ci" / "check-self-contained")
    for path, text in files.items():
        (top / path).parent.mkdir(parents=True, exist_ok=True)
        (top / path).write_text(text)
    if git:
        subprocess.run(["git", "init", "-q", str(top)], check=True)
    return top


def check(top):
    return subprocess.run([str(top / "Tests" / "ci" / "check-self-contained")], capture_output=True, text=True,
                          timeout=60)


LEGITIMATE = """\
mounted on /home/you/dropbox; the mount point /home/u/Drop box; HOME=/home/ann
412 30 0:57 / /home/ann/drop\\040box rw - fuse.dropboxfs dropboxfs rw
thumbnails of file:///home/u/dropbox/IMG_0001.jpg
HOME is /root when root runs it; package files are root/root; root="$staging/root"; ${DESTDIR}/root/x
"path_lower": "/documents/work/notes.txt"
the same hang as rclone#5165 and awslabs/mountpoint-s3#44; a tissue 3 cm wide
see docs/STYLE.md and [the style](STYLE.md); ~/.cache/dropboxfs and $HOME/.config
/tmp/dropboxfs-test and /usr/local/bin/dropboxfs
"""


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain folder"])
def test_a_clean_checkout_with_legitimate_look_alikes_passes(tmp_path, git):
    top = checkout(tmp_path, {"docs/NOTES.md": LEGITIMATE, "Sources/a.swift": "// " + LEGITIMATE}, git=git)
    r = check(top)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == ""


# The bad lines are put together from pieces, so that this file passes the check itself.
ISSUE, ROOT_HOME, HOME = "iss" "ue", "/ro" "ot/", "/ho" "me/"


@pytest.mark.parametrize("line,kind", [
    (f"as decided in {ISSUE} 12, item 3", "issue tracker"),
    (f"I{ISSUE[1:]}s 4 and 5 moved this", "issue tracker"),
    (f"fixed ({ISSUE} #7)", "issue tracker"),
    (f"run {ROOT_HOME}work/bench.sh", "home folder"),
    (f"the log in {HOME}alice/.local/state/dropboxfs", "home folder"),
    (f"ran from {HOME}carol", "home folder"),
    ("see ../sha" "red/notes.md", "outside the repository"),
    ("the facts are in dropbox-api" ".md", "outside the repository"),
    ("the old STY" "LE.md copy", "outside the repository"),
])
def test_each_kind_of_outside_reference_fails_and_is_named(tmp_path, line, kind):
    top = checkout(tmp_path, {"docs/NOTES.md": "fine\n" + line + "\n"})
    r = check(top)
    assert r.returncode == 1, r.stdout
    assert kind in r.stdout
    assert f"docs/NOTES.md:2:{line}" in r.stdout


def test_a_path_into_the_folder_that_holds_the_checkout_fails(tmp_path):
    top = checkout(tmp_path, {"scripts/run": f"cd {tmp_path}/holder/other-checkout\n",
                              "docs/ok.md": f"a path that only ends like it: /x{tmp_path}/holder/y\n"})
    r = check(top)
    assert r.returncode == 1
    assert "folder that holds this checkout" in r.stdout
    assert "scripts/run:1:" in r.stdout and "docs/ok.md" not in r.stdout


def test_the_script_does_not_match_itself_nor_do_untracked_ignored_files(tmp_path):
    top = checkout(tmp_path, {".gitignore": "scratch/\n", "scratch/log.txt": f"{ISSUE} 9 at {ROOT_HOME}x/y\n"})
    r = check(top)
    assert r.returncode == 0, r.stdout
