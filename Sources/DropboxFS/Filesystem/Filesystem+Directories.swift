// Folder listings for the kernel, without folder handles. The kernel reads a folder in pieces
// (readdir or readdirplus from an offset); each piece is served from the folder's cached sorted
// child array, so a 50,000-entry folder costs no copy and opening a folder costs no round trip: on
// kernels that allow it the adapter answers opendir with ENOSYS, and the kernel opens folders itself
// with its readdir cache kept (FOPEN_KEEP_CACHE | FOPEN_CACHE_DIR) and sends no releasedir.
//
// A piece, and opendir, are answered now (Answer.swift) when the folder is listed, and later when
// the folder must be listed first or a file manager's first piece waits for the folder's
// thumbnails (Filesystem+Callers.swift), as lookups are. What the kernel may cache
// (OpenedDirectory) and which callers get files lean are decided here; when a listing counts as
// current, by the tree's one rule (LiveTree.isListed).
//
// Offsets are cookies (Tree/LiveTree+Queries.swift): a listing read while the folder changes
// neither repeats nor skips an entry that did not change. The tree serves the pieces
// (LiveTree+Queries.swift).
//
// The kernel's readdir cache is made stale by remote changes. Every change of a complete folder's
// entries bumps the folder's stamp, which its mtime carries in the nanoseconds (Attributes.swift),
// and publishes an inode invalidation (delivered twice, see Invalidations.swift). The kernel checks
// a folder's mtime each time a listing starts and drops a cached listing whose mtime differs from
// the one it started with (fs/fuse/readdir.c, with FUSE_CAP_AUTO_INVAL_DATA refreshing
// invalidated attributes first). That closes the race in
// which a piece built before a change reaches the cache after the change's invalidation.

import DropboxAPI

/// What a piece of a folder's listing is packed into (the adapter's is the kernel's buffer).
public protocol DirectoryPiece: Sendable {
    /// Takes `entry`, after which the listing resumes at `nextOffset`; false when it does not fit
    /// (the piece is then full).
    mutating func add(_ entry: DirectoryEntry, nextOffset: UInt64) -> Bool
}

extension Filesystem {
    /// How the kernel may cache a folder it opened with opendir.
    public struct OpenedDirectory: Sendable, Equatable {
        /// The kernel caches the folder's listing (until it is invalidated).
        public var cacheListing: Bool
        /// The kernel keeps a listing it cached before: it is still the current one.
        public var keepCachedListing: Bool
    }

    /// Opens a folder for the kernel: now when it is listed, later once it is listed and, for a
    /// file manager, once the folder's thumbnails are written (or after a short wait).
    public func openDirectory(_ inode: UInt64, caller: Caller) -> Answer<OpenedDirectory> {
        if SharedFolders.owns(inode), let sharedFolders { return openSharedDirectory(inode, sharedFolders) }
        if HistoryViews.owns(inode) { return openHistoryDirectory(inode) }
        return .deciding { () throws(FilesystemError) -> Answer<OpenedDirectory> in
            if try servesNow(inode, firstPiece: true, caller: caller) { return .now(.success(openedDirectory(inode))) }
            return .later { [self] () async throws(FilesystemError) -> OpenedDirectory in
                try await prepare(inode, firstPiece: true, caller: caller)
                return openedDirectory(inode)
            }
        }
    }

    /// Fills `piece` with the entries of a folder's listing after offset `cookie` (0: from the
    /// start), until it is full: now when the folder is listed (later pieces are served from the
    /// listing the first one came from, even once it expired), later once it is listed and, for a
    /// file manager's first piece, once the folder's thumbnails are written (or after a short
    /// wait). With `countingLookups` (readdirplus) each child entry taken counts one kernel lookup,
    /// except files offered lean, which the caller's policy decides (Filesystem+Callers.swift).
    public func readDirectory<Piece: DirectoryPiece>(
        _ inode: UInt64, from cookie: UInt64, countingLookups: Bool, caller: Caller, into piece: Piece
    ) -> Answer<Piece> {
        if SharedFolders.owns(inode), let sharedFolders { return readSharedDirectory(inode, from: cookie, into: piece, sharedFolders) }
        if HistoryViews.owns(inode) { return readHistoryDirectory(inode, from: cookie, into: piece) }
        let firstPiece = cookie == 0
        let lean = countingLookups && listsLean(caller, folder: inode, firstPiece: firstPiece)
        let fill: @Sendable () throws(FilesystemError) -> Piece = { [self] () throws(FilesystemError) -> Piece in
            var piece = piece
            var added = 0
            var full = false
            // The mount's root ends with the shared folders' folder, past every entry of the tree
            // (Filesystem+SharedFolders.swift); an entry of the tree of that name is left out.
            let view = inode == Self.rootInode ? sharedFolders : nil
            if view == nil || cookie != Self.sharedFoldersCookie {
                let hid = try readDirectory(
                    inode, from: cookie, countingLookups: countingLookups, leanFiles: lean, hiding: view?.name
                ) { entry, next in
                    guard piece.add(entry, nextOffset: next) else {
                        full = true
                        return false
                    }
                    added += 1
                    return true
                }
                if hid { noteSharedFoldersNameTaken() }
            }
            if let view, !full, cookie != Self.sharedFoldersCookie {
                _ = piece.add(view.topEntry(), nextOffset: Self.sharedFoldersCookie)
            }
            if countingLookups { walkers.handed(pid: caller.pid, entries: added) }
            return piece
        }
        return .deciding { () throws(FilesystemError) -> Answer<Piece> in
            if try servesNow(inode, firstPiece: firstPiece, caller: caller) { return .now(.success(try fill())) }
            return .later { [self] () async throws(FilesystemError) -> Piece in
                try await prepare(inode, firstPiece: firstPiece, caller: caller)
                return try fill()
            }
        }
    }

