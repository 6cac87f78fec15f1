// `dropboxfs auth --sign-out --purge`: what signing out leaves behind, removed too, for a user who
// leaves for good: the profile's stored trees and cached contents (CACHE_DIR/trees, CACHE_DIR/content),
// the thumbnails its mounts wrote into the desktop's cache (those that are still ours, from the
// ledger) and the ledger, and its logs. Nothing of another profile: the default profile's cache
// folder holds the others' folders under profiles/, which stays. Refused while a mount of the
// profile holds one of its stored trees (its lock), since that daemon would write them again.

import DropboxFS
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

enum Purge {
    /// One kind of thing removed, for the report.
    struct Removed {
        var what: String
        var place: String
        var files = 0
        var bytes: UInt64 = 0
    }

    static func run(_ profile: Profile) throws(CommandFailure) -> [Removed] {
        let cache = profile.cacheFolder
        // Held until the end: no mount of the profile starts with these trees meanwhile.
        let locks = try lockStoredTrees(cache + "/trees")
        defer { for fd in locks { close(fd) } }
        var removed: [Removed] = []
        removed.append(removeTree(cache + "/trees", what: "stored trees"))
        removed.append(removeTree(cache + "/content", what: "cached contents"))
        let thumbnails = WrittenThumbnails.purge(path: cache + "/thumbnails.ledger", thumbnails: profile.thumbnailFolder)
        removed.append(Removed(what: "thumbnails", place: profile.thumbnailFolder, files: thumbnails.files, bytes: thumbnails.bytes))
        var logs = Removed(what: "logs", place: profile.stateFolder)
        for path in [profile.logFile, profile.logFile + ".1"] { add(removeFile(path), to: &logs) }
        removed.append(logs)
        // The cache folder itself when nothing else is left in it (the default profile's holds
        // the other profiles' folders).
        rmdir(cache)
        return removed
    }

    /// Takes each stored tree's lock, as a mount does; a lock held elsewhere means a running mount.
    private static func lockStoredTrees(_ folder: String) throws(CommandFailure) -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var locks: [Int32] = []
        for name in names where name.hasSuffix(".db.lock") {
            let fd = open(folder + "/" + name, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                close(fd)
                for held in locks { close(held) }
                throw CommandFailure(
                    .failure,
                    "a mount of this profile is running (it holds \(folder)/\(name)): unmount it first "
                        + "(fusermount3 -u MOUNTPOINT), then run this again; the sign-in was removed, nothing else")
            }
            locks.append(fd)
        }
        return locks
    }

    /// Removes a folder and everything in it (links are removed, never followed).
    private static func removeTree(_ folder: String, what: String) -> Removed {
        var removed = Removed(what: what, place: folder)
        var info = stat()
        guard lstat(folder, &info) == 0 else { return removed }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            add(removeFile(folder), to: &removed)
            return removed
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        for name in names {
            let path = folder + "/" + name
            guard lstat(path, &info) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                let inner = removeTree(path, what: what)
                removed.files += inner.files
                removed.bytes += inner.bytes
            } else {
                add(removeFile(path), to: &removed)
            }
        }
        rmdir(folder)
        return removed
    }

    /// Removes a file (or link); its size when it was removed.
    private static func removeFile(_ path: String) -> UInt64? {
        var info = stat()
        guard lstat(path, &info) == 0, unlink(path) == 0 else { return nil }
        return UInt64(max(0, info.st_size))
    }

    private static func add(_ bytes: UInt64?, to removed: inout Removed) {
        guard let bytes else { return }
        removed.files += 1
        removed.bytes += bytes
    }

    /// "removed stored trees: 2 files, 3.1 MiB (/home/u/.cache/dropboxfs/trees)".
    static func line(_ removed: Removed) -> String {
        let files = removed.files == 1 ? "1 file" : "\(removed.files) files"
        return "removed \(removed.what): \(files), \(StatusCommand.formatBytes(removed.bytes)) (\(removed.place))"
    }
}
