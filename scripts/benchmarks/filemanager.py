"""A real file manager on a dropboxfs mount (scripts/bench-filemanager): what showing a folder of
photos in icon view costs, with the thumbnails dropboxfs writes and without them.

Starts the fake Dropbox server with --photos N (default 200: /Camera Uploads/IMG_0001.jpg ...,
2-6 MiB each, plus PANO_0001.jpg, too large for Dropbox's thumbnails, and notes.txt), then, once
with thumbnails (the default) and once with --no-thumbnails, each on a fresh mount with a fresh
HOME, XDG_CACHE_HOME (shared by the daemon and the file manager), XDG_CONFIG_HOME and X server:

  * starts Xvfb on a free display and the file manager on MNT/Camera Uploads in a 1280x800 icon
    view: `pcmanfm --no-desktop` (--file-manager pcmanfm, the default), or `thunar` on a private
    D-Bus session bus (--file-manager thunar), which starts xfconfd, gvfsd and tumblerd, Thunar's
    thumbnailer, for it;
  * waits until the fake's counters (requests, bytes sent, thumbnails) and the thumbnail cache
    stop changing for --settle seconds (default 3; capped at --max-wait, default 60 s);
  * takes a screenshot of the screen (ImageMagick `import -window root`);
  * reports the requests the fake served by route, the bytes it sent (all replies: downloads,
    listings and get_thumbnail_batch; the fake does not split them), the image bytes inside the
    thumbnail batches, the PNGs in $XDG_CACHE_HOME/thumbnails/normal and large (each written by
    dropboxfs, told by their Software chunk, or made by the file manager) and in x-large/,
    xx-large/, and the share of the folder's image bytes sent.

Target: with thumbnails on, at most 5% of the photos' bytes downloaded.

PCManFM: libfm's default thumbnail_max (2048 KiB) would stop PCManFM from thumbnailing most photos
itself; the run writes libfm.conf with --thumbnail-max (default 0: no limit), so that
--no-thumbnails shows what a file manager that thumbnails every photo costs.

Thunar: the run writes its xfconf channel (thunar.xml) with the icon view at --zoom percent
(default 150: 96-pixel icons; Thunar's own default is 100). Thunar uses normal (128-pixel)
thumbnails up to 150 % and large (256-pixel) ones from 200 % on; dropboxfs writes both (by default).
Thunar asks tumblerd only for the files on screen; tumblerd has no size limit by default.

Everything started (fake, daemons, mounts, Xvfb, the file manager, the bus and the services it
started) is stopped by its pid and removed on exit, also on errors and Ctrl-C. Needs FUSE
(fusermount3, /dev/fuse), Xvfb, ImageMagick, and pcmanfm, or thunar, tumbler and dbus-daemon
(Debian: apt-get install thunar tumbler dbus).

Usage: scripts/bench-filemanager [--file-manager pcmanfm|thunar] [--photos N] [--bin PATH]
                                 [--latency-ms MS] [--keep-screenshot PATH] [--settle S]
                                 [--max-wait S] [--thumbnail-max KB] [--zoom PERCENT]
                                 [--only thumbnails|no-thumbnails] [--debug] [--json FILE]
                                 [--mount-option OPTION ...]
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .harness import DEFAULT_BIN, FakeDropbox, Mount, Resources, install_signal_handlers, log, stop_process

FOLDER = "Camera Uploads"
IMAGE_EXT = (".jpg", ".jpeg", ".png", ".tif", ".tiff", ".gif", ".webp", ".ppm", ".bmp")
TARGET_SHARE = 0.05
WIN_W, WIN_H = 1280, 800


def start_xvfb(run_dir, cleanup):
    """Xvfb on a display it picks itself (-displayfd). Returns (proc, ':N')."""
    r, w = os.pipe()
    logf = open(run_dir / "xvfb.log", "wb")
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "%dx%dx24" % (WIN_W, WIN_H),
                             "-nolisten", "tcp"], pass_fds=(w,), stdin=subprocess.DEVNULL,
                            stdout=logf, stderr=logf, start_new_session=True)
    logf.close()
    os.close(w)
    cleanup.add("Xvfb %d" % proc.pid, lambda: stop_process(proc))
    data = b""
    deadline = time.monotonic() + 20
    while not data.endswith(b"\n"):
        if time.monotonic() > deadline or proc.poll() is not None:
            os.close(r)
            raise RuntimeError("Xvfb did not start (see %s)" % (run_dir / "xvfb.log"))
        chunk = os.read(r, 64)
        if not chunk:
            break
        data += chunk
    os.close(r)
    return proc, ":" + data.decode().strip()


def write_configs(config_home, thumbnail_max):
    """PCManFM's configuration (libfm.conf, pcmanfm.conf)."""
    (config_home / "libfm").mkdir(parents=True, exist_ok=True)
    (config_home / "libfm" / "libfm.conf").write_text(
        "[config]\nsingle_click=0\nthumbnail_local=1\nthumbnail_max=%d\n\n"
        "[ui]\nbig_icon_size=48\nthumbnail_size=128\nshow_thumbnail=1\n" % thumbnail_max)
    (config_home / "pcmanfm" / "default").mkdir(parents=True, exist_ok=True)
    (config_home / "pcmanfm" / "default" / "pcmanfm.conf").write_text(
        "[config]\nbm_open_method=0\n\n"
        "[ui]\nalways_show_tabs=0\nmaximized=1\nwin_width=%d\nwin_height=%d\nsplitter_pos=150\n"
        "side_pane_mode=places\nview_mode=icon\nshow_hidden=0\nsort=name;ascending;\n"
        "toolbar=newtab;navigation;home;\nshow_statusbar=1\n" % (WIN_W, WIN_H))


