"""Injected faults: each kind, counting (after/count), route matching, stats/log."""

import http.client
import json
import socket
import time

import pytest


def test_429json(fd):
    fd.add_fault("files/list_folder", "429json", retry_after=3)
    r = fd.rpc("files/list_folder", {"path": ""})
    assert r.status == 429
    assert r.headers["content-type"] == "application/json"
    assert r.headers["retry-after"] == "3"
    assert r.json() == {"error_summary": "too_many_requests/..",
                        "error": {"reason": {".tag": "too_many_requests"}, "retry_after": 3}}
    assert fd.rpc("files/list_folder", {"path": ""}).status == 200  # count defaults to 1


def test_429text(fd):
    fd.add_fault("*", "429text", retry_after=2)
    r = fd.rpc("users/get_current_account", None)
    assert r.status == 429
    assert r.headers["content-type"].startswith("text/plain")
    assert r.body == b"too_many_requests" and r.headers["retry-after"] == "2"


@pytest.mark.parametrize("kind", ["500", "503"])
def test_5xx(fd, kind):
    fd.add_fault("files/get_metadata", kind)
    r = fd.rpc("files/get_metadata", {"path": "/x"})
    assert r.status == int(kind)
    assert "x-dropbox-request-id" in r.headers and "date" in r.headers


def test_probability_fails_about_that_share_repeatably(fd):
    def run():
        fd.clear_faults()
        fd.add_faults([{"route": "files/get_metadata", "kind": "500", "count": 0, "probability": 0.25, "seed": 7}])
        return [fd.rpc("files/get_metadata", {"path": "/x"}).status for _ in range(400)]

    first = run()
    failed = first.count(500)
    assert 60 <= failed <= 140, failed
    assert run() == first, "the same seed gives the same faults"
    rule = fd.faults()[0]
    assert rule["probability"] == 0.25 and rule["fired"] == failed


@pytest.mark.parametrize("p", [0, -1, 1.5, "x"])
def test_probability_out_of_range_is_refused(fd, p):
    with pytest.raises(Exception):
        fd.add_faults([{"route": "*", "kind": "500", "probability": p}])


def test_after_and_count(fd):
    fd.add_fault("files/list_folder", "500", after=2, count=3)
    got = [fd.rpc("files/list_folder", {"path": ""}).status for _ in range(7)]
    assert got == [200, 200, 500, 500, 500, 200, 200]
    # other routes unaffected
    assert fd.rpc("users/get_space_usage", None).status == 200
    rules = fd.faults()
    assert rules[0]["fired"] == 3 and rules[0]["seen"] == 7


def test_count_zero_means_forever_and_clear(fd):
    fd.add_fault("*", "503", count=0)
    assert all(fd.rpc("files/list_folder", {"path": ""}).status == 503 for _ in range(5))
    cleared = fd.clear_faults()
    assert [(r["route"], r["seen"], r["fired"]) for r in cleared] == [("*", 5, 5)]
    assert fd.rpc("files/list_folder", {"path": ""}).status == 200
    assert fd.faults() == [] and fd.clear_faults() == []


def test_reset_sends_rst(fd):
    fd.add_fault("files/list_folder", "reset")
    conn = http.client.HTTPConnection("127.0.0.1", fd.port, timeout=5)
    conn.request("POST", "/2/files/list_folder", b'{"path":""}',
                 {"Authorization": "Bearer test-token", "Content-Type": "application/json"})
    with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected, ConnectionAbortedError)) as e:
        conn.getresponse()
    conn.close()
    # A RST (not a clean FIN) shows up as ConnectionResetError on Linux.
    assert isinstance(e.value, ConnectionResetError)
    assert fd.rpc("files/list_folder", {"path": ""}).status == 200


def test_stall(fd):
    fd.add_fault("files/list_folder", "stall", stall_seconds=1.5)
    conn = http.client.HTTPConnection("127.0.0.1", fd.port, timeout=0.5)
    conn.request("POST", "/2/files/list_folder", b'{"path":""}',
                 {"Authorization": "Bearer test-token", "Content-Type": "application/json"})
    with pytest.raises(socket.timeout):
        conn.getresponse()
    conn.close()
    fd.add_fault("files/list_folder", "stall", stall_seconds=0.5)
    t0 = time.monotonic()
    r = fd.rpc("files/list_folder", {"path": ""})
    assert r.status == 200 and time.monotonic() - t0 >= 0.45


