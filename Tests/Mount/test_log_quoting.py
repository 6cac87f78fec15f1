"""Names and server texts reach the daemon's log escaped (Log.escaped / Log.quoted): a shared file
named with a newline or an escape sequence must not forge log lines or drive the terminal of
whoever reads the log."""

import errno

from helpers import run


HOSTILE = ["new\nline [error]: forged.txt", "esc\x1b[31mred.txt", "csi\u009b2J.txt", "bidi\u202etxt.exe"]


def test_hostile_names_in_log_lines_are_escaped(fake_factory, mount_factory):
    fake = fake_factory()
    for name in HOSTILE:
        fake.add_file(f"/hostile/{name}", b"x" * 10)
    fake.add_fault("files/download", "500", count=0)
    m = mount_factory(fake, "--no-disk-cache", allowed_log=("download failed",))
    for name in HOSTILE:
        r = run("cat", f"{m.path}/hostile/{name}", timeout=60)
        assert r.returncode != 0, name
        assert b"Input/output error" in r.stderr, r.stderr
    fake.clear_faults()
    raw = open(m.log_path, "rb").read()
    text = raw.decode("utf-8", errors="replace")
    # No control character but the line ends, no C1 control, no bidi override in the whole log.
    assert b"\x1b" not in raw and b"\x00" not in raw
    assert "\u009b" not in text and "\u202e" not in text
    assert not any(line.startswith("line [error]") for line in text.splitlines())
    for escaped in ["new\\x0aline [error]: forged.txt", "esc\\x1b[31mred.txt", "csi\\x9b2J.txt", "bidi\\u{202e}txt.exe"]:
        assert escaped in text, (escaped, text[-3000:])
