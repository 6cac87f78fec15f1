"""Command line entry point: python3 -m fakedropbox [flags] (see README.md).

Exists to parse flags, build the tree, start the server, print the
'fakedropbox listening on URL' line and write --port-file atomically.
"""

import argparse
import json
import os
import sys
import threading
import time

from .server import make_server
from .state import State
from .tree import Tree


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="fakedropbox", description="Fake Dropbox HTTP API v2 server")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    p.add_argument("--port-file", help="write the port here once accepting connections")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--root-dir", help="serve this local directory")
    src.add_argument("--synthetic", type=int, metavar="N", help="synthetic tree of about N entries")
    src.add_argument("--sample-account", action="store_true", help="demo account")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--folders", type=int, help="approximate folder count (default N/10)")
    p.add_argument("--top-folders", type=int, metavar="K",
                   help="--synthetic: at most about K folders directly under the root (the fixed "
                        "ones count; a folder that would go to the root goes under a random "
                        "existing folder of depth < 9 instead; folder and entry counts unchanged). "
                        "Default: no cap")
    p.add_argument("--big-folder", type=int, default=0, metavar="K", help="add /big with K files")
    p.add_argument("--evil-names", action="store_true", help="add entries a real Dropbox never sends")
    p.add_argument("--photos", type=int, default=0, metavar="N",
                   help="add /Camera Uploads with N photos IMG_0001.jpg... (2-6 MiB, synthetic bytes), "
                        "PANO_0001.jpg (over 20 MiB) and notes.txt (works with any source)")
    p.add_argument("--token", action="append", help="accepted access token (repeatable)")
    p.add_argument("--second-account", action="store_true",
                   help="also serve account b: another account id, its own (empty) tree, cursors "
                        "and contents, signed in to by --second-token; fill it through the control "
                        "API with ?account=b")
    p.add_argument("--second-token", action="append", metavar="T",
                   help="accepted access token of account b (repeatable; default test-token-b)")
    p.add_argument("--app-key", default="fakeappkey")
    p.add_argument("--access-token-ttl", type=float, default=14400)
    p.add_argument("--latency-ms", type=float, default=0)
    p.add_argument("--bandwidth", type=int, default=0, help="bytes/s per connection for download bodies")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--make-certs", metavar="DIR")
    p.add_argument("--quota-used", type=int)
    p.add_argument("--quota-allocated", type=int, default=2 * 1024 ** 4)
    p.add_argument("--team", action="store_true")
    p.add_argument("--fault", action="append", default=[], metavar="JSON",
                   help="install a fault rule at start (repeatable)")
    p.add_argument("--adversarial", metavar="MODES", default="",
                   help="comma-separated adversarial listing modes, or 'all' (see README)")
    p.add_argument("--adversarial-seed", type=int, default=1, metavar="S")
    p.add_argument("--max-page", type=int, default=0, metavar="N",
                   help="no list_folder or continue page holds more than N entries, whatever "
                        "limit the client asked: pages are min(limit, N) (adversarial repeats "
                        "and ghosts included). 0 = no cap")
    p.add_argument("--tiny-pages", metavar="START:COUNT",
                   help="pages START .. START+COUNT-1 of every listing hold 1 entry each (while "
                        "entries remain; adversarial 'pages' sizes overridden). Page 0 is the "
                        "list_folder reply, page i the i-th continue after it; a page with "
                        "has_more false ends the listing, and the next continue (deltas) is "
                        "page 0 again")
    p.add_argument("--page-cost-ms-per-1000", type=float, default=0, metavar="X",
                   help="every list_folder/continue page sleeps X * entries_in_page / 1000 ms in "
                        "its own request thread, after --latency-ms (an empty page: nothing)")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--exit-with-parent", type=int, default=0, metavar="PID",
                   help="exit once process PID is gone (the test run that started this server, "
                        "so a run killed by a timeout leaves no server behind)")
    a = p.parse_args(argv)
    from .adversarial import ModeError, parse_modes
    try:
        parse_modes(a.adversarial)
    except ModeError as e:
        p.error(str(e))
    from .paging import PagingError, parse_cost, parse_max_page, parse_tiny
    try:
        parse_tiny(a.tiny_pages)
        parse_max_page(a.max_page)
        parse_cost(a.page_cost_ms_per_1000)
    except PagingError as e:
        p.error(str(e))
    if a.photos < 0:
        p.error("--photos must be >= 0")
    if a.top_folders is not None:
        if a.synthetic is None:
            p.error("--top-folders goes with --synthetic")
        if a.top_folders < 1:
            p.error("--top-folders must be >= 1")
    if a.second_token and not a.second_account:
        p.error("--second-token goes with --second-account")
    if bool(a.tls_cert) != bool(a.tls_key):
        p.error("--tls-cert and --tls-key go together")
    if a.make_certs and a.tls_cert:
        p.error("--make-certs and --tls-cert are exclusive")
    return a


