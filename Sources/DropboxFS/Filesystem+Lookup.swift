// Name lookup, attributes, symlink targets and the kernel's lookup counts.

import DropboxAPI

extension Filesystem {
    /// Looks `name` up in folder `parent`. On success the kernel holds one more reference to the
    /// returned inode (released through `forget`). Names match byte for byte (SEMANTICS.md).
    public func lookup(parent: UInt64, name: String) async throws(FilesystemError) -> FileAttributes {
        let parentIndex = try Self.index(parent)
        let fold = FoldKey(name)
        for attempt in 0..<2 {
            enum Outcome {
                case found(FileAttributes)
                case missing
                case needsListing
            }
            let outcome: Outcome = try state.withLock { (s: inout State) throws(FilesystemError) -> Outcome in
                guard let folder = s.tree.node(parentIndex) else { throw .stale }
                guard folder.kind == .folder else { throw .notADirectory }
                switch s.tree.lookup(parent: parentIndex, fold: fold) {
                case .found(let child):
                    let node = s.tree.nodes[Int(child)]
                    guard node.name.utf8.elementsEqual(name.utf8) else {
                        return isFresh(parentIndex, in: s) || attempt > 0 ? .missing : .needsListing
                    }
                    s.tree.addLookup(child)
                    return .found(node.attributes(inode: child, ownership: options.ownership))
                case .absent:
                    return isFresh(parentIndex, in: s) || attempt > 0 ? .missing : .needsListing
                case .unknown:
                    return attempt > 0 ? .missing : .needsListing
                }
            }
            switch outcome {
            case .found(let attributes): return attributes
            case .missing: throw .notFound
            case .needsListing: try await ensureListed(parentIndex)
            }
        }
        throw .notFound
    }

    /// The attributes of a known inode.
    public func attributes(of inode: UInt64) throws(FilesystemError) -> FileAttributes {
        let index = try Self.index(inode)
        return try state.withLock { (s: inout State) throws(FilesystemError) -> FileAttributes in
            guard let node = s.tree.node(index) else { throw .stale }
            return node.attributes(inode: index, ownership: options.ownership)
        }
    }

    /// The kernel released `count` references to `inode`.
    public func forget(_ inode: UInt64, count: UInt64) {
        guard let index = try? Self.index(inode) else { return }
        state.withLock { $0.tree.forget(index, count: count) }
    }

    /// The target of a symlink.
    public func readlink(_ inode: UInt64) throws(FilesystemError) -> String {
        let index = try Self.index(inode)
        return try state.withLock { (s: inout State) throws(FilesystemError) -> String in
            guard let node = s.tree.node(index) else { throw .stale }
            guard node.kind == .symlink, let target = s.tree.symlinkTarget(index) else { throw .notSupported }
            return target
        }
    }

    func isFresh(_ folder: UInt32, in s: State) -> Bool {
        guard s.tree.isComplete(folder) else { return false }
        if options.folderListingTTL == .infinity { return true }
        return options.monotonicNow() - s.tree.listedAt(folder) < options.folderListingTTL
    }
}
