// The one failure path of the FUSE operations (OperationFailures.swift): the errno each core error
// is answered with, the level its log line takes (expected answers at debug, failures of Dropbox,
// the network or a handle at warning, nothing at error), the line's content, and the counts per
// operation that `dropboxfs status` shows.

import DropboxAPI
import DropboxFS
import Log
import Synchronization
import Testing

@testable import FUSEAdapter

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct OperationFailuresTests {
    static let cases: [(FilesystemError, Int32, LogLevel)] = [
        (.notFound, ENOENT, .debug), (.notADirectory, ENOTDIR, .debug), (.isADirectory, EISDIR, .debug),
        (.readOnly, EROFS, .debug), (.stale, ESTALE, .debug), (.badHandle, EBADF, .warning),
        (.notSupported, EOPNOTSUPP, .debug), (.noAttribute, ENODATA, .debug), (.bufferTooSmall, ERANGE, .debug),
        (.notDownloadable, EACCES, .debug), (.accessDenied(.authentication(.expiredAccessToken)), EACCES, .warning),
        (.remote(.serverError(status: 503)), EIO, .warning), (.integrity(.contentHashMismatch(file: "/a")), EIO, .warning),
        (.local(.diskCache(operation: "pread", errno: EIO)), EIO, .warning), (.interrupted, EINTR, .debug),
        (.offline, ENETUNREACH, .debug), (.unmounting, ENOTCONN, .debug),
    ]

    @Test(arguments: cases)
    func eachErrorHasItsErrnoAndLevel(error: FilesystemError, errno: Int32, level: LogLevel) {
        let failures = OperationFailures()
        #expect(failures.record(.read, inode: 3, error) == errno)
        #expect(OperationFailures.level(of: error) == level)
        #expect(!OperationFailures.errnoName(errno).hasPrefix("errno "), "every errno of the table has its name")
    }

    @Test func failuresAreCountedPerOperation() {
        let failures = OperationFailures()
        #expect(failures.statusFields == "failed=0")
        _ = failures.record(.read, inode: 3, .remote(.serverError(status: 500)))
        _ = failures.record(.getxattr, inode: 1, .noAttribute)
        _ = failures.record(.read, inode: 4, .interrupted)
        _ = failures.record(.write, inode: 4, .readOnly)
        #expect(failures.snapshot == [.read: 2, .getxattr: 1, .write: 1])
        // In the table's order, one word each (the status line is split on spaces).
        #expect(failures.statusFields == "failed=4 failed_read=2 failed_getxattr=1 failed_write=1")
    }

    @Test func theLogLineNamesTheOperationInodeErrnoAndCause() {
        #expect(
            OperationFailures.message(.read, inode: 42, .remote(.serverError(status: 503)))
                == "read of inode 42 failed: EIO (Dropbox or the network failed: \(DropboxError.serverError(status: 503)))")
        #expect(OperationFailures.message(.lookup, inode: 1, .notFound) == "lookup of inode 1 failed: ENOENT (no such entry)")
        #expect(OperationFailures.errnoName(EPERM) == "errno \(EPERM)")
    }

    /// The sink is process-wide: only lines about this test's own inodes count.
    @Test func failuresAreLoggedAtTheirLevel() {
        let lines = Mutex<[(LogLevel, String)]>([])
        let sink = Log.addSink { level, text in
            if text.contains("inode 987654") || text.contains("inode 987655") { lines.withLock { $0.append((level, text)) } }
        }
        defer { Log.removeSink(sink) }
        let failures = OperationFailures()
        _ = failures.record(.read, inode: 987_654, .remote(.serverError(status: 500)))
        _ = failures.record(.lookup, inode: 987_655, .notFound)
        let seen = lines.withLock { $0 }
        #expect(seen.contains { $0.0 == .warning && $0.1.contains("read of inode 987654 failed: EIO") })
        // Debug lines appear only at the debug level, and never above it.
        for (level, text) in seen where text.contains("inode 987655") { #expect(level == .debug) }
        #expect(!seen.contains { $0.0 == .error })
    }
}
