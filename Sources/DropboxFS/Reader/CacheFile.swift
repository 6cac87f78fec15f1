// The reader's only contact with the local file system: an open cache file (pread, pwrite, mtime)
// and the few folder operations of the disk cache. Reads, writes and folder listings go through the
// system layer (SystemCalls), which holds the retry rules (EINTR, short transfers); the calls it
// does not wrap are made here, once each.

import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

/// A failed system call of the disk cache (or of the thumbnail cache), for log lines.
struct CacheIOError: Error, Sendable, CustomStringConvertible {
    var operation: String
    var code: Int32

    var description: String { "\(operation): \(String(cString: strerror(code)))" }
}

/// An open file of the disk cache, closed when the last reference goes. Reads and writes take
/// explicit offsets, so any thread may use it at any time.
final class CacheFile: Sendable {
    let descriptor: Int32

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Exactly the bytes of `range`; a file that ends before it is EIO.
    func read(_ range: Range<UInt64>) -> Result<[UInt8], CacheIOError> {
        let count = Int(range.upperBound - range.lowerBound)
        var failure: CacheIOError?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            do throws(Errno) {
                initialized = try FileDescriptor(rawValue: descriptor).read(
                    fromAbsoluteOffset: Int64(range.lowerBound), filling: UnsafeMutableRawBufferPointer(buffer))
                if initialized < count { failure = CacheIOError(operation: "pread", code: EIO) }
            } catch {
                initialized = 0
                failure = CacheIOError(operation: "pread", code: error.rawValue)
            }
        }
        if let failure { return .failure(failure) }
        return .success(bytes)
    }

    /// All of `bytes` at `offset`; a write that takes nothing is EIO.
    func write(_ bytes: [UInt8], at offset: UInt64) -> CacheIOError? {
        bytes.withUnsafeBytes { buffer -> CacheIOError? in
            do throws(Errno) {
                try FileDescriptor(rawValue: descriptor).writeAll(toAbsoluteOffset: Int64(offset), buffer)
                return nil
            } catch {
                return CacheIOError(operation: "pwrite", code: error.rawValue)
            }
        }
    }

    var size: Result<UInt64, CacheIOError> {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return .failure(CacheIOError(operation: "fstat", code: errno)) }
        return .success(UInt64(info.st_size))
    }

    /// Sets the mtime to now: the disk cache's "last used" survives a remount this way.
    func touch() {
        // UTIME_OMIT and UTIME_NOW from <sys/stat.h> (macros Swift does not import).
        let omit = (1 << 30) - 2
        let now = (1 << 30) - 1
        var times = [timespec(tv_sec: 0, tv_nsec: omit), timespec(tv_sec: 0, tv_nsec: now)]
        _ = futimens(descriptor, &times)
    }
}

/// Folder operations of the disk cache.
enum CacheFolder {
    /// A regular file in a folder.
    struct Item {
        var name: String
        var size: UInt64
        /// mtime in nanoseconds since the epoch.
        var modified: Int64
    }

    /// Creates `path` and its missing parents with mode 0700.
    static func makeDirectories(_ path: String) -> CacheIOError? {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                return CacheIOError(operation: "mkdir \(prefix)", code: errno)
            }
        }
        return nil
    }

    /// The regular files directly in `path`.
    static func items(in path: String) -> Result<[Item], CacheIOError> {
        var items: [Item] = []
        do throws(Errno) {
            try forEachEntry(inDirectory: path) { name in
                var info = stat()
                guard stat(path + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return true }
                items.append(Item(name: name, size: UInt64(info.st_size), modified: nanoseconds(info.st_mtim)))
                return true
            }
        } catch {
            return .failure(CacheIOError(operation: "opendir \(path)", code: error.rawValue))
        }
        return .success(items)
    }

    /// The entry, open for reading, or why it could not be opened. Opened without following a
    /// symlink and without waiting (O_NONBLOCK: a FIFO or a device put at an entry's name answers
    /// at once instead of waiting for a writer), then checked with fstat to be a regular file: any
    /// other kind fails as ENXIO, which says the entry is bad. A signal interrupting the open is
    /// not retried: the entry is kept and this use goes without it (it runs on the disk queue,
    /// docs/ARCHITECTURE.md "Threads", and a retry would only keep a stopping daemon waiting).
    @Sendable static func openForReading(_ path: String) -> Result<CacheFile, CacheIOError> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard descriptor >= 0 else { return .failure(CacheIOError(operation: "open \(path)", code: errno)) }
        let file = CacheFile(descriptor: descriptor)
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return .failure(CacheIOError(operation: "fstat \(path)", code: errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            return .failure(CacheIOError(operation: "open \(path) (not a regular file)", code: ENXIO))
        }
        return .success(file)
    }

    /// Creates a new file (mode 0600) for reading and writing; fails if it exists.
    static func create(_ path: String) -> Result<CacheFile, CacheIOError> {
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return .failure(CacheIOError(operation: "create \(path)", code: errno)) }
        return .success(CacheFile(descriptor: descriptor))
    }

    static func rename(_ from: String, to: String) -> CacheIOError? {
        Glibc.rename(from, to) == 0 ? nil : CacheIOError(operation: "rename \(from)", code: errno)
    }

    static func remove(_ path: String) {
        _ = unlink(path)
    }

    /// False only when no process `pid` exists.
    static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno != ESRCH
    }

    static var processID: Int32 { getpid() }

    /// The wall clock in nanoseconds since the epoch (comparable with file mtimes).
    static func now() -> Int64 {
        nanoseconds(SystemClock.realtime())
    }

    /// A time of the wall clock (a file's mtime, or now) in nanoseconds since the epoch.
    private static func nanoseconds(_ time: timespec) -> Int64 {
        Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
