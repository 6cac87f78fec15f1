// Name lookup, attributes, symlink targets and the kernel's lookup counts.
//
// Below it, the extended attributes (getxattr, listxattr), asked of the same entries.

import DropboxAPI

extension Filesystem {
    /// What the tree says of a name now.
    enum CachedLookup: Sendable, Equatable {
        case found(FileAttributes)
        case notFound
        /// The folder must be listed first.
        case needsListing
    }

    /// Looks `name` up in folder `parent` for `caller`: now from the tree when it can (the common
    /// case once a folder is listed), later once the folder is listed, or once the kernel dropped
    /// the caller's cached lean listings (Filesystem+Callers.swift). `.notFound` when there is no
    /// such name. On success the kernel holds one more reference to the returned inode (released
    /// through `forget`). Names match byte for byte (SEMANTICS.md).
    public func lookup(parent: UInt64, name: String, caller: Caller) -> Answer<FileAttributes> {
        if let shared = sharedFoldersLookup(parent: parent, name: name) { return shared }
        if let hidden = historyLookup(parent: parent, name: name) { return hidden }
        let later = Answer<FileAttributes>.later { [self] () async throws(FilesystemError) -> FileAttributes in
            try await lookupListing(parent: parent, name: name, caller: caller)
        }
        // Asked before the lookup counts a kernel reference: the later answer counts its own.
        if waitsForLeanListings(in: parent) { return later }
        return .deciding { () throws(FilesystemError) -> Answer<FileAttributes> in
            switch try lookupStep(try Self.index(parent), name: name, fold: FoldKey(name), listed: false) {
            case .found(let attributes):
                let dropped = foundInLookup(attributes, in: parent, by: caller)
                if !dropped.isEmpty {
                    let invalidations = self.invalidations
                    Task { await invalidations.dropListings(dropped, waitingAtMost: 0) }
                }
                return .now(.success(attributes))
            case .notFound: return .now(.failure(.notFound))
            case .needsListing: return later
            }
        }
    }

    /// The later answer of `lookup`: lists the folder when needed, and waits (briefly) for the
    /// kernel to drop the caller's cached lean listings when a file was found in one.
    private func lookupListing(
        parent: UInt64, name: String, caller: Caller
    ) async throws(FilesystemError) -> FileAttributes {
        let parentIndex = try Self.index(parent)
        let fold = FoldKey(name)
        var listed = false
        while true {
            switch try lookupStep(parentIndex, name: name, fold: fold, listed: listed) {
            case .found(let attributes):
                await invalidations.dropListings(
                    foundInLookup(attributes, in: parent, by: caller), waitingAtMost: Walkers.dropWait)
                return attributes
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

    /// The kernel released references to these inodes (`forget` for each); a forgotten folder
    /// has no cached lean listing left to drop (Walkers.swift).
    public func forget(_ forgets: [(inode: UInt64, count: UInt64)]) {
        for forget in forgets { self.forget(forget.inode, count: forget.count) }
        walkers.forgot(forgets.lazy.map(\.inode))
    }

    /// The attributes of a known inode.
    public func attributes(of inode: UInt64) throws(FilesystemError) -> FileAttributes {
        if SharedFolders.owns(inode) { return try sharedView().attributes(of: inode) }
        if HistoryViews.owns(inode) { return try history.attributes(of: inode) }
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

// MARK: -
// Extended attributes that expose Dropbox facts about an entry: user.dropbox.id, .rev and
// .content_hash (files only for the last two). The root also carries user.dropboxfs.status, the
// sync engine's progress, which `dropboxfs status` reads. An entry under a pin carries
// user.dropboxfs.offline, and reads of the unlisted pin request names are answered by
// Filesystem+Pins.swift. Read-only; setting one answers EROFS.

extension Filesystem {
    /// The root's attribute that `dropboxfs status` reads.
    public static let statusAttribute = "user.dropboxfs.status"

    /// The extended attributes of an inode, in a stable order.
    public func extendedAttributes(of inode: UInt64) throws(FilesystemError) -> [(name: String, value: String)] {
        if SharedFolders.owns(inode) { return try sharedView().extendedAttributes(of: inode) }
        if HistoryViews.owns(inode) { return try history.extendedAttributes(of: inode) }
        let index = try Self.index(inode)
        if index == MetadataTree.rootIndex { return [(Self.statusAttribute, syncStatus())] }
        return try tree.dropboxAttributes(of: index) + offlineAttributes(of: index)
    }
}

extension Filesystem {
    /// One extended attribute. Names outside the `user.` namespace answer EOPNOTSUPP rather than
    /// ENODATA: `ls -l` then stops asking for SELinux labels and ACLs on this mount after the first
    /// file, instead of costing a kernel round trip per entry.
    public func extendedAttribute(_ name: String, of inode: UInt64) throws(FilesystemError) -> String {
        if SharedFolders.owns(inode) {
            let view = try sharedView()
            if Self.request(name) != nil {
                _ = try view.attributes(of: inode)
                return "refused: folders shared with you that you have not added (\(view.name)) are not kept offline"
            }
            guard name.hasPrefix("user.") else { throw .notSupported }
            guard let value = try view.extendedAttributes(of: inode).first(where: { $0.name == name })?.value else {
                throw .noAttribute
            }
            return value
        }
        guard name.hasPrefix("user.") else {
            if HistoryViews.owns(inode) { _ = try history.attributes(of: inode) } else { _ = try Self.index(inode) }
            throw .notSupported
        }
        if !HistoryViews.owns(inode), let answer = try pinRequest(name, of: Self.index(inode)) { return answer }
        guard let value = try extendedAttributes(of: inode).first(where: { $0.name == name })?.value else { throw .noAttribute }
        return value
    }
}
