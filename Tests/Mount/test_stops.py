"""Hard stops under load: 50 rounds of a mount with
8 readers blocked on stalled downloads, 4 walkers, and either the whole-account listing stalled in
the middle or a disk cache file being written, stopped by SIGTERM, `fusermount3 -u -z` or SIGKILL.
Each time the daemon ends within 5 s (exit 0; after SIGKILL the guard detaches the mount), never
by a crash, the readers and walkers get an error instead of hanging, and the next mount on the same
folder, made at once, serves exact bytes.
"""

import os
import signal
import subprocess
import time

import pytest

from helpers import faults_fired, is_mounted, run, start_blocked_reader, sync_status, wait_until

MiB = 1 << 20
ROUNDS = int(os.environ.get("DROPBOXFS_STOP_ROUNDS", "50"))
STOPS = ["TERM", "lazy", "KILL"]
LOADS = ["fill", "disk-write"]


def ended_within(processes, seconds):
    deadline = time.monotonic() + seconds
    late = []
    for p in processes:
        try:
            p.wait(timeout=max(0.05, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            late.append(p.args[:4])
            p.kill()
            p.wait()
    return late


@pytest.fixture
def account(fake_factory):
    fake = fake_factory("--synthetic", "3000")
    for i in range(8):
        fake.add_file(f"/stops/f{i}.bin", size=4 * MiB + i, seed=50 + i)
    fake.add_file("/stops/big.bin", size=24 * MiB, seed=99)
    fake.add_file("/stops/check.bin", size=MiB + 7, seed=7)
    return fake


def test_fifty_hard_stops_under_load(account, mount_factory, tmp_path):
    fake = account
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    cache = tmp_path / "xdg-cache" / "dropboxfs" / "content"
    check = fake.content("/stops/check.bin")
    for round in range(ROUNDS):
        stop, load = STOPS[round % 3], LOADS[(round // 3) % 2]
        what = f"round {round} ({load}, {stop})"
        fake.clear_faults()
        fake.config(bandwidth=0)
        args = ["--no-persist"] if load == "fill" else []
        if load == "fill":
            # The whole-account listing gets its first page, then stalls.
            fake.add_fault("files/list_folder/continue", "stall", stall_seconds=60, count=0)
        m = mount_factory(fake, *args, mountpoint=mountpoint)
        # The previous stop left nothing behind: this mount serves exact bytes at once.
        with open(f"{m.path}/stops/check.bin", "rb") as f:
            assert f.read() == check, what
        procs = []
        if load == "disk-write":
            fake.config(bandwidth=4 * MiB)
            procs.append(start_blocked_reader(f"{m.path}/stops/big.bin"))
            wait_until(lambda: any(n.startswith(".partial-") for n in os.listdir(cache)), timeout=15,
                       message=f"{what}: a disk cache file being written")
        fake.add_fault("files/download", "stall", stall_seconds=60, count=0)
        readers = [start_blocked_reader(f"{m.path}/stops/f{i}.bin") for i in range(8)]
        # At most 8 requests run at once (the pacer): the stalled listing or the big file's download
        # may hold some of them, so the other readers wait for a slot, which is as blocked.
        wait_until(lambda: faults_fired(fake, "files/download") >= 6, timeout=15,
                   message=f"{what}: the readers' downloads reaching the server")
        walkers = [subprocess.Popen(["find", m.path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                   for _ in range(4)]
        time.sleep(0.1)  # the walkers are inside the mount (nothing to observe from outside)
        if load == "fill":
            assert sync_status(m.path)["phase"] == "filling", what

        started = time.monotonic()
        if stop == "TERM":
            m.process.send_signal(signal.SIGTERM)
        elif stop == "lazy":
            assert run("fusermount3", "-u", "-z", m.path, timeout=10).returncode == 0, what
        else:
            m.process.send_signal(signal.SIGKILL)
        try:
            code = m.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            m.process.kill()
            raise AssertionError(f"{what}: the daemon was still running 5 s after the stop:\n{m.log_text()[-3000:]}")
        if stop == "KILL":
            assert code == -signal.SIGKILL, (what, code)
            wait_until(lambda: not is_mounted(m.path), timeout=5, message=f"{what}: the guard to detach the mount")
        else:
            assert code == 0, (what, code, m.log_text()[-3000:])
            assert time.monotonic() - started < 5, what
        late = ended_within(readers + procs + walkers, 5)
        assert not late, f"{what}: still running 5 s after the stop: {late}"
        for r in readers:
            assert r.returncode == 4, (what, r.stdout.read())  # an error, not bytes and not a hang
        assert not any(n.startswith("core") for n in os.listdir(tmp_path)), what
        assert not is_mounted(m.path), what
        m.unmount()
    fake.clear_faults()
