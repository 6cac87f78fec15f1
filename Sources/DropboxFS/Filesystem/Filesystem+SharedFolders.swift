// The facade's routing of the shared-folders view (SharedFolders/SharedFolders.swift): the view's
// name looked up in the mount's root, and every request on an inode of the view
// (SharedFolders.owns), go to the view; the tree never sees them. The mount root's listing
// ends with the view's folder; an entry of the account's own Dropbox with the same name at the
// top is not shown and cannot be reached (the view wins, one log line says so), so the root
// never lists two entries of one name.

import Log

extension Filesystem {
    /// The answer of a lookup that belongs to the view, nil for the tree's.
    func sharedFoldersLookup(parent: UInt64, name: String) -> Answer<FileAttributes>? {
        guard let sharedFolders else { return nil }
        if SharedFolders.owns(parent) { return sharedFolders.lookup(parent: parent, name: name) }
        guard parent == Self.rootInode, name == sharedFolders.name else { return nil }
        return .deciding { () throws(FilesystemError) -> Answer<FileAttributes> in
            .now(.success(try sharedFolders.attributes(of: SharedFolders.topInode)))
        }
    }

    /// Opens a view folder: now, and never cached by the kernel (what it lists may change).
    func openSharedDirectory(_ inode: UInt64, _ view: SharedFolders) -> Answer<OpenedDirectory> {
        .deciding { () throws(FilesystemError) -> Answer<OpenedDirectory> in
            guard try view.attributes(of: inode).kind == .folder else { throw .notADirectory }
            return .now(.success(OpenedDirectory(cacheListing: false, keepCachedListing: false)))
        }
    }

    /// A piece of a view folder's listing from `cookie` (its position: "." 0, ".." 1, then the
    /// entries); the first piece lists the folder again when its listing is older than the lifetime.
    func readSharedDirectory<Piece: DirectoryPiece>(
        _ inode: UInt64, from cookie: UInt64, into piece: Piece, _ view: SharedFolders
    ) -> Answer<Piece> {
        .later { () async throws(FilesystemError) -> Piece in
            var piece = piece
            var position = cookie
            for entry in try await view.entries(of: inode, from: cookie) {
                position += 1
                guard piece.add(entry, nextOffset: position) else { break }
            }
            return piece
        }
    }

    /// Opens a file of the view, pinned to the revision its folder's listing showed, like any file.
    func openSharedFile(_ inode: UInt64, _ view: SharedFolders) -> Answer<OpenedFile> {
        .deciding { () throws(FilesystemError) -> Answer<OpenedFile> in
            let pinned = try view.pinnedFile(inode)
            if let opened = reader.openNow(pinned) { return .now(.success(opened)) }
            return .later { [self] () async throws(FilesystemError) -> OpenedFile in try await reader.open(pinned) }
        }
    }

    /// The cookie of the view's folder in the root's listing: after every cookie of the tree's
    /// (DirectoryCookie: a child's is its index << 32 | its position + 3, below this).
    static let sharedFoldersCookie = UInt64.max

    /// Says once, in the log, that an entry of the account's own Dropbox is hidden by the view.
    func noteSharedFoldersNameTaken() {
        guard let sharedFolders, sharedFoldersClashLogged.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
        else { return }
        Log.warning(
            "the top of this Dropbox has an entry named \(Log.quoted(sharedFolders.name)), the name of the folder "
                + "--shared-folders shows: that folder is shown, and the entry of your Dropbox cannot be reached "
                + "through this mount (rename it on Dropbox to see it)")
    }
}

extension Filesystem {
    /// The view, for an inode it owns (ESTALE when the mount shows none: the kernel never had one).
    func sharedView() throws(FilesystemError) -> SharedFolders {
        guard let sharedFolders else { throw .stale }
        return sharedFolders
    }
}