def write_thunar_configs(config_home, zoom):
    """Thunar's settings, in the file xfconfd reads at start (xfconfd is started by D-Bus on the
    run's own session bus, so it reads this run's XDG_CONFIG_HOME): icon view at `zoom`, a
    maximized window. Everything else is Thunar's default, thumbnails included
    (misc-thumbnail-mode THUNAR_THUMBNAIL_MODE_ONLY_LOCAL, no size limit)."""
    channel = config_home / "xfce4" / "xfconf" / "xfce-perchannel-xml"
    channel.mkdir(parents=True, exist_ok=True)
    props = [("last-view", "string", "ThunarIconView"),
             ("last-icon-view-zoom-level", "string", "THUNAR_ZOOM_LEVEL_%d_PERCENT" % zoom),
             ("last-window-maximized", "bool", "true"),
             ("last-window-width", "int", str(WIN_W)),
             ("last-window-height", "int", str(WIN_H)),
             ("last-show-hidden", "bool", "false"),
             ("last-sort-column", "string", "THUNAR_COLUMN_NAME"),
             ("last-sort-order", "string", "GTK_SORT_ASCENDING"),
             ("misc-show-about-templates", "bool", "false")]
    (channel / "thunar.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<channel name="thunar" version="1.0">\n'
        + "".join('  <property name="%s" type="%s" value="%s"/>\n' % p for p in props)
        + "</channel>\n")


def start_session_bus(run_dir, env, cleanup):
    """A private D-Bus session bus (Thunar finds xfconfd, gvfsd and tumblerd through it; D-Bus
    starts them with the bus's environment, i.e. this run's HOME and XDG_* folders). Returns
    (proc, address). The services it starts are not its children (it double-forks them): they are
    told by DBUS_STARTER_ADDRESS in their environment, and stopped by pid before the bus."""
    r, w = os.pipe()
    logf = open(run_dir / "dbus.log", "wb")
    proc = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--nopidfile",
                             "--print-address=%d" % w], pass_fds=(w,), stdin=subprocess.DEVNULL,
                            stdout=logf, stderr=logf, env=env, start_new_session=True)
    logf.close()
    os.close(w)
    cleanup.add("dbus-daemon %d" % proc.pid, lambda: stop_process(proc))
    with os.fdopen(r, "rb") as f:
        address = f.readline().decode().strip()
    if not address:
        raise RuntimeError("dbus-daemon did not start (see %s)" % (run_dir / "dbus.log"))
    cleanup.add("services of dbus-daemon %d" % proc.pid, lambda: stop_pids(bus_services(address)))
    return proc, address


