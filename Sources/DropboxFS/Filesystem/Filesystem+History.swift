// The facade's routing of the history views (History/HistoryViews.swift): a hidden name looked up
// in a folder, and every request on an inode of a view (HistoryViews.owns), go to the views; the
// tree never sees them. A real Dropbox entry with a hidden name wins over the view once its
// folder is listed (the view then cannot be reached there).

extension Filesystem {
    /// The answer of a lookup that belongs to the views, nil for the tree's. Never asks Dropbox
    /// for a hidden name itself: `find`, `du`, `ls -a` never look one up, and one who does gets
    /// the view at once.
    func historyLookup(parent: UInt64, name: String) -> Answer<FileAttributes>? {
        guard options.historyViews else { return nil }
        if HistoryViews.owns(parent) { return history.lookup(parent: parent, name: name) }
        guard HistoryNames.isHidden(name), let folder = try? Self.index(parent) else { return nil }
        switch tree.historyName(folder: folder, name: name) {
        case .file, .other: return nil
        case .absent, .unknown: break
        }
        return .deciding { () throws(FilesystemError) -> Answer<FileAttributes> in
            .now(.success(try history.root(named: name, in: folder)))
        }
    }

    /// Opens a view folder: now, and never cached by the kernel (what it lists may change).
    func openHistoryDirectory(_ inode: UInt64) -> Answer<OpenedDirectory> {
        .deciding { () throws(FilesystemError) -> Answer<OpenedDirectory> in
            guard try history.attributes(of: inode).kind == .folder else { throw .notADirectory }
            return .now(.success(OpenedDirectory(cacheListing: false, keepCachedListing: false)))
        }
    }

    /// A piece of a view folder's listing from `cookie` (its position: "." 0, ".." 1, then the
    /// entries), fetching revision pages as the listing reaches them.
    func readHistoryDirectory<Piece: DirectoryPiece>(_ inode: UInt64, from cookie: UInt64, into piece: Piece) -> Answer<Piece> {
        .later { [self] () async throws(FilesystemError) -> Piece in
            var piece = piece
            var position = cookie
            while true {
                let (entries, more) = try await history.entries(of: inode, from: position)
                for entry in entries {
                    position += 1
                    guard piece.add(entry, nextOffset: position) else { return piece }
                }
                if !more || entries.isEmpty { return piece }
            }
        }
    }

    /// Opens a revision or a deleted file of a view, pinned to its revision, like any file.
    func openHistoryFile(_ inode: UInt64) -> Answer<OpenedFile> {
        .deciding { () throws(FilesystemError) -> Answer<OpenedFile> in
            let pinned = try history.pinnedFile(inode)
            if let opened = reader.openNow(pinned) { return .now(.success(opened)) }
            return .later { [self] () async throws(FilesystemError) -> OpenedFile in try await reader.open(pinned) }
        }
    }
}
