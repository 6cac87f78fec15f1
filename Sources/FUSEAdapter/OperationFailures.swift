// The one failure path of every FUSE operation (mountpoint-s3's `fuse_error!`): a request that
// fails is answered with its error's errno (the core's errno table, ErrnoTable.swift), logged with
// the operation, the inode, the errno and the cause, at the error's own level, and counted per
// operation. Answers a caller expects every day (no such entry or attribute, read-only, interrupted,
// unmounting, offline) are logged at debug; failures of Dropbox, of the network or of our own
// bookkeeping at warning (the core has logged their details already, so none is an error). The
// counts are shown by `dropboxfs status` through the root's status attribute (`failed_<op>=N`,
// docs/SEMANTICS.md, "Status").
//
// Locking: `counts` (a Mutex) guards the counters only.

import DropboxFS
import Log
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The FUSE operations, as they are named in the log and in the status counters.
enum Operation: String, Sendable, CaseIterable {
    case lookup, forget, getattr, readlink, opendir, readdir, readdirplus, releasedir, statfs
    case open, read, release, getxattr, listxattr
    // Refused on a read-only mount (EROFS).
    case setattr, mknod, mkdir, unlink, rmdir, symlink, rename, link, write, create, setxattr, removexattr
    case fallocate
}

final class OperationFailures: Sendable {
    private let counts = Mutex<[Operation: Int]>([:])

    /// Logs and counts the failure of `operation` on `inode` with `error`; returns the errno to answer.
    func record(_ operation: Operation, inode: UInt64, _ error: FilesystemError) -> Int32 {
        let errno = error.errno
        counts.withLock { $0[operation, default: 0] += 1 }
        Log.log(Self.level(of: error), Self.message(operation, inode: inode, error))
        return errno
    }

    /// Failures so far per operation (operations that never failed are absent).
    var snapshot: [Operation: Int] { counts.withLock { $0 } }

    /// The counts as `key=value` fields for the status attribute, in the table's order:
    /// "failed=3 failed_getxattr=2 failed_read=1" ("failed=0" when nothing failed).
    var statusFields: String {
        let counts = snapshot
        var fields = ["failed=\(counts.values.reduce(0, +))"]
        for operation in Operation.allCases {
            if let count = counts[operation] { fields.append("failed_\(operation.rawValue)=\(count)") }
        }
        return fields.joined(separator: " ")
    }

    /// The level a failure is logged at: answers the caller expects (or caused) at debug, failures
    /// of Dropbox, the network or a handle at warning.
    static func level(of error: FilesystemError) -> LogLevel {
        switch error {
        case .notFound, .nameTooLong, .notADirectory, .isADirectory, .readOnly, .stale, .notSupported, .noAttribute, .bufferTooSmall,
            .notDownloadable, .restricted, .interrupted, .offline, .unmounting:
            return .debug
        case .badHandle, .accessDenied, .remote, .integrity, .local:
            return .warning
        }
    }

    /// "read of inode 42 failed: EIO (Dropbox or the network failed: ...)".
    static func message(_ operation: Operation, inode: UInt64, _ error: FilesystemError) -> String {
        "\(operation.rawValue) of inode \(inode) failed: \(errnoName(error.errno)) (\(cause(error)))"
    }

    /// The error's own account of itself, with its cause (FilesystemError.swift).
    static func cause(_ error: FilesystemError) -> String { error.description }

    /// The symbolic name of the errnos the core answers ("errno N" for any other).
    static func errnoName(_ errno: Int32) -> String {
        errnoNames[errno] ?? "errno \(errno)"
    }

    private static let errnoNames: [Int32: String] = [
        ENOENT: "ENOENT", ENOTDIR: "ENOTDIR", EISDIR: "EISDIR", EROFS: "EROFS", ESTALE: "ESTALE", EBADF: "EBADF",
        ENAMETOOLONG: "ENAMETOOLONG", EOPNOTSUPP: "EOPNOTSUPP", ENODATA: "ENODATA", ERANGE: "ERANGE", EACCES: "EACCES", EIO: "EIO",
        EINTR: "EINTR", ENETUNREACH: "ENETUNREACH", ENOTCONN: "ENOTCONN",
    ]
}
