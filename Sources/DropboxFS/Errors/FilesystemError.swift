// The one error type of the filesystem core. FUSE replies carry only an errno, so each case maps to
// exactly one in ErrnoTable.swift. A failure keeps its cause as a value (the Dropbox client's error,
// what the content check found, the disk cache's errno), for the log line and for tests; how a
// cause becomes a case is decided in ErrnoTable.swift too.

import DropboxAPI

#if canImport(Glibc)
    import Glibc
#endif

public enum FilesystemError: Error, Sendable, Equatable {
    /// No such entry (ENOENT).
    case notFound
    /// A looked-up name longer than any Linux name, 255 bytes (ENAMETOOLONG).
    case nameTooLong
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
    /// Dropbox refused our credentials or the access (EACCES); the daemon also logs how to fix it.
    case accessDenied(DropboxError)
    /// The account may not read this entry, by its access level (EACCES): an answer, not a
    /// failure, never retried.
    case restricted(Restriction)
    /// Dropbox or the network failed (EIO).
    case remote(DropboxError)
    /// Bytes Dropbox sent could not be trusted or were incomplete (EIO).
    case integrity(IntegrityFailure)
    /// The disk cache failed under a read (EIO).
    case local(LocalFailure)
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

/// What the account may not read (docs/SEMANTICS.md, "Access levels").
public enum Restriction: Sendable, Equatable, CustomStringConvertible {
    /// A folder whose `sharing_info` says `no_access`.
    case noAccessFolder(String)
    /// A file Dropbox blocks (`restricted_content`: a copyright or legal hold).
    case restrictedContent
    /// A folder shared with the account whose namespace Dropbox will not let it read
    /// (`no_permission`; SharedFolders/).
    case sharedFolderNotReadable(String)
    /// The app may not list the folders shared with the account (it lacks this permission, e.g.
    /// `sharing.read`); logged once with how to grant it.
    case appPermission(String)

    public var description: String {
        switch self {
        case .appPermission(let scope): return "the Dropbox app lacks the permission '\(scope)'"
        case .sharedFolderNotReadable(let name): return "Dropbox does not let this account read the shared folder \(name) (no_permission)"
        case .noAccessFolder(let path): return "\(path) is a folder this account may not open (no_access)"
        case .restrictedContent: return "Dropbox blocks this file's content (restricted_content)"
        }
    }
}

/// Why bytes from Dropbox were refused. `file` names the file for the log (its path and revision).
public enum IntegrityFailure: Sendable, Equatable, CustomStringConvertible {
    /// The file's bytes do not hash to its content_hash.
    case contentHashMismatch(file: String)
    /// This pass of a big file read bytes of a download that later failed the check.
    case damagedPass(file: String)
    /// The content_hash check could not get the bytes it needed.
    case checkIncomplete(file: String)
    /// Dropbox kept sending fewer bytes than asked.
    case shortDownload(file: String)

    public var description: String {
        switch self {
        case .contentHashMismatch(let file): return "\(file) does not match its content_hash"
        case .damagedPass(let file): return "\(file): this pass read bytes of a download that did not match its content_hash"
        case .checkIncomplete(let file): return "\(file): the content_hash check did not complete"
        case .shortDownload(let file): return "\(file): short download"
        }
    }
}

/// Why the reader's own storage failed a read.
public enum LocalFailure: Sendable, Equatable, CustomStringConvertible {
    /// A system call on a disk cache file failed with `errno`.
    case diskCache(operation: String, errno: Int32)
    /// A disk cache entry could not be checked against its content_hash.
    case diskCacheUnchecked
    /// Downloaded bytes were evicted from memory before the read could take them.
    case evicted(file: String)

    public var description: String {
        switch self {
        case .diskCache(let operation, let errno): return "disk cache: \(operation): \(String(cString: strerror(errno)))"
        case .diskCacheUnchecked: return "the disk cache entry could not be checked"
        case .evicted(let file): return "\(file): downloaded bytes were evicted before they could be read"
        }
    }
}

extension FilesystemError: CustomStringConvertible {
    /// What went wrong, with the cause, for log lines (the adapter's failure line quotes it).
    public var description: String {
        switch self {
        case .notFound: return "no such entry"
        case .nameTooLong: return "name longer than 255 bytes"
        case .notADirectory: return "not a folder"
        case .isADirectory: return "a folder"
        case .readOnly: return "read-only"
        case .stale: return "the inode or handle is gone"
        case .badHandle: return "unknown file handle"
        case .notSupported: return "not supported"
        case .noAttribute: return "no such attribute"
        case .bufferTooSmall: return "buffer too small"
        case .notDownloadable: return "cannot be downloaded"
        case .accessDenied(let cause): return "access denied: \(cause)"
        case .restricted(let why): return "not allowed: \(why)"
        case .remote(let cause): return "Dropbox or the network failed: \(cause)"
        case .integrity(let failure): return "content check failed: \(failure)"
        case .local(let failure): return "local storage failed: \(failure)"
        case .interrupted: return "interrupted"
        case .offline: return "Dropbox cannot be reached"
        case .unmounting: return "the mount is going away"
        }
    }
}