def test_hold_until_released(fd):
    """A held request answers only once released, whenever that is; the release names its route."""
    import threading
    fd.add_fault("files/list_folder", "hold", hold_seconds=30)
    fd.add_fault("files/get_metadata", "hold", hold_seconds=30)
    got = {}
    t = threading.Thread(target=lambda: got.setdefault("r", fd.rpc("files/list_folder", {"path": ""})))
    t.start()
    deadline = time.monotonic() + 10
    while not any(r["fired"] for r in fd.faults() if r["route"] == "files/list_folder"):
        assert time.monotonic() < deadline, "the request never reached the fake"
        time.sleep(0.01)
    t.join(0.3)
    assert t.is_alive(), "a held request must not be answered before its release"
    assert [r["route"] for r in fd.release_holds("files/list_folder")] == ["files/list_folder"]
    t.join(10)
    assert not t.is_alive() and got["r"].status == 200
    assert any(r["route"] == "files/get_metadata" and r["fired"] == 0 for r in fd.faults()), "still armed"
    assert fd.rpc("files/list_folder", {"path": ""}).status == 200


def test_stall_close(fd):
    fd.add_fault("*", "stall", stall_seconds=0.2, close=True)
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        fd.rpc("files/list_folder", {"path": ""})


def test_truncate(fd):
    data = bytes(range(256)) * 100
    fd.add_file("/t.bin", data)
    fd.add_fault("files/download", "truncate", truncate_at=1000)
    conn = http.client.HTTPConnection("127.0.0.1", fd.port, timeout=5)
    conn.request("POST", "/2/files/download", b"",
                 {"Authorization": "Bearer test-token", "Dropbox-API-Arg": '{"path":"/t.bin"}'})
    r = conn.getresponse()
    assert r.status == 200 and int(r.getheader("Content-Length")) == len(data)
    with pytest.raises(http.client.IncompleteRead) as e:
        r.read()
    assert len(e.value.partial) == 1000 and e.value.partial == data[:1000]
    conn.close()
    assert fd.download("/t.bin").body == data


def test_malformed_json(fd):
    fd.add_fault("files/list_folder", "malformed_json")
    r = fd.rpc("files/list_folder", {"path": ""})
    assert r.status == 200 and r.headers["content-type"] == "application/json"
    with pytest.raises(ValueError):
        json.loads(r.body)
    fd.add_file("/m.txt", b"m")
    fd.add_fault("files/download", "malformed_json")
    r = fd.download("/m.txt")
    assert r.status == 200 and r.body == b"m"
    with pytest.raises(ValueError):
        json.loads(r.headers["dropbox-api-result"])


def test_expired_token_fault(fd):
    fd.add_fault("*", "expired_token")
    r = fd.rpc("files/list_folder", {"path": ""})
    assert r.status == 401 and r.json()["error"] == {".tag": "expired_access_token"}


def test_fault_from_cli(start):
    f = start("--quiet", "--fault", json.dumps({"route": "files/list_folder", "kind": "500"}))
    assert f.rpc("files/list_folder", {"path": ""}).status == 500
    assert f.rpc("files/list_folder", {"path": ""}).status == 200


def test_several_rules(fd):
    fd.add_faults([{"route": "files/list_folder", "kind": "500"},
                   {"route": "files/list_folder", "kind": "503", "after": 1}])
    assert [fd.rpc("files/list_folder", {"path": ""}).status for _ in range(3)] == [500, 503, 200]


def test_stats_and_log(fd):
    fd.reset_stats()
    fd.add_file("/s.txt", b"12345")
    fd.rpc("files/list_folder", {"path": ""})
    fd.rpc("files/list_folder", {"path": ""}, token="bad")
    fd.download("/s.txt", range="bytes=1-2")
    s = fd.stats()
    assert s["total"] == 3
    assert s["routes"] == {"files/list_folder": 2, "files/download": 1}
    assert s["bytes_sent"] > 2
    # Only the page actually served counts (the 401 is no page).
    assert s["pages"] == {"files/list_folder": 1} and s["entries"] == {"files/list_folder": 1}
    log = fd.log()
    assert [(x["route"], x["status"]) for x in log] == [
        ("files/list_folder", 200), ("files/list_folder", 401), ("files/download", 206)]
    assert log[2]["range"] == "bytes=1-2" and log[0]["has_auth"] is True
    # A listing's path and recursive flag are kept (a benchmark tells a lookup's listing from the
    # fill's); other requests carry none.
    assert log[0]["arg"] == {"path": "", "recursive": False} and "arg" not in log[2]
    fd.rpc("files/list_folder", {"path": "/x", "recursive": True})
    assert fd.log()[-1]["arg"] == {"path": "/x", "recursive": True}
    assert "test-token" not in json.dumps(log) and "bad" not in json.dumps([x for x in log])
    fd.reset_stats()
    assert fd.stats() == {"total": 0, "routes": {}, "bytes_sent": 0, "pages": {}, "entries": {},
                          "thumbnails": {"success": 0, "failure": 0, "image_bytes": 0}}


