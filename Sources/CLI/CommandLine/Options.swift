// The one declaration of every command and option. The parser (ArgumentParser.swift), `--help`,
// the man page and the shell completions (Generators.swift) are all made from these lists; a test
// (Tests/Mount/test_options.py) checks that they agree.

enum Options {
    // ---- options several commands share ----------------------------------------------------------

    static let help = OptionSpec(name: "help", short: "h", help: "this text")
    static let profile = OptionSpec(
        name: "profile", value: "NAME",
        help: "use the account profile NAME (default $DROPBOXFS_PROFILE): its own sign-in "
            + "($XDG_CONFIG_HOME/dropboxfs/profiles/NAME), cache folder ($XDG_CACHE_HOME/dropboxfs/profiles/NAME), "
            + "log file and default mount point ~/dropbox-NAME; letters, digits, '-' and '_'",
        mountOption: true, completion: .profile)
    static let verbose = OptionSpec(name: "verbose", short: "v", help: "log more (debug lines); same as --log-level debug")
    static let quiet = OptionSpec(name: "quiet", short: "q", help: "log only warnings and errors; same as --log-level warning")
    static let apiURL = OptionSpec(
        name: "api-url", value: "URL", help: "Dropbox API base URL (default $DROPBOXFS_API_URL or https://api.dropboxapi.com)",
        mountOption: true)
    static let accessTokenFile = OptionSpec(
        name: "access-token-file", value: "FILE",
        help: "read the access token from FILE (default: $DROPBOXFS_ACCESS_TOKEN, then the sign-in stored by `dropboxfs auth`)",
        mountOption: true, completion: .file)

    // ---- commands --------------------------------------------------------------------------------

    static let auth = CommandSpec(
        name: "auth",
        summaries: [
            ("auth --app-key KEY", "sign in (once); stores a refresh token privately"),
            ("auth --sign-out", "revoke and delete the stored sign-in (--purge: and everything stored on disk)"),
        ],
        usage: [
            "dropboxfs auth [--app-key KEY] [--profile NAME]", "dropboxfs auth --sign-out [--purge] [--profile NAME]",
        ],
        description: """
            Signs in with OAuth 2 and PKCE: prints an address to open in a browser, then reads the code \
            Dropbox shows (from the terminal, or piped on standard input by a script that read the address; \
            the code only works in the run that printed its address, PKCE) and stores the app key and \
            a refresh token in $XDG_CONFIG_HOME/dropboxfs/credentials.json (folder 0700, file 0600), or in \
            the profile's folder with --profile. Scopes asked for: account_info.read files.metadata.read \
            files.content.read.
            """,
        options: [
            OptionSpec(name: "app-key", value: "KEY", help: "your Dropbox app's key (default $DROPBOXFS_APP_KEY, or the stored one)"),
            apiURL,
            OptionSpec(
                name: "oauth-url", value: "URL",
                help: "authorize page base URL (default $DROPBOXFS_OAUTH_URL or https://www.dropbox.com)"),
            OptionSpec(name: "sign-out", help: "revoke the stored sign-in at Dropbox and delete it here"),
            OptionSpec(
                name: "purge",
                help: "with --sign-out: also remove the profile's stored trees, cached contents, the thumbnails "
                    + "its mounts wrote and its logs, and say what was removed (refused while it is mounted)"),
            profile, verbose, quiet,
            // Refused with an explanation (a code only works in the run that printed its address).
            OptionSpec(name: "code", value: "CODE", help: "", hidden: true),
            help,
        ])

