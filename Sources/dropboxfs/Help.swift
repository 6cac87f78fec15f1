// The text of `dropboxfs --help` and `dropboxfs mount --help`: every option and every exit code.

enum Help {
    static let main = """
        dropboxfs: your Dropbox account as a read-only folder (FUSE).

        Usage:
          dropboxfs mount [MOUNTPOINT] [options]   mount the account (default MOUNTPOINT: ~/dropbox)
          dropboxfs --help                         this text
          dropboxfs mount --help                   every mount option

        Unmount with `fusermount3 -u MOUNTPOINT` (or Ctrl-C when mounted with --foreground).

        Credentials: an access token in DROPBOXFS_ACCESS_TOKEN or a file given with --access-token-file
        (the app console's "Generate" button makes one).

        Exit codes: 0 ok, 1 other failure, 2 bad command line, 3 mount point problem,
        4 missing or rejected credentials, 5 Dropbox unreachable, 6 FUSE unavailable.
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
          --access-token-file FILE    read the access token from FILE (default: $DROPBOXFS_ACCESS_TOKEN)
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
          --cache-dir DIR             cache folder (default $XDG_CACHE_HOME/dropboxfs, i.e.
                                      ~/.cache/dropboxfs); file contents go to DIR/content
          --cache-size SIZE           cap of the disk content cache, e.g. 512M or 4G (default 1G);
                                      least recently used files are removed first
          --no-disk-cache             keep downloaded file contents in memory only
          --read-buffer-memory SIZE   cap of the memory used for read-ahead buffers (default 256M)
          --log-level LEVEL           debug, info, warning or error (default info)
          -d, --debug                 same as --log-level debug
          --log-file FILE             daemon log (default $XDG_CACHE_HOME/dropboxfs/dropboxfs.log)
          -h, --help                  this text

        Every mount is read-only: writes fail with EROFS ("Read-only file system").
        Mount options always set: ro,default_permissions,nosuid,nodev,noatime,auto_unmount,
        fsname=dropboxfs,subtype=dropboxfs.
        """
}
