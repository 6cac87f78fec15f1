// Whether the daemon may use its local folders: the cache folder (CACHE_DIR) and the stored trees
// and contents in it. Another user who owns one, or may write into one, could give the daemon a
// tree to serve, contents to hand out as Dropbox's, or a symlink to write through; and a daemon run
// as root (an fstab line without `setuid=`, `sudo -E` keeping a user's XDG_CACHE_HOME) would leave
// root-owned folders in that user's home. So a folder that exists must be a folder of the
// daemon's user that no other user may write; one that does not exist yet is made inside the
// nearest existing folder, which must be the daemon's user's or root's (/tmp, /var/cache).
// Refused with the reason and exit code 7 (docs/SEMANTICS.md, "Running as root").

#if canImport(Glibc)
    import Glibc
#endif

enum LocalTrust {
    /// Why `folder` must not be used by a daemon running as `uid`, or nil when it may.
    static func problem(with folder: String, uid: uid_t = geteuid()) -> String? {
        var info = stat()
        guard stat(folder, &info) != 0 else {
            guard info.st_mode & S_IFMT == S_IFDIR else { return "\(folder) is not a folder" }
            if info.st_uid != uid {
                return "\(folder) belongs to \(userName(info.st_uid)), not to \(userName(uid)), the user dropboxfs runs as"
                    + hint(uid: uid)
            }
            if info.st_mode & 0o022 != 0 {
                let mode = String(info.st_mode & 0o7777, radix: 8)
                return "\(folder) may be written by other users (mode \(mode)); make it private: chmod go-w \(folder)"
            }
            return nil
        }
        guard errno == ENOENT || errno == ENOTDIR else { return "\(folder): \(String(cString: strerror(errno)))" }
        // Made by the daemon, inside the nearest folder that exists.
        var parent = folder
        while true {
            guard let slash = parent.lastIndex(of: "/"), slash != parent.startIndex else {
                parent = "/"
                break
            }
            parent = String(parent[..<slash])
            if stat(parent, &info) == 0 { break }
        }
        guard stat(parent, &info) == 0 else { return nil }
        if info.st_uid != uid && info.st_uid != 0 {
            return "\(folder) would be made in \(parent), which belongs to \(userName(info.st_uid)), not to "
                + "\(userName(uid)), the user dropboxfs runs as" + hint(uid: uid)
        }
        return nil
    }

    /// The first problem with the cache folder and the stored trees and contents in it.
    static func problem(withCacheFolder cacheFolder: String) -> String? {
        for folder in [cacheFolder, cacheFolder + "/trees", cacheFolder + "/content"] {
            if let problem = problem(with: folder) { return problem }
        }
        return nil
    }

    private static func hint(uid: uid_t) -> String {
        uid == 0
            ? " (run dropboxfs as that user: `setuid=USER` in its fstab line, or without sudo; or give --cache-dir a folder of root's)"
            : " (give --cache-dir a folder of your own)"
    }

    private static func userName(_ uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return "\(String(cString: name)) (uid \(uid))"
    }
}