def test_latency_and_bandwidth(fd):
    fd.add_file("/b.bin", size=200_000, seed=1)
    fd.config(latency_ms=300)
    t0 = time.monotonic()
    assert fd.rpc("files/list_folder", {"path": ""}).status == 200
    assert time.monotonic() - t0 >= 0.29
    fd.config(latency_ms=0, bandwidth=200_000)
    t0 = time.monotonic()
    r = fd.download("/b.bin")
    dt = time.monotonic() - t0
    assert len(r.body) == 200_000 and 0.8 < dt < 3
    fd.config(bandwidth=0)
    t0 = time.monotonic()
    fd.download("/b.bin")
    assert time.monotonic() - t0 < 0.5


# ---- hostile servers -----------------------------------------------------------------------

@pytest.mark.parametrize("kind,status", [("502html", 502), ("504html", 504)])
def test_gateway_errors_with_html(fd, kind, status):
    fd.add_fault("files/list_folder", kind)
    r = fd.rpc("files/list_folder", {"path": ""})
    assert r.status == status
    assert r.headers["content-type"].startswith("text/html") and b"<html>" in r.body


def test_flip_damages_one_byte_keeping_the_length(fd):
    data = bytes(range(256)) * 40
    fd.add_file("/f.bin", data)
    fd.add_fault("files/download", "flip", flip_at=1000)
    r = fd.download("/f.bin")
    assert r.status == 200 and len(r.body) == len(data)
    assert [i for i in range(len(data)) if r.body[i] != data[i]] == [1000]
    assert fd.download("/f.bin").body == data  # count defaults to 1


def test_whole_200_ignores_the_range(fd):
    data = b"0123456789" * 1000
    fd.add_file("/w.bin", data)
    fd.add_fault("files/download", "whole_200")
    r = fd.download("/w.bin", range="bytes=10-19")
    assert r.status == 200 and r.body == data
    assert fd.download("/w.bin", range="bytes=10-19").status == 206


def test_huge_size_in_listings(fd):
    fd.add_file("/big.bin", b"x")
    fd.add_fault("files/list_folder", "huge_size")
    r = fd.rpc("files/list_folder", {"path": ""})
    assert r.status == 200
    assert b'"size": 18446744073709551615' in r.body


def test_stuck_cursor(fd):
    for i in range(3):
        fd.add_file(f"/s{i}", b"x")
    page = fd.rpc("files/list_folder", {"path": "", "limit": 1}).json()
    fd.add_fault("files/list_folder/continue", "stuck_cursor", count=0)
    for _ in range(3):
        r = fd.rpc("files/list_folder/continue", {"cursor": page["cursor"]}).json()
        assert r == {"entries": [], "cursor": page["cursor"], "has_more": True}


def test_drip_and_stall_body_are_slow_but_whole(fd):
    data = b"abcdefgh"
    fd.add_file("/d.bin", data)
    fd.add_fault("files/download", "drip", drip_bytes=2, drip_seconds=0.2)
    start = time.monotonic()
    r = fd.download("/d.bin")
    assert r.body == data and time.monotonic() - start >= 0.6
    fd.add_fault("files/download", "stall_body", stall_seconds=0.5)
    start = time.monotonic()
    r = fd.download("/d.bin")
    assert r.body == data and time.monotonic() - start >= 0.5


def test_absurd_retry_after_is_sent_as_is(fd):
    fd.add_fault("files/list_folder", "429json", retry_after=1e10)
    r = fd.rpc("files/list_folder", {"path": ""})
    assert r.status == 429 and r.json()["error"]["retry_after"] == 10_000_000_000
    assert r.headers["retry-after"] == "10000000000"


def test_route_error_with_a_given_summary(fd):
    fd.add_fault("files/list_folder", "409json", error_summary="other/" + "x" * 5000)
    r = fd.rpc("files/list_folder", {"path": ""})
    assert r.status == 409
    assert r.json() == {"error_summary": "other/" + "x" * 5000, "error": {".tag": "other"}}
    assert fd.rpc("files/list_folder", {"path": ""}).status == 200
