// Test conveniences over Filesystem.readDirectory: all entries of an open folder as an array, and
// the readdirplus form.

import DropboxFS

extension Filesystem {
    func directoryEntries(handle: UInt64, from offset: Int) throws(FilesystemError) -> [DirectoryEntry] {
        var entries: [DirectoryEntry] = []
        try readDirectory(handle: handle, from: offset, countingLookups: false) { entry, _ in
            entries.append(entry)
            return true
        }
        return entries
    }

    func directoryEntriesPlus(
        handle: UInt64, from offset: Int, add: (_ entry: DirectoryEntry, _ nextOffset: Int) -> Bool
    ) throws(FilesystemError) {
        try readDirectory(handle: handle, from: offset, countingLookups: true, add: add)
    }
}
