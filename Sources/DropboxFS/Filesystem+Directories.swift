// Folder handles: opendir lists the folder if needed and snapshots its entries, readdir serves
// slices of the snapshot by offset, releasedir drops it. Readdirplus reports which entries reached
// the kernel, since each one counts as a kernel lookup.

import DropboxAPI

extension Filesystem {
    /// Opens a folder and returns a handle to a snapshot of its entries ("." and ".." first).
    public func openDirectory(_ inode: UInt64) async throws(FilesystemError) -> UInt64 {
        let index = try Self.index(inode)
        try await ensureListed(index)
        return try snapshot(index, requireFresh: false)!
    }

    /// Opens a folder without waiting when its listing is fresh; nil when it must be listed first
    /// (then call `openDirectory`).
    public func openDirectoryCached(_ inode: UInt64) throws(FilesystemError) -> UInt64? {
        try snapshot(try Self.index(inode), requireFresh: true)
    }

    private func snapshot(_ index: UInt32, requireFresh: Bool) throws(FilesystemError) -> UInt64? {
        try state.withLock { (s: inout State) throws(FilesystemError) -> UInt64? in
            guard let node = s.tree.node(index) else { throw .stale }
            guard node.kind == .folder else { throw .notADirectory }
            if requireFresh && node.attached && !isFresh(index, in: s) { return nil }
            let ownership = options.ownership
            var entries: [DirectoryEntry] = []
            let children = s.tree.children(of: index)
            entries.reserveCapacity(children.count + 2)
            entries.append(DirectoryEntry(name: ".", attributes: node.attributes(inode: index, ownership: ownership)))
            let parent = s.tree.nodes[Int(node.parent)]
            entries.append(
                DirectoryEntry(name: "..", attributes: parent.attributes(inode: node.parent, ownership: ownership)))
            for child in children {
                let childNode = s.tree.nodes[Int(child)]
                entries.append(
                    DirectoryEntry(name: childNode.name, attributes: childNode.attributes(inode: child, ownership: ownership)))
            }
            let handle = s.nextHandle
            s.nextHandle += 1
            s.directoryHandles[handle] = entries
            return handle
        }
    }

    /// Entries of an open folder from `offset` on (an offset is an index into the snapshot).
    public func directoryEntries(handle: UInt64, from offset: Int) throws(FilesystemError) -> ArraySlice<DirectoryEntry> {
        try state.withLock { (s: inout State) throws(FilesystemError) -> ArraySlice<DirectoryEntry> in
            guard let entries = s.directoryHandles[handle] else { throw .badHandle }
            guard offset >= 0, offset < entries.count else { return [] }
            return entries[offset...]
        }
    }

    /// For readdirplus: offers entries from `offset` to `add` until it returns false, and counts a
    /// kernel lookup for each child entry it accepted whose node is still the one snapshotted.
    /// Entries whose node left the tree since opendir are skipped.
    public func directoryEntriesPlus(
        handle: UInt64, from offset: Int, add: (_ entry: DirectoryEntry, _ nextOffset: Int) -> Bool
    ) throws(FilesystemError) {
        try state.withLock { (s: inout State) throws(FilesystemError) in
            guard let entries = s.directoryHandles[handle] else { throw .badHandle }
            var position = max(0, offset)
            while position < entries.count {
                let entry = entries[position]
                let isDot = position < 2
                if !isDot {
                    let index = UInt32(entry.attributes.inode)
                    guard let node = s.tree.node(index), node.generation == entry.attributes.generation else {
                        position += 1
                        continue
                    }
                }
                guard add(entry, position + 1) else { return }
                if !isDot { s.tree.addLookup(UInt32(entry.attributes.inode)) }
                position += 1
            }
        }
    }

    public func releaseDirectory(handle: UInt64) {
        _ = state.withLock { $0.directoryHandles.removeValue(forKey: handle) }
    }
}