def bus_services(address):
    """{pid: comm} of the live processes the bus at `address` started."""
    mark = b"DBUS_STARTER_ADDRESS=" + address.encode() + b"\0"
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if mark not in (d / "environ").read_bytes():
                continue
            stat = (d / "stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] != "Z":
            found[int(d.name)] = (d / "comm").read_text().strip() if (d / "comm").exists() else "?"
    return found


def stop_pids(pids, grace=5.0):
    """SIGTERM these processes, SIGKILL those still there after `grace` s."""
    pids = list(pids)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if alive(p)]
        time.sleep(0.1)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def become_subreaper():
    """Make the services a bus double-forks our descendants (PR_SET_CHILD_SUBREAPER) rather than
    init's, so that reap_orphans() can collect them: a container's init may not."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
    except Exception:
        pass


def reap_orphans():
    """Collect the exited orphans left to us (after every Popen of ours has been waited for)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def alive(pid):
    try:
        stat = Path("/proc/%d/stat" % pid).read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def made_by(folder):
    """(PNGs in folder written by dropboxfs, by others)"""
    ours = theirs = 0
    if folder.is_dir():
        for p in folder.glob("*.png"):
            try:
                head = p.read_bytes()[:4096]
            except OSError:
                continue
            if b"Software\x00dropboxfs" in head:
                ours += 1
            else:
                theirs += 1
    return ours, theirs


def thumbnail_counts(cache_home):
    """{"normal": (by dropboxfs, by others), "large": (...), "bigger": in x-large/ and xx-large/,
    "fail": in fail/}"""
    root = cache_home / "thumbnails"
    bigger = sum(sum(1 for _ in (root / d).glob("*.png")) for d in ("x-large", "xx-large")
                 if (root / d).is_dir())
    fail = sum(1 for _ in (root / "fail").rglob("*.png")) if (root / "fail").is_dir() else 0
    return {"normal": made_by(root / "normal"), "large": made_by(root / "large"), "bigger": bigger,
            "fail": fail}


def download_requests(routes):
    return sum(n for r, n in routes.items() if "download" in r)


def wait_quiet(fake, cache_home, settle, max_wait, min_wait=5.0):
    """Until the fake's stats and the thumbnail cache have not changed for `settle` s."""
    t0 = time.monotonic()
    last, since = None, t0
    while True:
        st = fake.stats()
        key = (st["total"], st["bytes_sent"], json.dumps(st["thumbnails"], sort_keys=True),
               thumbnail_counts(cache_home))
        now = time.monotonic()
        if key != last:
            last, since = key, now
        elif now - since >= settle and now - t0 >= min_wait:
            return now - t0, since - t0, False
        if now - t0 >= max_wait:
            return now - t0, since - t0, True
        time.sleep(0.25)


def one_run(args, binary, fake, workdir, label, extra):
    run_dir = workdir / label
    home, cache_home, config_home = run_dir / "home", run_dir / "xdg-cache", run_dir / "xdg-config"
    runtime, cache_dir = run_dir / "xdg-runtime", run_dir / "cache"
    for d in (home, cache_home, config_home, runtime, cache_dir):
        d.mkdir(parents=True)
    runtime.chmod(0o700)
    if args.file_manager == "thunar":
        write_thunar_configs(config_home, args.zoom)
    else:
        write_configs(config_home, args.thumbnail_max)
    env = dict(os.environ)
    env.update(HOME=str(home), XDG_CACHE_HOME=str(cache_home), XDG_CONFIG_HOME=str(config_home),
               XDG_RUNTIME_DIR=str(runtime))
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    cleanup = Resources("bench-filemanager")
    try:
        # The daemon shares the run's HOME and XDG folders with the file manager: it writes the
        # thumbnails the file manager reads ($XDG_CACHE_HOME/thumbnails).
        daemon = Mount(binary, fake, run_dir, "daemon", cache_dir=cache_dir, env=env, resources=cleanup,
                       extra=(["--debug"] if args.debug else []) + args.mount_option + list(extra))
        mnt = Path(daemon.mnt)
        # Let the mount's own fill (prefetch) finish, then count from zero.
        wait_quiet(fake, cache_home, 1.0, 30, min_wait=1.0)
        fake.reset_stats()

        xvfb, display = start_xvfb(run_dir, cleanup)
        penv = dict(env, DISPLAY=display)
        bus = bus_address = None
        if args.file_manager == "thunar":
            # No accessibility bus (at-spi would start one more service per run).
            penv["NO_AT_BRIDGE"] = "1"
            bus, bus_address = start_session_bus(run_dir, penv, cleanup)
            penv["DBUS_SESSION_BUS_ADDRESS"] = bus_address
            command = ["thunar", str(mnt / FOLDER)]
        else:
            command = ["pcmanfm", "--no-desktop", str(mnt / FOLDER)]
        name = command[0]
        plog = open(run_dir / (name + ".log"), "wb")
        t0 = time.monotonic()
        fm = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=plog, stderr=plog, env=penv,
                              start_new_session=True)
        plog.close()
        cleanup.add("%s %d" % (name, fm.pid), lambda: stop_process(fm, grace=5))
        waited, last_change, capped = wait_quiet(fake, cache_home, args.settle, args.max_wait)
        if fm.poll() is not None:
            raise RuntimeError("%s exited with %s (see %s)" % (name, fm.returncode, run_dir / (name + ".log")))
        services = sorted(bus_services(bus_address).values()) if bus is not None else []
        shot = run_dir / "screenshot.png"
        subprocess.run(["import", "-display", display, "-window", "root", str(shot)], env=penv,
                       check=True, capture_output=True, timeout=60)
        st = fake.stats()
        counts = thumbnail_counts(cache_home)
        return {"label": label, "options": list(extra), "waited_s": round(waited, 2),
                "last_change_s": round(last_change, 2), "capped": capped,
                "routes": st["routes"], "requests": st["total"], "bytes_sent": st["bytes_sent"],
                "download_requests": download_requests(st["routes"]),
                "thumbnail_batch_requests": st["routes"].get("files/get_thumbnail_batch", 0),
                "thumbnail_entries": st["thumbnails"],
                "thumbnails_dropboxfs": counts["normal"][0], "thumbnails_file_manager": counts["normal"][1],
                "large_dropboxfs": counts["large"][0], "large_file_manager": counts["large"][1],
                "thumbnails_larger": counts["bigger"], "thumbnails_fail": counts["fail"],
                "bus_services": services, "screenshot": str(shot), "run_dir": str(run_dir)}
    finally:
        cleanup.cleanup()


