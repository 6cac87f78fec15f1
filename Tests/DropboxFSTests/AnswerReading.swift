// Test conveniences over the core's answers (Filesystem/Answer.swift), asked as an anonymous
// caller: what a lookup or an open answers now, on the FUSE thread (nil or `.needsListing` when it
// comes later), and the whole answer, awaited; a listing piece of names.

@testable import DropboxFS

extension Answer {
    /// The value answered now; nil when the answer comes later. A failure answered now is thrown.
    func now() throws(FilesystemError) -> Value? {
        switch self {
        case .now(let result): return try result.get()
        case .later: return nil
        }
    }

    /// Whether the answer comes later.
    var isLater: Bool {
        if case .later = self { return true }
        return false
    }
}

extension Filesystem {
    /// A lookup's answer now: found (one kernel lookup counted), not found, or `.needsListing`
    /// when it comes later.
    func lookupCached(parent: UInt64, name: String) throws(FilesystemError) -> CachedLookup {
        switch lookup(parent: parent, name: name, caller: .anonymous) {
        case .now(.success(let attributes)): return .found(attributes)
        case .now(.failure(.notFound)): return .notFound
        case .now(.failure(let error)): throw error
        case .later: return .needsListing
        }
    }

    /// A lookup's answer, now or once it comes.
    func lookup(parent: UInt64, name: String) async throws(FilesystemError) -> FileAttributes {
        try await lookup(parent: parent, name: name, caller: .anonymous).value
    }

    /// An open's answer now; nil when it comes later (the disk, or an export-only document).
    func openFileCached(_ inode: UInt64) throws(FilesystemError) -> OpenedFile? {
        try open(inode).now()
    }

    /// An open's answer, now or once it comes.
    func openFile(_ inode: UInt64) async throws(FilesystemError) -> OpenedFile {
        try await open(inode).value
    }
}

/// A piece of a listing that takes every entry offered.
struct EntryNames: DirectoryPiece {
    var entries: [DirectoryEntry] = []
    var names: [String] { entries.map(\.name) }

    mutating func add(_ entry: DirectoryEntry, nextOffset: UInt64) -> Bool {
        entries.append(entry)
        return true
    }
}
