// Test conveniences over Filesystem.readDirectory: all entries of a folder from an offset as an
// array, the readdirplus form, and a reader that takes a few entries at a time like the kernel.

@testable import DropboxFS

extension Filesystem {
    func directoryEntries(_ folder: UInt64, from offset: UInt64) throws(FilesystemError) -> [DirectoryEntry] {
        var entries: [DirectoryEntry] = []
        try readDirectory(folder, from: offset, countingLookups: false) { entry, _ in
            entries.append(entry)
            return true
        }
        return entries
    }

    func directoryEntriesPlus(
        _ folder: UInt64, from offset: UInt64, add: (_ entry: DirectoryEntry, _ nextOffset: UInt64) -> Bool
    ) throws(FilesystemError) {
        try readDirectory(folder, from: offset, countingLookups: true, add: add)
    }

    /// One piece of a listing as the kernel reads it: at most `count` entries from `offset`, and
    /// the offset to continue from.
    func directoryPiece(
        _ folder: UInt64, from offset: UInt64, count: Int, plus: Bool = false
    ) throws(FilesystemError) -> (names: [String], next: UInt64) {
        var names: [String] = []
        var next = offset
        try readDirectory(folder, from: offset, countingLookups: plus) { entry, nextOffset in
            guard names.count < count else { return false }
            names.append(entry.name)
            next = nextOffset
            return true
        }
        return (names, next)
    }
}