    static let status = CommandSpec(
        name: "status",
        summaries: [("status", "account, space, credentials and active mounts")],
        usage: ["dropboxfs status [options] [MOUNTPOINT...]"],
        description: """
            Shows the signed-in account (name, email), space used and allocated, which credentials are in \
            use, and every active dropboxfs mount of yours (or the MOUNTPOINTs given) with its sync progress \
            (the first listing as "listing: 412,000 entries, 46,000/s"; "rate limited by Dropbox until TIME" \
            while Dropbox holds its requests), then the version and pid of its daemon and where its log is \
            (a file, the journal, or standard error). Exit code 4 without working \
            credentials, 5 when Dropbox cannot be reached, 3 when a MOUNTPOINT is not a dropboxfs mount.
            """,
        options: [
            accessTokenFile, apiURL,
            OptionSpec(
                name: "watch", short: "w",
                help: "show the mounts' progress until interrupted (Ctrl-C) or no mount is left: updated in place "
                    + "on a terminal, one line per change otherwise; skips the account"),
            OptionSpec(name: "json", help: "print one JSON object (with --watch: one per line, per second) for scripts"),
            OptionSpec(
                name: "report",
                help: "print a text for a bug report: versions, system, each mount's status, options and last "
                    + "log lines, without any token or secret; asks nothing of Dropbox"),
            profile,
            OptionSpec(
                name: "verbose", short: "v", help: "also show each mount's status line as the daemon wrote it (and log debug lines)"),
            quiet, help,
        ])

