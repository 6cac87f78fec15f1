// The text of `dropboxfs --help` and `dropboxfs mount --help`: every option and every exit code.

enum Help {
    static let main = """
        dropboxfs: your Dropbox account as a read-only folder (FUSE).

        Usage:
          dropboxfs auth --app-key KEY             sign in (once); stores a refresh token privately
          dropboxfs auth --sign-out                revoke and delete the stored sign-in
          dropboxfs mount [MOUNTPOINT] [options]   mount the account (default MOUNTPOINT: ~/dropbox)
          dropboxfs status                         account, space, credentials and active mounts
          dropboxfs --help                         this text
          dropboxfs COMMAND --help                 the options of a command

        Unmount with `fusermount3 -u MOUNTPOINT` (or Ctrl-C when mounted with --foreground).

        Credentials, first found wins: --access-token-file FILE, DROPBOXFS_ACCESS_TOKEN (a token from
        the app console's "Generate" button), then the sign-in stored by `dropboxfs auth` in
        $XDG_CONFIG_HOME/dropboxfs/credentials.json (default ~/.config/dropboxfs).

        Exit codes: 0 ok, 1 other failure, 2 bad command line, 3 mount point problem,
        4 missing or rejected credentials, 5 Dropbox unreachable, 6 FUSE unavailable.
        """

    static let auth = """
        Usage: dropboxfs auth [--app-key KEY]
               dropboxfs auth --sign-out

        Signs in with OAuth 2 and PKCE: prints an address to open in a browser, then reads the code
        Dropbox shows (from the terminal, or piped on standard input by a script that read the address;
        the code only works in the run that printed its address, PKCE) and stores the app key and
        a refresh token in $XDG_CONFIG_HOME/dropboxfs/credentials.json (folder 0700, file 0600).
        Scopes asked for: account_info.read files.metadata.read files.content.read.

        Options:
          --app-key KEY     your Dropbox app's key (default $DROPBOXFS_APP_KEY, or the stored one)
          --api-url URL     API base URL (default $DROPBOXFS_API_URL or https://api.dropboxapi.com)
          --oauth-url URL   authorize page base URL (default $DROPBOXFS_OAUTH_URL or
                            https://www.dropbox.com)
          --sign-out        revoke the stored sign-in at Dropbox and delete it here
          -h, --help        this text
        """

    static let status = """
        Usage: dropboxfs status [--access-token-file FILE] [--api-url URL]

        Shows the signed-in account (name, email), space used and allocated, which credentials are in
        use, and every active dropboxfs mount with its sync progress. Exit code 4 without working
        credentials, 5 when Dropbox cannot be reached.
        """

    static let mount = """
        Usage: dropboxfs mount [MOUNTPOINT] [options]

        Mounts the Dropbox account read-only on MOUNTPOINT (default ~/dropbox, created if missing).
        Without --foreground the command returns once the mount is ready and the daemon keeps running
        in the background (its log goes to --log-file).

        Options:
          -f, --foreground            stay in the foreground; log to stderr; Ctrl-C unmounts
          -o OPTIONS                  extra comma-separated mount options (e.g. allow_other)
          --allow-other               let other users see the mount (needs user_allow_other in
                                      /etc/fuse.conf when not root)
          --allow-non-empty           mount over a folder that is not empty
          --access-token-file FILE    read the access token from FILE (default: $DROPBOXFS_ACCESS_TOKEN,
                                      then the sign-in stored by `dropboxfs auth`)
          --api-url URL               Dropbox API base URL (default $DROPBOXFS_API_URL or
                                      https://api.dropboxapi.com)
          --content-url URL           content base URL (default $DROPBOXFS_CONTENT_URL or
                                      https://content.dropboxapi.com)
          --notify-url URL            notify base URL (default $DROPBOXFS_NOTIFY_URL or
                                      https://notify.dropboxapi.com)
          --no-prefetch               do not list the whole account in the background; folders are
                                      listed one request each when first opened
          --no-watch                  do not follow changes (no longpoll); folders are listed again
                                      after --dir-cache-time
          --attr-timeout SECONDS      how long the kernel caches names and attributes (default 3600,
                                      or 60 with --no-watch; changes seen by the watcher
                                      invalidate them at once)
          --dir-cache-time SECONDS    with --no-watch: how long a folder listing is trusted before
                                      it is listed again (default 60)
          --threads N                 FUSE worker threads (default 16)
          --home-only                 in a Dropbox team space, show only your own folder instead of
                                      the whole team space (team folders and your folder)
          --cache-dir DIR             cache folder (default $XDG_CACHE_HOME/dropboxfs, i.e.
                                      ~/.cache/dropboxfs); file contents go to DIR/content, the
                                      stored tree of each account to DIR/trees
          --no-persist                keep the tree in memory only: do not store it for the next
                                      mount (stored trees make remounts instant and let a mount
                                      come up offline; delete DIR/trees to clear them)
          --fresh                     never serve a stored tree that may be older than Dropbox:
                                      fail when Dropbox cannot be reached, and catch up before
                                      the mount appears (for scripts)
          --cache-size SIZE           cap of the disk content cache, e.g. 512M or 4G (default 1G);
                                      least recently used files are removed first
          --no-disk-cache             keep downloaded file contents in memory only
          --read-buffer-memory SIZE   cap of the memory used for read-ahead buffers (default 256M)
          --timeouts SPEC             request deadlines, e.g. rpc=120,download=60,stall=30,
                                      low-speed=1024/30,connect=10,download-rate=65536,
                                      max-pause=600 (seconds; docs/SEMANTICS.md "Bounds")
          --log-level LEVEL           debug, info, warning or error (default info)
          -d, --debug                 same as --log-level debug
          --log-file FILE             daemon log (default $XDG_CACHE_HOME/dropboxfs/dropboxfs.log)
          -h, --help                  this text

        Every mount is read-only: writes fail with EROFS ("Read-only file system").
        Mount options always set: ro,default_permissions,nosuid,nodev,noatime,auto_unmount,
        fsname=dropboxfs,subtype=dropboxfs.
        """
}
