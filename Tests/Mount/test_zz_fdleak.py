import os, collections
from concurrent.futures import ThreadPoolExecutor
from helpers import wait_for_fill
from test_uptime import drop_kernel_caches, daemon_figures

def fds(pid):
    kinds = collections.Counter()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            t = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if "/content/" in t: t = "content:" + ("partial" if ".partial" in t else "entry") + (" (deleted)" if "deleted" in t else "")
        elif t.startswith("socket"): t = "socket"
        kinds[t] += 1
    return kinds

def test_fds(fake_factory, mount_factory):
    fake = fake_factory("--synthetic", "3000", "--folders", "60")
    m = mount_factory(fake)
    wait_for_fill(m.path, fake)
    files = [e["path_display"] for e in fake.tree(hashes=False) if e["tag"] == "file" and e.get("symlink_target") is None and e.get("is_downloadable", True) and "/ Nasty names" not in e["path_display"] and "/Unicode" not in e["path_display"]][:2500]
    def read_one(rel):
        try:
            with open(m.path + rel, "rb") as f:
                return len(f.read(4096))
        except FileNotFoundError:
            return 0
    with ThreadPoolExecutor(8) as pool:
        for r in range(4):
            sum(pool.map(read_one, files))
            drop_kernel_caches()
            import time; time.sleep(2)
            print(r, daemon_figures(m)["fds"], fds(m.process.pid).most_common(6))
    assert False
