"""Long uptimes (issue 12, item 4): the daemon raises its open-file limit to the hard limit at start,
since it holds a descriptor per connection and per disk cache file and a mount runs for weeks."""

import resource

from helpers import run


def limits(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), (resource.RLIM_INFINITY if hard == "unlimited" else int(hard))
    raise AssertionError("no open-file limit in /proc/PID/limits")


def test_the_open_file_limit_is_raised_to_the_hard_limit(fake_factory, mount_factory):
    fake = fake_factory()
    fake.add_file("/a.txt", b"a\n")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = min(soft, 256, hard)
    # The daemon starts with a low soft limit, as under a login shell's default of 1024.
    previous = (soft, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        m = mount_factory(fake)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, previous)
    assert run("cat", f"{m.path}/a.txt").stdout == b"a\n"
    got_soft, got_hard = limits(m.process.pid)
    assert got_hard == hard
    assert got_soft == min(hard, 1 << 20)
