"""Thumbnailers and content sniffers get what they ask for: a file manager showing a folder of
PDFs, videos and files without an extension used to download each file under 8 MiB whole (the
reader fetches small files whole to check them), for the few KiB its content sniffing or
thumbnailer reads. Programs are told apart by their process name (FUSEAdapter/FileManagers.swift),
so the tests run copies of `head` named as a thumbnailer and as an ordinary program, and count the
bytes the fake served."""

import os
import shutil
import subprocess

from helpers import run

MiB = 1 << 20


def program(tmp_path, name, tool="head"):
    """A copy of `tool` whose process name is `name` (its first 15 bytes)."""
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    shutil.copy(shutil.which(tool), path)
    return str(path)


def served_while(fake, action):
    fake.reset_stats()
    action()
    return fake.stats()["bytes_sent"]


def first_bytes(reader, path, count=4096):
    r = subprocess.run([reader, "-c", str(count), path], capture_output=True, timeout=60)
    assert r.returncode == 0, r
    return r.stdout


def test_a_thumbnailer_reads_a_range_not_the_whole_file(fake_factory, mount_factory, tmp_path):
    fake = fake_factory()
    contents = {name: os.urandom(size) for name, size in
                (("report.pdf", 6 * MiB), ("clip.mp4", 7 * MiB), ("README", 5 * MiB), ("plain.pdf", 6 * MiB), ("other.pdf", 6 * MiB),
                 ("big.mkv", 40 * MiB))}
    for name, data in contents.items():
        fake.add_file("/" + name, data)
    m = mount_factory(fake)
    os.listdir(m.path)
    thumbnailer = program(tmp_path, "ffmpegthumbnailer")
    sniffer = program(tmp_path, "file")
    ordinary = program(tmp_path, "head")

    # The baseline: an ordinary program's 4 KiB of a small file costs the whole file.
    got = []
    sent = served_while(fake, lambda: got.append(first_bytes(ordinary, os.path.join(m.path, "plain.pdf"))))
    assert got[0] == contents["plain.pdf"][:4096] and sent >= 6 * MiB, sent

    for name, reader in (("report.pdf", thumbnailer), ("clip.mp4", thumbnailer), ("README", sniffer),
                         ("big.mkv", sniffer)):
        path = os.path.join(m.path, name)
        got = []
        sent = served_while(fake, lambda: got.append(first_bytes(reader, path)))
        assert got[0] == contents[name][:4096], name
        # One 256 KiB unit and the kernel's read-ahead at most; never the file.
        assert sent <= 512 * 1024, (name, sent)

    # A read at the end (a PDF's cross-reference table) is a range too.
    pdf = program(tmp_path, "evince-thumbnailer", tool="dd")
    path = os.path.join(m.path, "other.pdf")
    out = []
    sent = served_while(fake, lambda: out.append(subprocess.run(
        [pdf, f"if={path}", "bs=1024", "skip=6143", "count=1", "status=none"], capture_output=True, timeout=60)))
    assert out[0].stdout == contents["other.pdf"][-1024:] and sent <= 512 * 1024, sent

    # Read whole afterwards by an ordinary program: every byte, checked against content_hash.
    for name, data in contents.items():
        assert run("cat", os.path.join(m.path, name), timeout=120).stdout == data, name
