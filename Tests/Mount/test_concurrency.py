"""Several walkers at once on a cold mount: every one sees the whole, correct tree."""

import subprocess

from helpers import c_locale, expected_find_lines, expected_entries, normalise_find_lines


def test_four_concurrent_finds_agree(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "20000", "--big-folder", "5000", "--evil-names")
    entries = expected_entries(fake.tree(hashes=False))
    m = mount_factory(fake)
    procs = [subprocess.Popen(["find", m.path, "-printf", r"%y %s %P\n"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=c_locale()) for _ in range(4)]
    outputs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode(errors="replace")
        assert err == b""
        outputs.append(out)
    # Identical walks (readdir order included) ...
    assert all(o == outputs[0] for o in outputs[1:])
    # ... and correct.
    assert normalise_find_lines(outputs[0].split(b"\n")[:-1]) == expected_find_lines(entries)


def test_concurrent_listers_of_one_big_folder(fake_factory, mount_factory):
    """ls of the same 5,000-entry folder from eight processes while it is first listed."""
    fake = fake_factory("--big-folder", "5000")
    want = sorted(("file_%07d.dat" % i).encode() for i in range(5000))
    m = mount_factory(fake, "--no-prefetch")
    procs = [subprocess.Popen(["ls", "-f", f"{m.path}/big"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=c_locale()) for _ in range(8)]
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert sorted(set(out.split(b"\n")[:-1]) - {b".", b".."}) == want
    # Concurrent identical listings are coalesced: the folder's pages were fetched once.
    routes = fake.stats()["routes"]
    pages = routes.get("files/list_folder", 0) + routes.get("files/list_folder/continue", 0)
    assert pages <= 4, routes
