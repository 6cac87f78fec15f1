"""Listings under churn: while files are added, replaced and deleted remotely in many folders, two
`find` walks and an `ls -l` loop keep reading the mount (so readdir pieces, lookups and kernel cache
fills race the change feed and its invalidations). No walk may fail with EIO or ESTALE, and once
the changes stop, the mount must show exactly the remote tree within a few seconds: no stale
cached listing, no stale negative entry, no entry twice.
"""

import random
import threading
import time

from helpers import compare_records, expected_entries, find_records, poll_assert, run, wait_for_fill

SETTLE_SECONDS = 8.0  # the 5 s freshness promise plus the second invalidation delivery (1 s)


def test_the_mount_settles_to_the_remote_tree_after_churn(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "4000", "--folders", "400")
    m = mount_factory(fake)
    wait_for_fill(m.path, fake)
    compare_records(find_records(m.path), expected_entries(fake.tree(hashes=False)))
    folders = sorted(e["path_display"] for e in fake.tree(hashes=False) if e["tag"] == "folder")
    rng = random.Random(20261201)
    targets = rng.sample(folders, 40)

    stop = threading.Event()
    failures = []

    def keep_reading(command):
        while not stop.is_set():
            r = run(*command, timeout=60)
            for bad in (b"Input/output error", b"Stale file handle"):
                if bad in r.stderr:
                    failures.append(r.stderr.decode(errors="replace")[:500])

    readers = [
        threading.Thread(target=keep_reading, args=(["find", m.path],)),
        threading.Thread(target=keep_reading, args=(["find", m.path, "-newer", m.path],)),
        threading.Thread(target=keep_reading, args=(["ls", "-lR", m.path],)),
    ]
    for t in readers:
        t.start()
    added = []
    try:
        for i in range(160):
            folder = rng.choice(targets)
            action = rng.random()
            if action < 0.5 or not added:
                path = f"{folder}/churn {i}.txt"
                fake.add_file(path, f"version 1 of {i}\n".encode())
                added.append(path)
            elif action < 0.75:
                fake.add_file(rng.choice(added), f"replaced at {i}\n".encode())
            else:
                fake.delete(added.pop(rng.randrange(len(added))))
            time.sleep(rng.uniform(0, 0.03))
    finally:
        stop.set()
        for t in readers:
            t.join(timeout=120)
    assert not failures, failures[:3]

    tree = fake.tree(hashes=False)
    poll_assert(lambda: compare_records(find_records(m.path), expected_entries(tree)),
                timeout=SETTLE_SECONDS, interval=0.2, what="the mount to show the remote tree after the churn")
    # Every file that still exists reads its latest bytes.
    for path in added[-10:]:
        assert run("cat", m.path + path).stdout == fake.content(path)
