"""files/download_zip: a folder's files as one zip (docs/DROPBOX-API.md, "A folder as one zip").

Exists so a client (or a benchmark's model of one) can weigh one request per folder against one per
file. What Dropbox documents is kept: fewer than 10,000 entries in all, files and folders and the
folder itself (``too_many_files``), total under 20 GB and no file of 4 GB or more (``too_large``),
no Range, and the reply's ``Dropbox-API-Result`` is ``{"metadata": FolderMetadata}``. What it does
not document is chosen here and stated: members are named ``<folder name>/<path below it>``, folders
have entries of their own (``name/``), files are stored uncompressed (any zip reader reads them;
Dropbox may deflate), and export-only documents and files Dropbox refuses to serve (restricted) are
left out. The zip is built in memory when asked, after ``zip_delay_ms`` (control config, default
0): Dropbox's time to make a zip is not known, so a benchmark can try several.

THREAD-SAFETY: the folder's files are collected under ``tree.lock``; their bytes are read and the
zip written outside it.
"""

import io
import time
import zipfile

from .httpio import Reply, header_json, lookup_error, route_error
from .routes_files import _check_read_path, _field, _resolve_read

MAX_ENTRIES = 10_000
MAX_TOTAL = 20 * 10**9
MAX_FILE = 4 * 2**30


def _collect(tree, folder):
    """[(relative path, node)] of every entry below ``folder``, folders first.  Lock held."""
    out = []
    stack = [("", folder)]
    while stack:
        prefix, node = stack.pop()
        for key in tree.sorted_keys(node):
            child = node.children[key]
            rel = prefix + child.name
            out.append((rel, child))
            if child.children is not None:
                stack.append((rel + "/", child))
    return out


def download_zip(st, req, arg):
    path = _check_read_path(_field(arg, "path", str, required=True))
    tree = st.tree
    view = req.view
    with tree.lock:
        kind, node = _resolve_read(st, view, path)
        if kind is None:
            return lookup_error(node)
        if kind != "live" or node.children is None:
            return lookup_error("not_folder")
        entries = _collect(tree, node)
        if len(entries) + 1 >= MAX_ENTRIES:  # the folder itself counts
            return route_error({".tag": "too_many_files"})
        files = [(rel, n) for rel, n in entries if n.children is None
                 and not (n.extra and ("export_as" in n.extra or n.extra.get("restricted")))]
        if sum(n.size for _, n in files) >= MAX_TOTAL or any(n.size >= MAX_FILE for _, n in files):
            return route_error({".tag": "too_large"})
        folders = [rel for rel, n in entries if n.children is not None]
        sources = [(rel, tree.source_of(n)) for rel, n in files]
        md = view.fix(tree.metadata(node))
        name = node.name or "Dropbox"
    if st.zip_delay_ms:
        time.sleep(st.zip_delay_ms / 1000.0)  # Dropbox making the zip (control "zip_delay_ms")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
        z.writestr(name + "/", b"")
        for rel in folders:
            z.writestr(name + "/" + rel + "/", b"")
        for rel, src in sources:
            with z.open(name + "/" + rel, "w", force_zip64=src.size >= 2**31) as out:
                for chunk in src.iter_range(0, src.size):
                    out.write(chunk)
    body = buf.getvalue()
    headers = [("Content-Type", "application/zip"),
               ("Dropbox-API-Result", header_json({"metadata": st.adv.fix_md(md)}))]
    return Reply(200, headers, stream=[body], length=len(body), throttle=True)


ROUTES = {
    "files/download_zip": ("download", "files.content.read", download_zip),
}
