// The one table that turns errors into errno values, and the one place that decides how a Dropbox
// client error surfaces in the filesystem, including the mappings that depend on what was asked (a
// download of a revision Dropbox no longer has, a folder listing of a folder that is gone). Keeping
// them here makes "what errno does a user see when X happens" answerable by reading one file
// (SEMANTICS.md lists the same table).

import DropboxAPI

#if canImport(Glibc)
    import Glibc
#endif

extension FilesystemError {
    /// The errno the kernel receives.
    public var errno: Int32 {
        switch self {
        case .notFound: return ENOENT
        case .nameTooLong: return ENAMETOOLONG
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
        case .restricted: return EACCES
        case .remote: return EIO
        case .integrity: return EIO
        case .local: return EIO
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
        case .lookup(.restrictedContent): self = .restricted(.restrictedContent)
        // files/export of something Dropbox cannot convert.
        case .routeError(let summary) where summary.hasPrefix("non_exportable") || summary.hasPrefix("invalid_export_format"):
            self = .notDownloadable
        case .authentication, .accessDenied: self = .accessDenied(error)
        // A shared link that expired, went away or refuses its password during the mount.
        case .sharedLink(.isDirectory): self = .isADirectory
        case .sharedLink: self = .accessDenied(error)
        // A host that is unreachable or was not heard from (Connectivity.swift): not an I/O error.
        case .transport(let failure) where failure.kind == .offline || failure.meansUnreachable: self = .offline
        case .transport(let failure) where failure.kind == .cancelled: self = .interrupted
        default: self = .remote(error)
        }
    }

    /// How a failed download of a pinned revision surfaces: a revision Dropbox no longer has (not
    /// found, or a range past its end) makes the open handle stale (ESTALE, SEMANTICS.md "Reads").
    public static func download(_ error: DropboxError) -> FilesystemError {
        let general = FilesystemError(error)
        if general == .interrupted { return .interrupted }
        switch error {
        case .lookup(.notFound), .rangeNotSatisfiable: return .stale
        default: return general
        }
    }

    /// Whether a folder's own listing failed because the folder is gone on Dropbox (not_found): the
    /// caller then takes it out of the tree and answers ENOENT; any other failure maps as usual.
    public static func folderGone(_ error: DropboxError) -> Bool {
        if case .lookup(.notFound) = error { return true }
        return false
    }
}
