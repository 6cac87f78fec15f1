// The thumbnail writer's only contact with the local file system: the folder of one size it writes
// in (`$XDG_CACHE_HOME/thumbnails/normal` or `large`, one ThumbnailCache each, created 0700 with
// any missing parent, as GLib does), whether a cache file there is current for a file, and the
// atomic write of a new one (a private temporary file in the same folder, mode 0600, renamed over
// the final name, so a file manager never reads half a PNG), and the removal of one of ours to keep
// under the cap (ThumbnailLedger.swift). Nothing is written anywhere else.
// Called on the writer's disk queue only.

import Synchronization
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

struct ThumbnailCache: Sendable {
    /// The folder of one size, e.g. ".../thumbnails/normal".
    let folder: String

    /// Numbers the temporary files of this process (".<name>.dropboxfs-<pid>-<n>").
    private static let temporaries = Atomic<UInt64>(0)

    /// A cache file larger than this is not read to check it (it is simply written again): real
    /// thumbnails of 128 or 256 pixels are tens of kilobytes.
    static let readLimit = 4 << 20

    /// Whether `fileName` holds a thumbnail of `uri` for the file's current `mtime` and `size`: a
    /// well-formed PNG whose Thumb::URI and Thumb::MTime match, and whose Thumb::Size, when it has
    /// one, does too (the checks file managers make: GLib rejects a thumbnail whose Thumb::Size
    /// is not the file's size, so a new revision of another size under the same mtime needs a new
    /// one).
    func isCurrent(_ fileName: String, uri: String, mtime: Int64, size: UInt64) -> Bool {
        guard let text = text(of: fileName) else { return false }
        return text["Thumb::URI"] == uri && text["Thumb::MTime"] == String(mtime)
            && text["Thumb::Size"].map { $0 == String(size) } ?? true
    }

    /// Removes `fileName` if it is a thumbnail dropboxfs wrote (its `Software` chunk says so): one
    /// a file manager wrote over ours is its own.
    @discardableResult
    func removeIfOurs(_ fileName: String) -> Bool {
        guard text(of: fileName)?["Software"] == "dropboxfs" else { return false }
        return unlink(folder + "/" + fileName) == 0
    }

    /// The text chunks of the PNG at `fileName`; nil when it is missing, not a regular file, too
    /// large to be a thumbnail, unreadable or not a well-formed PNG.
    private func text(of fileName: String) -> [String: String]? {
        // O_NONBLOCK: opening a FIFO found under this name would otherwise wait for a writer, and
        // every check and write of the mount (one serial queue) behind it; fstat then refuses it.
        let fd = open(folder + "/" + fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= Self.readLimit else {
            return nil
        }
        let count = Int(info.st_size)
        var failed = false
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            do {
                initialized = try FileDescriptor(rawValue: fd).read(filling: UnsafeMutableRawBufferPointer(buffer))
            } catch {
                failed = true
            }
        }
        guard !failed else { return nil }
        return PNGText.text(of: bytes)
    }

    /// Writes `bytes` as `fileName`, replacing what was there.
    func write(_ bytes: [UInt8], as fileName: String) -> CacheIOError? {
        if let failure = makeFolder() { return failure }
        let number = Self.temporaries.add(1, ordering: .relaxed).newValue
        let temporary = folder + "/." + fileName + ".dropboxfs-\(getpid())-\(number)"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return CacheIOError(operation: "create \(temporary)", code: errno) }
        let failure = bytes.withUnsafeBytes { buffer -> CacheIOError? in
            do throws(Errno) {
                try FileDescriptor(rawValue: fd).writeAll(buffer)
            } catch {
                return CacheIOError(operation: "write \(temporary)", code: error.rawValue)
            }
            // The standard's mode whatever the umask.
            return fchmod(fd, 0o600) == 0 ? nil : CacheIOError(operation: "fchmod \(temporary)", code: errno)
        }
        close(fd)
        if let failure {
            unlink(temporary)
            return failure
        }
        guard rename(temporary, folder + "/" + fileName) == 0 else {
            let code = errno
            unlink(temporary)
            return CacheIOError(operation: "rename to \(folder)/\(fileName)", code: code)
        }
        return nil
    }

    /// Creates the folder and its missing parents, each 0700.
    private func makeFolder() -> CacheIOError? {
        var info = stat()
        if stat(folder, &info) == 0 { return nil }
        return CacheFolder.makeDirectories(folder)
    }
}
