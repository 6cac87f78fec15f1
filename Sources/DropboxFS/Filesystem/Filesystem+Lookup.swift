// Name lookup, attributes, symlink targets and the kernel's lookup counts.

import DropboxAPI

extension Filesystem {
    /// The answer to a lookup that needs no request, when there is one.
    public enum CachedLookup: Sendable, Equatable {
        case found(FileAttributes)
        case notFound
        /// The folder must be listed first: call `lookup`.
        case needsListing
    }

    /// Looks `name` up in folder `parent` without waiting: answers from the tree when it can
    /// (the common case once a folder is listed), so the FUSE layer can reply on its own thread.
    /// A `.found` answer counts one kernel lookup.
    public func lookupCached(parent: UInt64, name: String) throws(FilesystemError) -> CachedLookup {
        let parentIndex = try Self.index(parent)
        return try lookupStep(parentIndex, name: name, fold: FoldKey(name), listed: false)
    }

    /// Looks `name` up in folder `parent`, listing the folder first when needed. On success the
    /// kernel holds one more reference to the returned inode (released through `forget`). Names
    /// match byte for byte (SEMANTICS.md).
    public func lookup(parent: UInt64, name: String) async throws(FilesystemError) -> FileAttributes {
        let parentIndex = try Self.index(parent)
        let fold = FoldKey(name)
        var listed = false
        while true {
            switch try lookupStep(parentIndex, name: name, fold: fold, listed: listed) {
            case .found(let attributes): return attributes
            case .notFound: throw .notFound
            case .needsListing:
                // A lookup is someone opening a path (`cat a/b/c`): it does not wait for the
                // fill, one folder listing per level answers it in a round trip each.
                try await sync.ensureListed(parentIndex, waitForFill: false)
                listed = true
            }
        }
    }

    private func lookupStep(_ parent: UInt32, name: String, fold: FoldKey, listed: Bool) throws(FilesystemError) -> CachedLookup {
        try tree.lookup(parent: parent, name: name, fold: fold, listed: listed, ownership: options.ownership)
    }

    /// The attributes of a known inode.
    public func attributes(of inode: UInt64) throws(FilesystemError) -> FileAttributes {
        let index = try Self.index(inode)
        return try tree.attributes(of: index, ownership: options.ownership)
    }

    /// The kernel released `count` references to `inode`. Once it holds none, it has evicted the
    /// inode with its page cache, so the reader forgets what it kept about it.
    public func forget(_ inode: UInt64, count: UInt64) {
        guard let index = try? Self.index(inode) else { return }
        if tree.forget(index, count: count) { reader.forgetInode(inode) }
    }

    /// The target of a symlink.
    public func readlink(_ inode: UInt64) throws(FilesystemError) -> String {
        let index = try Self.index(inode)
        return try tree.symlinkTarget(index)
    }
}
