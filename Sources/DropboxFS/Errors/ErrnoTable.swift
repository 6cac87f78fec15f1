// The one table that turns errors into errno values, and the one place that decides how a Dropbox
// client error surfaces in the filesystem. Keeping both here makes "what errno does a user see when
// X happens" answerable by reading one file (SEMANTICS.md lists the same table).

import DropboxAPI

#if canImport(Glibc)
    import Glibc
#endif

extension FilesystemError {
    /// The errno the kernel receives.
    public var errno: Int32 {
        switch self {
        case .notFound: return ENOENT
        case .notADirectory: return ENOTDIR
        case .isADirectory: return EISDIR
        case .readOnly: return EROFS
        case .stale: return ESTALE
        case .badHandle: return EBADF
        case .notSupported: return EOPNOTSUPP
        case .noAttribute: return ENODATA
        case .bufferTooSmall: return ERANGE
        case .notDownloadable: return EACCES
        case .accessDenied: return EACCES
        case .remote: return EIO
        case .integrity: return EIO
        case .interrupted: return EINTR
        case .offline: return ENETUNREACH
        case .unmounting: return ENOTCONN
        }
    }

    /// How a Dropbox client error appears to filesystem callers.
    public init(_ error: DropboxError) {
        switch error {
        case .lookup(.notFound): self = .notFound
        case .lookup(.notFolder): self = .notADirectory
        case .lookup(.notFile): self = .isADirectory
        case .unsupportedFile: self = .notDownloadable
        // files/export of something Dropbox cannot convert.
        case .routeError(let summary) where summary.hasPrefix("non_exportable") || summary.hasPrefix("invalid_export_format"):
            self = .notDownloadable
        case .authentication(let failure): self = .accessDenied(DropboxError.authentication(failure).description)
        case .accessDenied: self = .accessDenied(error.description)
        case .transport(let failure) where failure.kind == .offline || failure.kind == .couldNotConnect: self = .offline
        case .transport(let failure) where failure.kind == .cancelled: self = .interrupted
        default: self = .remote(error.description)
        }
    }
}
