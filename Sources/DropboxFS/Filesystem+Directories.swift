// Folder handles. opendir lists the folder if needed and snapshots its children (an immutable,
// cached sorted array, so opening a 50,000-entry folder copies nothing); readdir turns a range of
// the snapshot into entries with current attributes; releasedir drops it. Readdirplus reports
// which entries reached the kernel, since each one counts as a kernel lookup.
//
// The kernel caches folder listings (cache_readdir). A listing is stale when the folder changed
// after its snapshot was taken, so opendir lets the kernel keep its cache only when the last
// listing it was handed is the current one, and releasedir invalidates the folder again when the
// handle's snapshot was outdated (its pages may have reached the cache after the invalidation).

import DropboxAPI

/// An open folder handle: the folder, its parent, and its children when opened.
struct DirectorySnapshot {
    var folder: UInt32
    var parent: UInt32
    var children: [UInt32]
    var version: UInt32
    /// Whether the kernel may keep its cached listing for this open.
    var keepKernelCache: Bool
}

extension Filesystem {
    /// Opens a folder, listing it first when needed, and returns a handle ("." and ".." come first).
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

    /// Whether the kernel may keep its cached listing of the folder opened as `handle`.
    public func kernelMayKeepListing(handle: UInt64) -> Bool {
        state.withLock { $0.directoryHandles[handle]?.keepKernelCache ?? false }
    }

    /// Offers the entries of an open folder from `offset` on to `add` until it returns false
    /// (`nextOffset` is the offset of the following entry). With `countingLookups` (readdirplus)
    /// each accepted child entry counts one kernel lookup. Children that left the tree since
    /// opendir are skipped.
    public func readDirectory(
        handle: UInt64, from offset: Int, countingLookups: Bool,
        add: (_ entry: DirectoryEntry, _ nextOffset: Int) -> Bool
    ) throws(FilesystemError) {
        try state.withLock { (s: inout State) throws(FilesystemError) in
            guard let snapshot = s.directoryHandles[handle] else { throw .badHandle }
            let ownership = options.ownership
            guard offset >= 0 else { return }
            var position = offset
            while position < snapshot.children.count + 2 {
                let entry: DirectoryEntry
                if position < 2 {
                    let index = position == 0 ? snapshot.folder : snapshot.parent
                    entry = DirectoryEntry(
                        name: position == 0 ? "." : "..",
                        attributes: s.tree.nodes[Int(index)].attributes(inode: index, ownership: ownership))
                } else {
                    let child = snapshot.children[position - 2]
                    let node = s.tree.nodes[Int(child)]
                    guard node.attached, node.parent == snapshot.folder else {
                        position += 1
                        continue
                    }
                    entry = DirectoryEntry(name: node.name, attributes: node.attributes(inode: child, ownership: ownership))
                }
                guard add(entry, position + 1) else { return }
                if countingLookups && position >= 2 { s.tree.addLookup(UInt32(entry.attributes.inode)) }
                position += 1
            }
        }
    }

    public func releaseDirectory(handle: UInt64) {
        let stale: UInt32? = state.withLock { s in
            guard let snapshot = s.directoryHandles.removeValue(forKey: handle) else { return nil }
            guard s.tree.node(snapshot.folder) != nil else { return nil }
            return s.tree.version(of: snapshot.folder) == snapshot.version ? nil : snapshot.folder
        }
        if let stale { invalidations.publish([.inode(UInt64(stale))]) }
    }

    private func snapshot(_ index: UInt32, requireFresh: Bool) throws(FilesystemError) -> UInt64? {
        try state.withLock { (s: inout State) throws(FilesystemError) -> UInt64? in
            guard let node = s.tree.node(index) else { throw .stale }
            guard node.kind == .folder else { throw .notADirectory }
            if requireFresh && node.attached && !isFresh(index, in: s) { return nil }
            let version = s.tree.version(of: index)
            let snapshot = DirectorySnapshot(
                folder: index, parent: node.parent, children: s.tree.children(of: index), version: version,
                keepKernelCache: s.tree.markServed(index, version: version))
            let handle = s.nextHandle
            s.nextHandle += 1
            s.directoryHandles[handle] = snapshot
            return handle
        }
    }
}