    static let mount = CommandSpec(
        name: "mount",
        summaries: [("mount [MOUNTPOINT] [options]", "mount the account (default MOUNTPOINT: ~/dropbox)")],
        usage: [
            "dropboxfs mount [MOUNTPOINT] [options]",
            "dropboxfs mount --shared-link URL [--link-password-file FILE] MOUNTPOINT [options]",
            "dropboxfs SOURCE MOUNTPOINT [-o OPTIONS]   (as mount.fuse3 runs it)",
        ],
        description: """
            Mounts the Dropbox account read-only on MOUNTPOINT (default ~/dropbox, or ~/dropbox-NAME with \
            --profile NAME; created if missing). Without --foreground the command returns once the mount is \
            ready and the daemon keeps running in the background (its log goes to --log-file).
            """,
        options: [
            OptionSpec(name: "foreground", short: "f", help: "stay in the foreground; log to stderr; Ctrl-C unmounts"),
            OptionSpec(
                name: "o", short: "o", value: "OPTIONS",
                help: "comma-separated options as in fstab: any long option below as NAME or NAME=VALUE (with _ for -, "
                    + "e.g. cache_size=4G,allow_other); fstab's own options (noauto, nofail, _netdev, user, users, "
                    + "x-systemd.*, dev, suid, exec, ...) are accepted and ignored; rw is accepted with a warning, "
                    + "the mount being read-only whatever it asks"),
            OptionSpec(
                name: "allow-other",
                help: "let other users see the mount (needs user_allow_other in /etc/fuse.conf when not root)",
                mountOption: true),
            OptionSpec(name: "allow-non-empty", help: "mount over a folder that is not empty", mountOption: true),
            accessTokenFile, apiURL,
            OptionSpec(
                name: "content-url", value: "URL",
                help: "content base URL (default $DROPBOXFS_CONTENT_URL or https://content.dropboxapi.com)",
                mountOption: true),
            OptionSpec(
                name: "notify-url", value: "URL",
                help: "notify base URL (default $DROPBOXFS_NOTIFY_URL or https://notify.dropboxapi.com)",
                mountOption: true),
            profile,
            OptionSpec(
                name: "shared-link", value: "URL",
                help: "mount the folder or file of this shared link instead of the account, read-only; folders are "
                    + "listed one at a time and listed again after --dir-cache-time (default 60s)",
                mountOption: true),
            OptionSpec(
                name: "link-password-file", value: "FILE",
                help: "with --shared-link: the link's password, the first line of FILE", mountOption: true,
                completion: .file),
            OptionSpec(
                name: "no-prefetch",
                help: "do not list the whole account in the background; folders are listed one request each when first opened",
                mountOption: true),
            OptionSpec(
                name: "fill-parallel", value: "N",
                help: "list the whole account over up to N branches at once (default 6; 1 lists it in one chain of pages)",
                mountOption: true),
            OptionSpec(
                name: "no-watch",
                help: "do not follow changes (no longpoll); folders are listed again after --dir-cache-time",
                mountOption: true),
            OptionSpec(
                name: "attr-timeout", value: "DURATION",
                help: "how long the kernel caches names and attributes, e.g. 30s, 5m, 1h (default 1h, or 60s with "
                    + "--no-watch; changes seen by the watcher invalidate them at once)",
                mountOption: true),
            OptionSpec(
                name: "dir-cache-time", value: "DURATION",
                help: "with --no-watch, --shared-link, and for --shared-folders: how long a folder listing is trusted "
                    + "before it is listed again (default 60s)",
                mountOption: true),
            OptionSpec(
                name: "spin-us", value: "N",
                help: "microseconds the FUSE thread stays awake for the next request before it sleeps; faster "
                    + "cold walks for a little CPU (default 200; 0: libfuse's multi-threaded loop, see --threads)",
                mountOption: true),
            OptionSpec(
                name: "lean-walk-after", value: "N",
                help: "once a process (each of its threads) has been listed N entries, list files to it by name and "
                    + "type only, which is all `find` needs: faster big walks, no kernel inode per file; its first "
                    + "stat of such a file gives it full listings again (default 200000; 0: always full listings)",
                mountOption: true),
            OptionSpec(
                name: "shared-folders",
                help: "also show the folders shared with you that you have not added to your Dropbox, read-only, in a "
                    + "folder named Shared with me at the top (they are not added); listed again after --dir-cache-time "
                    + "(default 60s); needs the sharing.read permission",
                mountOption: true),
            OptionSpec(
                name: "hide-no-access",
                help: "leave out team folders this account may not open (no_access) instead of showing them with "
                    + "mode 000",
                mountOption: true),
            OptionSpec(
                name: "threads", value: "N",
                help: "threads of libfuse's multi-threaded loop, which this option selects unless --spin-us is given "
                    + "(default 16)",
                mountOption: true),
            OptionSpec(
                name: "home-only",
                help: "in a Dropbox team space, show only your own folder instead of the whole team space (team folders and your folder)",
                mountOption: true),
            OptionSpec(
                name: "cache-dir", value: "DIR",
                help: "cache folder (default $XDG_CACHE_HOME/dropboxfs, i.e. ~/.cache/dropboxfs); file contents go to "
                    + "DIR/content, the stored tree of each account to DIR/trees",
                mountOption: true, completion: .directory),
            OptionSpec(
                name: "no-persist",
                help: "keep the tree in memory only: do not store it for the next mount (stored trees make remounts "
                    + "instant and let a mount come up offline; delete DIR/trees to clear them)",
                mountOption: true),
            OptionSpec(
                name: "fresh",
                help: "never serve a stored tree that may be older than Dropbox: fail when Dropbox cannot be reached, "
                    + "and catch up before the mount appears (for scripts)",
                mountOption: true),
            OptionSpec(
                name: "cache-size", value: "SIZE",
                help: "cap of the disk content cache, e.g. 512M or 4G (default 1G); least recently used files are removed first",
                mountOption: true),
            OptionSpec(name: "no-disk-cache", help: "keep downloaded file contents in memory only", mountOption: true),
            OptionSpec(
                name: "no-read-ahead",
                help: "do not fetch a folder's next small files while a program reads its files one after another",
                mountOption: true),
            OptionSpec(
                name: "no-folder-zips",
                help: "read ahead a folder's small files one request each, never as one zip of the folder "
                    + "(files/download_zip)",
                mountOption: true),
            OptionSpec(
                name: "no-thumbnails",
                help: "do not write Dropbox's thumbnails for file managers (by default, when a file manager such as "
                    + "PCManFM, Thunar or Nautilus shows a folder, the thumbnails of its images go to "
                    + "$XDG_CACHE_HOME/thumbnails/normal and large, so it shows them without downloading every image)",
                mountOption: true),
            OptionSpec(
                name: "thumbnail-sizes", value: "SIZES",
                help: "the thumbnail sizes written: normal (128 pixels, most views), large (256 pixels, big icons, "
                    + "e.g. Thunar from 200 % zoom), x-large (512) and xx-large (1024, HiDPI), separated by ',' or ':' "
                    + "(default normal,large, and x-large or xx-large when the thumbnail cache has that folder)",
                mountOption: true),
            OptionSpec(
                name: "thumbnail-cache-size", value: "SIZE",
                help: "the most bytes of thumbnails kept in the thumbnail cache, every size and mount counted, oldest first out, e.g. 50M (default 200M)",
                mountOption: true),
            OptionSpec(
                name: "read-buffer-memory", value: "SIZE",
                help: "cap of the memory used for read-ahead buffers and exported documents (default 256M)",
                mountOption: true),
            OptionSpec(
                name: "timeouts", value: "SPEC",
                help: "request deadlines, e.g. rpc=2m,download=60s,stall=30s: connect, answer (a silent host is "
                    + "unreachable after connect or answer), rpc, download, stall, max-pause and stale (catching up "
                    + "fails this long: the status says stale) take durations, low-speed BYTES/DURATION (e.g. "
                    + "1024/30s), download-rate bytes per second; in -o separate the items with ':' "
                    + "(docs/SEMANTICS.md \"Bounds\")",
                mountOption: true),
            OptionSpec(
                name: "log-level", value: "LEVEL", help: "debug, info, warning or error (default info)", mountOption: true,
                completion: .choices(["debug", "info", "warning", "error"])),
            OptionSpec(
                name: "debug", short: "d",
                help: "debug lines in the foreground, as libfuse programs take -d (as -o debug: only --log-level debug)",
                mountOption: true),
            verbose, quiet,
            OptionSpec(
                name: "log-file", value: "FILE",
                help: "the background daemon's log (default $XDG_STATE_HOME/dropboxfs/dropboxfs.log, i.e. "
                    + "~/.local/state/dropboxfs, or dropboxfs-NAME.log with --profile NAME); rotated at 10 MiB "
                    + "(one old file, FILE.1)",
                mountOption: true, completion: .file),
            help,
        ],
        footer: """
            Every mount is read-only: writes fail with EROFS ("Read-only file system"). \
            Mount options always set: ro,default_permissions,nosuid,nodev,noatime,auto_unmount,\
            subtype=dropboxfs, and fsname=dropboxfs (the profile's name with --profile, SOURCE in mount \
            helper mode).
            """)

