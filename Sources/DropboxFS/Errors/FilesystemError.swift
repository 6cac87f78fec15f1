// The one error type of the filesystem core. FUSE replies carry only an errno, so each case maps to
// exactly one in ErrnoTable.swift; the associated text is for the log line.

import DropboxAPI

public enum FilesystemError: Error, Sendable, Equatable {
    /// No such entry (ENOENT).
    case notFound
    /// A path component is a file (ENOTDIR).
    case notADirectory
    /// A directory where a file was needed (EISDIR).
    case isADirectory
    /// Any attempt to change the filesystem (EROFS).
    case readOnly
    /// The inode or handle is no longer known (ESTALE).
    case stale
    /// An unknown file handle (EBADF).
    case badHandle
    /// The operation is not supported here (ENOTSUP / EOPNOTSUPP).
    case notSupported
    /// No such extended attribute (ENODATA).
    case noAttribute
    /// A reply buffer is too small (ERANGE).
    case bufferTooSmall
    /// The file cannot be downloaded (export-only documents) (EACCES).
    case notDownloadable
    /// Dropbox refused our credentials (EACCES); the daemon also logs how to fix it.
    case accessDenied(String)
    /// Dropbox or the network failed (EIO); the text says why.
    case remote(String)
    /// Bytes did not match Dropbox's content_hash (EIO).
    case integrity(String)
    /// The request was interrupted: its caller was signalled, or the work it waited for was
    /// cancelled (EINTR).
    case interrupted
    /// Dropbox cannot be reached, and what was asked is not in memory or the disk cache
    /// (ENETUNREACH): answered at once while the mount is offline (Sync/Connectivity.swift).
    case offline
    /// The mount is going away (unmounted, or the daemon was told to stop) while the request was
    /// in flight (ENOTCONN, what every later call on the mount gets from the kernel).
    case unmounting
}
