"""df(1) on the mount reports the account's quota from users/get_space_usage."""

import os

from helpers import c_locale, run

BLOCK = 4096  # the mount's f_frsize
GIB = 1024 ** 3


def df_bytes(path):
    """(total, used, available) bytes as `df -B1 PATH` prints them."""
    r = run("df", "-B1", path, env=c_locale())
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert r.stderr == b""
    header, line = r.stdout.decode().splitlines()
    assert header.split()[:4] == ["Filesystem", "1B-blocks", "Used", "Available"]
    fields = line.split()
    assert fields[0] == "dropboxfs"
    assert fields[-1] == path
    return int(fields[1]), int(fields[2]), int(fields[3])


def test_df_shows_individual_quota(fake_factory, mount_factory):
    allocated, used = 10 * GIB, 3 * GIB + 5 * BLOCK
    fake = fake_factory("--quota-allocated", str(allocated), "--quota-used", str(used))
    fake.add_file("/a.txt", b"x")
    m = mount_factory(fake)
    assert df_bytes(m.path) == (allocated, used, allocated - used)
    # statvfs agrees, and names may be 255 bytes long.
    st = os.statvfs(m.path)
    assert st.f_frsize * st.f_blocks == allocated
    assert st.f_frsize * st.f_bavail == allocated - used
    assert st.f_namemax == 255
    # df -h prints something sensible too.
    r = run("df", "-h", m.path, env=c_locale())
    assert r.returncode == 0 and "10G" in r.stdout.decode()


def test_df_with_unaligned_numbers(fake_factory, mount_factory):
    allocated, used = 2 * 1024 ** 4 + 1000, 123456789
    fake = fake_factory("--quota-allocated", str(allocated), "--quota-used", str(used))
    m = mount_factory(fake)
    total, df_used, avail = df_bytes(m.path)
    assert total == allocated // BLOCK * BLOCK
    assert abs(avail - (allocated - used)) < BLOCK
    assert abs(df_used - used) < 2 * BLOCK


def test_df_used_defaults_to_the_tree_size(fake_factory, mount_factory):
    """Without --quota-used the fake reports the sum of its file sizes as used."""
    fake = fake_factory("--synthetic", "300", "--quota-allocated", str(GIB))
    used = sum(e["size"] for e in fake.tree(hashes=False) if e["tag"] == "file")
    m = mount_factory(fake)
    total, df_used, avail = df_bytes(m.path)
    assert total == GIB
    assert abs(avail - (GIB - used)) < BLOCK
    assert abs(df_used - used) < 2 * BLOCK


def test_df_with_team_space(fake_factory, mount_factory):
    """Team accounts: allocation {".tag": "team", used, allocated, user_within_team_space_allocated: 0}
    -> the team's allocation and the team's usage (the fake reports team used = 3 * used + 123456789)."""
    allocated, used = 50 * GIB, 7 * GIB
    fake = fake_factory("--team", "--quota-allocated", str(allocated), "--quota-used", str(used))
    fake.add_file("/team file.txt", b"shared\n")
    m = mount_factory(fake)
    team_used = used * 3 + 123456789
    total, df_used, avail = df_bytes(m.path)
    assert total == allocated
    assert abs(avail - (allocated - team_used)) < BLOCK
    assert abs(df_used - team_used) < 2 * BLOCK
    # The mount itself works on a team account.
    r = run("ls", m.path)
    assert r.returncode == 0 and b"team file.txt" in r.stdout


def test_df_when_over_quota_shows_nothing_available(fake_factory, mount_factory):
    allocated, used = GIB, 2 * GIB
    fake = fake_factory("--quota-allocated", str(allocated), "--quota-used", str(used))
    m = mount_factory(fake)
    total, df_used, avail = df_bytes(m.path)
    assert total == allocated
    assert avail == 0
