// What `dropboxfs versions` and `dropboxfs deleted` read: the mount's hidden history views
// (docs/SEMANTICS.md, "History"), through the filesystem like any program would, so the commands
// need no credentials and ask Dropbox nothing the mount would not. Each entry carries `path`, the
// absolute path on the mount where that version or deleted file reads.

import CShim
import DropboxAPI
import Foundation
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

enum HistoryFiles {
    static let versionsName = ".dropboxfs-versions"
    static let deletedName = ".dropboxfs-deleted"

    /// One file of a view, with what stat and the extended attributes say of it.
    struct File {
        var path: String
        var size: UInt64
        /// The revision's server time (versions) or the deletion time (deleted files).
        var time: Int64
        var rev: String?
        var contentHash: String?
        /// The account id of who stored it, when Dropbox says (shared folders).
        var modifiedBy: String?
    }

    /// `path` made absolute without following its last component (it may not exist any more).
    static func absolute(_ path: String) throws(CommandFailure) -> (folder: String, name: String) {
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        let slash = trimmed.lastIndex(of: "/")
        let folder = slash.map { String(trimmed[..<$0]) } ?? "."
        let name = slash.map { String(trimmed[trimmed.index(after: $0)...]) } ?? trimmed
        guard !name.isEmpty, name != ".", name != ".." else {
            throw CommandFailure(.usage, "\(path) names no file: give the path of a file")
        }
        return (try realFolder(folder.isEmpty ? "/" : folder), name)
    }

    /// The absolute, resolved path of an existing folder.
    static func realFolder(_ path: String) throws(CommandFailure) -> String {
        guard let resolved = realpath(path, nil) else {
            throw CommandFailure(.failure, "\(path): \(String(cString: strerror(errno)))")
        }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Fails unless `folder` is a folder of a dropboxfs mount (its hidden view answers).
    static func requireMount(_ folder: String, view: String) throws(CommandFailure) {
        var st = stat()
        guard stat(folder + "/" + view, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw CommandFailure(.mountPoint, "\(folder) is not a folder of a dropboxfs mount")
        }
    }

    /// The names in a folder, "." and ".." left out.
    static func names(in folder: String) throws(CommandFailure) -> [String] {
        var names: [String] = []
        do throws(Errno) {
            try forEachEntry(inDirectory: folder) { name in
                if name != "." && name != ".." { names.append(name) }
                return true
            }
        } catch {
            throw CommandFailure(.failure, "\(folder): \(error)")
        }
        return names
    }

    /// What stat and the user.dropbox.* attributes say of the file at `path`; nil for a folder.
    static func file(at path: String) throws(CommandFailure) -> File? {
        var st = stat()
        guard lstat(path, &st) == 0 else {
            throw CommandFailure(.failure, "\(path): \(String(cString: strerror(errno)))")
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        return File(
            path: path, size: UInt64(st.st_size), time: Int64(st.st_mtim.tv_sec), rev: attribute(path, "user.dropbox.rev"),
            contentHash: attribute(path, "user.dropbox.content_hash"), modifiedBy: attribute(path, "user.dropbox.modified_by"))
    }

    static func attribute(_ path: String, _ name: String) -> String? {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = dbx_getxattr(path, name, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// A time as the commands print it: "2026-12-06T10:41:00Z".
    static func time(_ seconds: Int64) -> String { DropboxTimestamp(secondsSinceEpoch: seconds).description }

    /// A --since value: "2026-12-06" (midnight UTC) or "2026-12-06T10:41:00Z".
    static func parseDate(_ text: String) throws(UsageError) -> Int64 {
        if let full = DropboxTimestamp(parsing: text) { return full.secondsSinceEpoch }
        if let day = DropboxTimestamp(parsing: text + "T00:00:00Z") { return day.secondsSinceEpoch }
        throw UsageError(description: "--since \(text): give a date as 2026-12-06 or 2026-12-06T10:41:00Z (UTC)")
    }

    /// The files as one JSON array, one object per file.
    static func json(_ objects: [[String: Any]]) -> String {
        StatusWatch.encode(objects)
    }
}