def build_tree(a):
    tree = Tree(seed=a.seed)
    if a.synthetic is not None:
        from .synth import build_synthetic
        build_synthetic(tree, a.synthetic, seed=a.seed, folders=a.folders, big_folder=a.big_folder,
                        top_folders=a.top_folders)
    elif a.sample_account:
        from .sample import build_sample
        build_sample(tree)
    elif a.root_dir:
        from .sample import build_from_dir
        if not os.path.isdir(a.root_dir):
            sys.exit("fakedropbox: --root-dir %s is not a directory" % a.root_dir)
        build_from_dir(tree, a.root_dir)
    if a.big_folder and a.synthetic is None:
        from .synth import _size
        import random
        r = random.Random(a.seed)
        big = tree.add_child(tree.root, "big", folder=True)
        for i in range(a.big_folder):
            tree.add_child(big, "file_%07d.dat" % i, size=_size(r))
    if a.photos:
        from .synth import add_photos
        add_photos(tree, a.photos, seed=a.seed)
    if a.evil_names:
        from .synth import add_evil
        add_evil(tree)
    if a.team:
        from .team import build_team_space
        build_team_space(tree)
    return tree


def write_port_file(path, port):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.replace(tmp, path)


def parent_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def watch_parent(pid, srv):
    """Stops `srv` once process `pid` is gone (checked every 0.5 s, in a daemon thread)."""
    was_parent = os.getppid() == pid

    def watch():
        # A dead parent that is not reaped yet still answers kill(0); a child re-parented away from
        # it has not.
        while parent_alive(pid) and (not was_parent or os.getppid() == pid):
            time.sleep(0.5)
        sys.stderr.write("fakedropbox: process %d is gone, exiting\n" % pid)
        srv.shutdown()
    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def main(argv=None):
    a = parse_args(argv)
    t0 = time.monotonic()
    tree = build_tree(a)
    st = State(tree, a, second_tree=Tree(seed=a.seed) if a.second_account else None)
    for spec in a.fault:
        st.faults.add(json.loads(spec))
    cert, key = a.tls_cert, a.tls_key
    if a.make_certs:
        from .certs import make_certs
        cert, key = make_certs(a.make_certs)
    srv = make_server(st, a.host, a.port, cert, key)
    port = srv.server_address[1]
    scheme = "https" if cert else "http"
    print("fakedropbox listening on %s://%s:%d" % (scheme, a.host, port), flush=True)
    if not a.quiet:
        sys.stderr.write("fakedropbox: %d entries, ready in %.2fs\n" % (len(tree.nodes) - 1, time.monotonic() - t0))
    if a.port_file:
        write_port_file(a.port_file, port)
    if a.exit_with_parent:
        watch_parent(a.exit_with_parent, srv)
    try:
        srv.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()


if __name__ == "__main__":
    main()