    /// Whether a folder can be served at once: it is listed (later pieces are served from the
    /// listing the first one came from, even once it expired), and no file manager's listing
    /// waits for thumbnails.
    private func servesNow(_ inode: UInt64, firstPiece: Bool, caller: Caller) throws(FilesystemError) -> Bool {
        if waitsForThumbnails(caller, firstPiece: firstPiece) {
            _ = try Self.index(inode)
            return false
        }
        return try isDirectoryReady(inode, expiredIsReady: !firstPiece)
    }

    /// Waits for what `servesNow` found missing: a file manager's thumbnails, the folder's listing.
    private func prepare(_ inode: UInt64, firstPiece: Bool, caller: Caller) async throws(FilesystemError) {
        if waitsForThumbnails(caller, firstPiece: firstPiece) {
            await thumbnailsWanted(folder: inode)
            // Interrupted while it waited (the thumbnails go on).
            if Task.isCancelled { throw .interrupted }
        }
        try await prepareDirectory(inode)
    }

    /// The kernel caches every folder's listing until invalidated, and keeps an earlier cached
    /// listing only when it is still the current one.
    private func openedDirectory(_ inode: UInt64) -> OpenedDirectory {
        OpenedDirectory(cacheListing: true, keepCachedListing: kernelMayKeepListing(inode))
    }

    /// Lists a folder if its listing is not complete and fresh, so `readDirectory` can serve it.
    func prepareDirectory(_ inode: UInt64) async throws(FilesystemError) {
        try await sync.ensureListed(try Self.index(inode))
    }

    /// Whether `readDirectory` of this folder can be served at once (false: call
    /// `prepareDirectory` first). A deleted folder the kernel still holds is ready: it is empty.
    /// With `expiredIsReady` (the later pieces of a listing) a complete listing past its TTL
    /// counts as ready, so one listing is not relisted halfway.
    func isDirectoryReady(_ inode: UInt64, expiredIsReady: Bool = false) throws(FilesystemError) -> Bool {
        try tree.isReady(try Self.index(inode), acceptingExpired: expiredIsReady)
    }

    /// True when folder listings expire (no change watcher): the adapter then keeps opendir, the
    /// kernel's only call at the start of every listing, as the point to list a folder again.
    public var listingsExpire: Bool { options.folderListingTTL.isFinite }

    /// For opendir: whether the kernel may keep its cached listing of the folder, that is whether
    /// the listing it was last handed is the current one. Records the current one as handed out.
    func kernelMayKeepListing(_ inode: UInt64) -> Bool {
        guard let index = try? Self.index(inode) else { return false }
        return tree.kernelMayKeepListing(index)
    }

    /// Offers the entries of a listed folder after offset `cookie` (0: from the start) to `add`
    /// until it returns false; `nextOffset` is the cookie of the entry after it. With
    /// `countingLookups` (readdirplus) each accepted child entry counts one kernel lookup, except
    /// files offered lean (`leanFiles`): a walk such as `find` needs only their names and types,
    /// and the kernel then makes no inode of each (Walkers.swift decides).
    /// `hiding`: a name left out (true is returned when an entry of that name was).
    @discardableResult
    func readDirectory(
        _ inode: UInt64, from cookie: UInt64, countingLookups: Bool, leanFiles: Bool = false, hiding: String? = nil,
        add: (_ entry: DirectoryEntry, _ nextOffset: UInt64) -> Bool
    ) throws(FilesystemError) -> Bool {
        try tree.readDirectory(
            try Self.index(inode), from: cookie, countingLookups: countingLookups, leanFiles: leanFiles,
            ownership: options.ownership, hiding: hiding, add: add)
    }
}
