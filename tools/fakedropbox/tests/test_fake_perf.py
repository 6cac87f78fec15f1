"""Speed: 2000-entry pages well under 100 ms, no Nagle stall on keep-alive."""

import http.client
import json
import time


def test_keepalive_no_nagle_stall(sample):
    conn = http.client.HTTPConnection("127.0.0.1", sample.port, timeout=10)
    h = {"Authorization": "Bearer test-token", "Content-Type": "application/json"}
    conn.request("POST", "/2/files/get_metadata", b'{"path":"/Documents"}', h)
    conn.getresponse().read()
    sock = conn.sock
    t0 = time.monotonic()
    for _ in range(50):
        conn.request("POST", "/2/files/get_metadata", b'{"path":"/Documents"}', h)
        r = conn.getresponse()
        assert r.status == 200
        r.read()
    dt = (time.monotonic() - t0) / 50
    assert conn.sock is sock, "connection must be reused (HTTP/1.1 keep-alive)"
    assert dt < 0.03, "%.1f ms per request" % (dt * 1000)  # a Nagle stall would be >= 40 ms
    conn.close()


def test_2000_entry_page_fast(start):
    f = start("--quiet", "--synthetic", "100", "--big-folder", "10000")
    conn = http.client.HTTPConnection("127.0.0.1", f.port, timeout=30)
    h = {"Authorization": "Bearer test-token", "Content-Type": "application/json"}
    body = json.dumps({"path": "/big", "limit": 2000}).encode()
    conn.request("POST", "/2/files/list_folder", body, h)  # warm (computes hashes)
    out = json.loads(conn.getresponse().read())
    times = []
    while out["has_more"]:
        t0 = time.monotonic()
        conn.request("POST", "/2/files/list_folder/continue", json.dumps({"cursor": out["cursor"]}).encode(), h)
        out = json.loads(conn.getresponse().read())
        times.append(time.monotonic() - t0)
        assert len(out["entries"]) in (2000, 0)
    # first time a page is served its hashes are computed; still fast
    assert max(times) < 0.5, times
    warm = []
    for _ in range(3):
        t0 = time.monotonic()
        conn.request("POST", "/2/files/list_folder", body, h)
        conn.getresponse().read()
        warm.append(time.monotonic() - t0)
    assert min(warm) < 0.1, warm
    conn.close()