    static let version = CommandSpec(
        name: "version",
        summaries: [("version", "version, commit, libfuse and libcurl versions (also -V, --version)")],
        usage: ["dropboxfs version", "dropboxfs --version"],
        description: "Prints the version and commit dropboxfs was built from and the versions of libfuse and libcurl it runs with.",
        options: [help])

    static let completion = CommandSpec(
        name: "completion",
        summaries: [("completion bash|zsh|fish", "the shell completion script (e.g. `source <(dropboxfs completion bash)`)")],
        usage: ["dropboxfs completion bash|zsh|fish"],
        description: "Prints the completion script of a shell, for shells where the installed one is not loaded.",
        options: [help])

    static let versions = CommandSpec(
        name: "versions",
        summaries: [("versions PATH [--json]", "the earlier versions Dropbox keeps of a file on a mount")],
        usage: ["dropboxfs versions PATH [--json]"],
        description: """
            Lists the versions Dropbox keeps of the file PATH on a dropboxfs mount, newest first: the time \
            Dropbox stored each, its size, its revision, who stored it when Dropbox says (files in shared \
            folders: an account id), and the path on the mount where it reads \
            (FOLDER/.dropboxfs-versions/NAME/TIME_REV.EXT, read-only). A deleted file's versions are listed \
            from its old path; a moved file's versions from before the move are included. Asks Dropbox through \
            the mount only: one request per 100 versions, and one for those from before a move. Exit code 3 \
            when PATH is not on a dropboxfs mount.
            """,
        options: [
            OptionSpec(
                name: "json",
                help: "print one JSON array, newest first; each entry has path (where that version reads), time, "
                    + "size, rev, content_hash, current, and modified_by (an account id) when Dropbox says who"),
            help,
        ])

