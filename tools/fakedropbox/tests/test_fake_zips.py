"""files/download_zip: a folder's files in one zip, each member's bytes the file's, with Dropbox's
documented limits (fewer than 10,000 entries, no Range) and lookup errors."""

import io
import zipfile

from fakedropbox import zips


def test_a_folder_comes_as_one_zip_of_its_files(fd):
    fd.add_file("/Work/a.txt", b"alpha")
    fd.add_file("/Work/sub/b.bin", size=70000, seed=3)
    fd.add_file("/Work/sub/deeper/c.txt", b"")
    fd.add_file("/Other/x.txt", b"not in the zip")
    r = fd.download("/work", route="files/download_zip")
    assert r.status == 200, r.text
    assert r.result["metadata"][".tag"] == "folder" and r.result["metadata"]["name"] == "Work"
    z = zipfile.ZipFile(io.BytesIO(r.body))
    files = {i.filename: z.read(i) for i in z.infolist() if not i.is_dir()}
    assert files == {"Work/a.txt": b"alpha", "Work/sub/b.bin": fd.content("/Work/sub/b.bin"),
                     "Work/sub/deeper/c.txt": b""}
    assert {i.filename for i in z.infolist() if i.is_dir()} == {"Work/", "Work/sub/", "Work/sub/deeper/"}


def test_lookup_errors_and_a_file_path(fd):
    fd.add_file("/f.txt", b"x")
    r = fd.download("/nope", route="files/download_zip")
    assert r.status == 409 and r.json()["error"] == {".tag": "path", "path": {".tag": "not_found"}}
    r = fd.download("/f.txt", route="files/download_zip")
    assert r.status == 409 and r.json()["error"] == {".tag": "path", "path": {".tag": "not_folder"}}


def test_too_many_entries_is_refused(fd):
    """Dropbox's limit: fewer than 10,000 entries in all, the folder itself counted."""
    assert zips.MAX_ENTRIES == 10_000
    for i in range(9_998):
        fd.add_file(f"/Many/f{i}.txt", b"")
    r = fd.download("/Many", route="files/download_zip")
    assert r.status == 200, r.text
    fd.add_file("/Many/one-more.txt", b"")
    r = fd.download("/Many", route="files/download_zip")
    assert r.status == 409 and r.json()["error"] == {".tag": "too_many_files"}


def test_zip_delay_holds_the_reply(fd):
    """zip_delay_ms (control config): the time the fake takes to make a zip, for benchmarks."""
    import time
    fd.add_file("/Slow/a.txt", b"a")
    assert fd.config(zip_delay_ms=300)["zip_delay_ms"] == 300
    started = time.monotonic()
    r = fd.download("/Slow", route="files/download_zip")
    assert r.status == 200 and time.monotonic() - started >= 0.3
    assert fd.config(zip_delay_ms=0)["zip_delay_ms"] == 0