FILE_MANAGERS = {"pcmanfm": ("PCManFM", "pcmanfm"), "thunar": ("Thunar", "thunar")}


def package_version(package):
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "(version unknown)"


def fmt_bytes(n):
    return "%.1f MB" % (n / 1e6) if n >= 1e5 else "%.1f kB" % (n / 1e3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--photos", type=int, default=200)
    ap.add_argument("--bin", default=str(DEFAULT_BIN))
    ap.add_argument("--latency-ms", type=int, default=30)
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--max-wait", type=float, default=60.0)
    ap.add_argument("--file-manager", choices=sorted(FILE_MANAGERS), default="pcmanfm")
    ap.add_argument("--thumbnail-max", type=int, default=0,
                    help="PCManFM: libfm thumbnail_max in KiB (0: no limit)")
    ap.add_argument("--zoom", type=int, default=150, choices=(50, 75, 100, 150, 200),
                    help="Thunar: icon view zoom level in percent (default 150: 96-pixel icons, the "
                    "largest that use normal (128-pixel) thumbnails; from 200 on Thunar uses large ones)")
    ap.add_argument("--only", choices=("thumbnails", "no-thumbnails"), help="one run only")
    ap.add_argument("--mount-option", action="append", default=[], metavar="OPTION",
                    help="one more argument for `dropboxfs mount`, in both runs (repeat it for more), "
                    "e.g. --mount-option=--thumbnail-sizes=normal")
    ap.add_argument("--debug", action="store_true", help="run the daemons with --debug (daemon.log)")
    ap.add_argument("--keep-screenshot", metavar="PATH")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    binary = Path(args.bin)
    if not binary.exists():
        sys.exit("no %s: build it with `swift build -c release --scratch-path .build-rel --product dropboxfs`"
                 % binary)
    title, package = FILE_MANAGERS[args.file_manager]
    tools = ["Xvfb", args.file_manager, "import", "fusermount3"]
    if args.file_manager == "thunar":
        tools += ["dbus-daemon"]
    for tool in tools:
        if shutil.which(tool) is None:
            sys.exit("needs %s" % tool)
    install_signal_handlers()

    become_subreaper()
    workdir = Path(tempfile.mkdtemp(prefix="bench-filemanager-"))
    fake = None
    try:
        fake = FakeDropbox.start("--quiet", "--photos", str(args.photos), "--latency-ms", str(args.latency_ms))
        prefix = "/" + FOLDER.lower() + "/"
        files = [e for e in fake.tree() if e["tag"] == "file" and e["path_lower"].startswith(prefix)]
        images = [e for e in files if e["path_lower"].endswith(IMAGE_EXT)]
        photos = [e for e in images if e["name"].startswith("IMG_")]
        image_bytes = sum(e["size"] or 0 for e in images)
        photo_bytes = sum(e["size"] or 0 for e in photos)
        versions = "%s %s" % (title, package_version(package))
        if args.file_manager == "thunar":
            versions += ", tumbler %s" % package_version("tumbler")
        log("dropboxfs file manager bench: %s, %d photos (%s) + %d other images (%s), latency %d ms"
            % (versions,
               len(photos), fmt_bytes(photo_bytes), len(images) - len(photos),
               fmt_bytes(image_bytes - photo_bytes), args.latency_ms))
        results = []
        for label, extra in (("thumbnails", []), ("no-thumbnails", ["--no-thumbnails"])):
            if args.only and label != args.only:
                continue
            log("run: %s ..." % label)
            results.append(one_run(args, binary, fake, workdir, label, extra))
    finally:
        if fake is not None:
            fake.stop()
        reap_orphans()

    log()
    heads = {"thumbnails": "thumbnails on", "no-thumbnails": "--no-thumbnails"}
    rows = [("",) + tuple(heads[r["label"]] for r in results)]
    def row(name, fn):
        rows.append((name,) + tuple(fn(r) for r in results))
    row("settled after", lambda r: "%.1f s%s" % (r["last_change_s"], " (cap hit)" if r["capped"] else ""))
    row("requests (all)", lambda r: str(r["requests"]))
    row("download requests", lambda r: str(r["download_requests"]))
    row("get_thumbnail_batch requests", lambda r: str(r["thumbnail_batch_requests"]))
    row("  entries ok / failed", lambda r: "%d / %d" % (r["thumbnail_entries"]["success"],
                                                         r["thumbnail_entries"]["failure"]))
    row("  thumbnail image bytes", lambda r: fmt_bytes(r["thumbnail_entries"]["image_bytes"]))
    row("bytes sent (all replies)", lambda r: fmt_bytes(r["bytes_sent"]))
    row("share of the image bytes", lambda r: "%.2f %%" % (100.0 * r["bytes_sent"] / image_bytes))
    maker = "Thunar/tumbler" if args.file_manager == "thunar" else title
    row("normal thumbnails by dropboxfs", lambda r: str(r["thumbnails_dropboxfs"]))
    row("normal thumbnails by %s" % maker, lambda r: str(r["thumbnails_file_manager"]))
    row("large thumbnails by dropboxfs", lambda r: str(r["large_dropboxfs"]))
    row("large thumbnails by %s" % maker, lambda r: str(r["large_file_manager"]))
    row("  larger ones (x-large/ ...)", lambda r: str(r["thumbnails_larger"]))
    row("failed thumbnails (fail/)", lambda r: str(r["thumbnails_fail"]))
    if args.file_manager == "thunar":
        row("tumblerd started", lambda r: "yes" if "tumblerd" in r["bus_services"] else "no")
    columns = len(rows[0])
    widths = [max(len(x[i]) for x in rows) for i in range(columns)]
    for x in rows:
        log("  ".join(x[i].ljust(widths[i]) if i == 0 else x[i].rjust(widths[i]) for i in range(columns)))
    for r in results:
        log("%s routes: %s" % (r["label"], ", ".join("%s %d" % kv for kv in sorted(r["routes"].items()))))
    if results[0]["label"] == "thumbnails":
        share = results[0]["bytes_sent"] / image_bytes
        log("target: thumbnails on sends at most %.0f %% of the image bytes (%s): %.2f %% -> %s"
            % (100 * TARGET_SHARE, fmt_bytes(image_bytes), 100 * share,
               "MET" if share <= TARGET_SHARE else "MISSED"))
    for r in results:
        log("screenshot (%s): %s" % (r["label"], r["screenshot"]))
    if args.keep_screenshot:
        shutil.copy(results[0]["screenshot"], args.keep_screenshot)
        log("thumbnails-on screenshot copied to %s" % args.keep_screenshot)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"file_manager": args.file_manager, "versions": versions, "photos": len(photos),
                       "photo_bytes": photo_bytes, "image_bytes": image_bytes,
                       "latency_ms": args.latency_ms, "results": results}, f, indent=1)
    log("work dir: %s" % workdir)