    static let deleted = CommandSpec(
        name: "deleted",
        summaries: [("deleted DIR [--since DATE] [--json]", "the deleted files Dropbox keeps under a folder of a mount")],
        usage: ["dropboxfs deleted DIR [--since DATE] [--json]"],
        description: """
            Lists the files deleted in the folder DIR of a dropboxfs mount, and in the folders deleted with \
            them, that Dropbox still keeps (30 or 180 days, by plan), most recently deleted first: the deletion \
            time, the size, where the file was, and the path on the mount where its last version reads \
            (DIR/.dropboxfs-deleted/..., read-only). Files deleted in a folder that still exists are that \
            folder's: run it there. Costs one listing of DIR with its subfolders and one request per deleted \
            file. Exit code 3 when DIR is not on a dropboxfs mount.
            """,
        options: [
            OptionSpec(
                name: "since", value: "DATE",
                help: "only files deleted at or after DATE (UTC): 2026-12-06 or 2026-12-06T10:41:00Z"),
            OptionSpec(
                name: "json",
                help: "print one JSON array; each entry has path (where the file reads), original, deleted, size, "
                    + "rev and content_hash"),
            help,
        ])

    static let pin = CommandSpec(
        name: "pin",
        summaries: [("pin PATH...", "keep folders or files of a mount available offline")],
        usage: ["dropboxfs pin PATH..."],
        description: """
            Keeps each PATH (a folder or a file on a mounted dropboxfs) available offline: its files are \
            downloaded into the disk cache in the background, checked against their content_hash, never \
            evicted, and downloaded again when they change on Dropbox, so they read while Dropbox cannot be \
            reached. Pins are stored with the mount's tree and survive remounts. Refused, with the numbers, \
            when the pinned files would not fit in the disk cache (--cache-size) or on its disk, and on a \
            mount without a disk cache. `dropboxfs pinned` shows the progress.
            """,
        options: [verbose, quiet, help])

    static let unpin = CommandSpec(
        name: "unpin",
        summaries: [("unpin PATH...", "stop keeping PATHs available offline")],
        usage: ["dropboxfs unpin PATH..."],
        description: """
            Removes the pin of each PATH: its files stay in the disk cache as any other cached file, and \
            are evicted first when room is needed (least recently used).
            """,
        options: [verbose, quiet, help])

    static let pinned = CommandSpec(
        name: "pinned",
        summaries: [("pinned [MOUNTPOINT...]", "the pins of each mount, their sizes and download progress")],
        usage: ["dropboxfs pinned [--json] [MOUNTPOINT...]"],
        description: """
            Lists the pinned paths of every dropboxfs mount of yours (or of the MOUNTPOINTs given): for each \
            its state (present, downloading, listing, failing, offline, missing), its files on disk of all its \
            files, and its bytes on disk of all its bytes.
            """,
        options: [
            OptionSpec(name: "json", help: "print one JSON object for scripts"), verbose, quiet, help,
        ])

    static let commands = [auth, mount, status, pin, unpin, pinned, versions, deleted, version, completion]

    /// The options of `dropboxfs` itself (before any command).
    static let global: [OptionSpec] = [
        OptionSpec(name: "version", short: "V", help: "the version (as `dropboxfs version`)"),
        help,
    ]

    static func command(named name: String) -> CommandSpec? { commands.first { $0.name == name } }
}
