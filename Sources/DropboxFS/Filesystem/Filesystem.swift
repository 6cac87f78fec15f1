// The filesystem core's facade: what the FUSE adapter calls. Lookups, attributes, folder pieces,
// open, read, extended attributes and statfs, each a thin step over the parts it owns:
// - the LiveTree (Tree/LiveTree.swift): the metadata tree it answers from, through its named
//   queries (Tree/LiveTree+Queries.swift);
// - the SyncEngine (Sync/SyncEngine.swift): listings, the whole-account fill, the change watcher
//   and progress; the only writer of Dropbox's entries into the tree;
// - the FileReader (Reader/) and the exported documents (Reader/Exports.swift): open files' bytes;
// - the ThumbnailWriter (Thumbnails/): thumbnails for file managers;
// - the caller policies (Filesystem+Callers.swift): file managers, lean walkers.
// An operation that may have to wait answers now or later (Answer.swift).
// It knows nothing of FUSE or libcurl: inodes are UInt64, errors are FilesystemError, and the
// client is any DropboxClient, so the whole core runs in unit tests against an in-memory Dropbox.
//
// Locking: the facade has no lock of its own. Each part has its own (docs/ARCHITECTURE.md, "Locks"):
// SyncEngine.state, then LiveTree.state when both are needed; the reader's, the exports', the
// thumbnail writer's, the space-usage cache's, the tree store's and the connectivity state's are
// never held while another is taken.

import DropboxAPI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

public final class Filesystem: Sendable {
    public static let rootInode: UInt64 = 1

    /// The client of user-driven requests (lookups, listings, reads, space usage): fails at once
    /// while offline (Sync/Connectivity.swift).
    let client: any DropboxClient
    public let connectivity: Connectivity
    let options: FilesystemOptions
    /// The tree the kernel's requests are answered from.
    let tree: LiveTree
    /// Fills the tree and keeps it fresh.
    let sync: SyncEngine
    /// The tree's invalidation publisher (LiveTree owns it), which the reader and the adapter's
    /// drops of cached listings share.
    let invalidations: InvalidationPublisher
    /// Open files and their bytes.
    let reader: FileReader
    /// Exported documents and the handles on them (Exports.swift).
    let exports: ExportedDocuments
    /// Thumbnails for file managers (Thumbnails/); nil when off.
    let thumbnails: ThumbnailWriter?
    /// Earlier versions and deleted files, under hidden names (History/, Filesystem+History.swift).
    let history: HistoryViews
    /// Folders shared with the account but not added, under one folder at the top (SharedFolders/,
    /// Filesystem+SharedFolders.swift); nil without `options.sharedFolders`.
    let sharedFolders: SharedFolders?
    /// The log said once that an entry at the top is hidden by the shared folders' folder.
    let sharedFoldersClashLogged = Atomic<Bool>(false)
    /// Pinned folders kept available offline (Offline/OfflineKeeper.swift).
    let offline: OfflineKeeper
    /// The answers of the last pin requests, so each is carried out once (Filesystem+Pins.swift).
    let pinAnswers = Mutex(PinAnswers())
    /// Which callers are file managers (Filesystem+Callers.swift).
    let fileManagers: FileManagers
    /// Which callers' listings carry files lean (Filesystem+Callers.swift).
    let walkers: Walkers
    /// Read-ahead across files (FolderReadAhead.swift); nil when off.
    let readAhead: FolderReadAhead?
    /// The last users/get_space_usage answer, for statfs (Filesystem+Statfs.swift).
    let spaceUsage = Mutex<(value: SpaceUsage, at: Double)?>(nil)
    /// A background refresh of `spaceUsage` is under way (one at a time).
    let spaceUsageRefreshing = Atomic<Bool>(false)

    /// `restoring`: a tree read back from `options.store`, served at once and caught up from its
    /// cursor. `connectivity`: offline from the start when the mount could not reach Dropbox.
    public init(
        client: any DropboxClient, options: FilesystemOptions = FilesystemOptions(), restoring stored: StoredTree? = nil,
        connectivity: Connectivity = Connectivity()
    ) {
        self.connectivity = connectivity
        self.options = options
        let tree = LiveTree(
            stored?.tree ?? MetadataTree(folderTime: options.folderTime), store: options.store, cursor: stored?.cursor,
            listingTTL: options.folderListingTTL, monotonicNow: options.monotonicNow,
            invalidationRepeat: options.invalidationRepeat, hideNoAccess: options.hideNoAccess)
        self.tree = tree
        let ownership = options.ownership
        let sharedFolders = options.sharedFolders.map {
            SharedFolders(
                options: $0, connectivity: connectivity, ownership: ownership, invalidations: tree.invalidations,
                monotonicNow: options.monotonicNow,
                rootAttributes: { try? tree.attributes(of: MetadataTree.rootIndex, ownership: ownership) })
        }
        self.sharedFolders = sharedFolders
        // The reader's downloads of a shared folder's revisions go through its namespace.
        let routed: any DropboxClient = sharedFolders.map { SharedFolderReads(base: client, folders: $0) } ?? client
        let gate = ConnectivityGate(client: routed, connectivity: connectivity, blocksWhileOffline: true)
        self.client = gate
        self.invalidations = tree.invalidations
        self.sync = SyncEngine(
            tree: tree, client: gate,
            syncClient: ConnectivityGate(client: client, connectivity: connectivity, blocksWhileOffline: false),
            connectivity: connectivity, options: options, restoring: stored)
        let storedPins = options.store?.storedPins() ?? []
        let pins = storedPins.map(\.path)
        let zips = options.readAhead.flatMap { readAhead in
            options.folderZips.map { zipOptions in
                var zipOptions = zipOptions
                zipOptions.filesAtOnce = readAhead.parallel
                return FolderZips(options: zipOptions, smallFileLimit: readAhead.smallFileLimit, now: options.monotonicNow)
            }
        }
        let reader = FileReader(
            client: gate, options: options.reader, invalidations: tree.invalidations,
            pinnedKeys: stored.map { OfflineKeeper.pinnedKeys(pins, in: $0.tree) } ?? [], zips: zips)
        self.reader = reader
        let sync = self.sync
        self.offline = OfflineKeeper(
            pins: pins, ids: Dictionary(storedPins.map { ($0.path, $0.id) }, uniquingKeysWith: { first, _ in first }),
            tree: tree, diskCache: reader.diskCache, client: gate, connectivity: connectivity,
            store: options.store, diskQueue: reader.diskQueue, monotonicNow: options.monotonicNow,
            listFolder: { folder in try? await sync.ensureListed(folder) })
        self.exports = ExportedDocuments(reader: reader, spillDirectory: options.reader.diskCache?.directory)
        self.history = HistoryViews(
            client: gate, tree: tree, sync: sync, ownership: options.ownership, monotonicNow: options.monotonicNow)
        self.thumbnails = options.thumbnails.map { ThumbnailWriter(options: $0, client: gate) }
        self.fileManagers = FileManagers(processName: options.processName)
        self.walkers = Walkers(after: options.leanWalkAfter, now: options.monotonicNow)
        self.readAhead = options.readAhead.map {
            FolderReadAhead(options: $0, reader: reader, tree: tree, now: options.monotonicNow)
        }
    }

    /// Converts a kernel inode number to a tree index, rejecting numbers the tree never gave out.
    static func index(_ inode: UInt64) throws(FilesystemError) -> UInt32 {
        guard inode > 0, inode <= UInt64(UInt32.max) else { throw .stale }
        return UInt32(inode)
    }

    /// Where tree changes that make kernel caches stale are delivered (the FUSE session).
    public func setInvalidationHandler(_ handler: (@Sendable ([Invalidation]) -> Void)?) {
        invalidations.setSink(handler)
    }

    /// Number of entries currently in the tree (for statfs and progress reports).
    public var entryCount: Int { tree.counts.live }

    /// Starts the background work the options ask for (the fill, the change watcher). Call once,
    /// after mounting.
    public func startSync() {
        sync.start()
        offline.start()
    }

    /// Stops the background work (at unmount), thumbnails included, and lets go of the
    /// invalidation handler: it holds the FUSE session, which holds this filesystem, and that
    /// cycle would otherwise outlive the mount (LeakSanitizer found the whole tree at exit).
    public func stop() {
        sync.stop()
        offline.stop()
        thumbnails?.stop()
        invalidations.setSink(nil)
    }

    /// Waits until the tree first matches Dropbox (a completed fill, or a restored tree caught up
    /// with its cursor); false when `seconds` pass first.
    public func waitUntilCaughtUp(seconds: Double) async -> Bool {
        await sync.caughtUp.wait(seconds: seconds)
    }

    /// The sync engine's progress and what the reader keeps, as one line of `key=value` pairs
    /// (the root's `user.dropboxfs.status`, which `dropboxfs status` shows).
    public func syncStatus() -> String {
        let line = sync.statusLine()
        let records = tree.counts.records
        // What a long-running mount keeps (docs/SEMANTICS.md): these must come back to a plateau.
        let kept = reader.keptCounts()
        var disk = ""
        if let cache = reader.diskCache { disk += " disk_cache_bytes=\(cache.usedBytes) disk_bypassed=\(reader.diskStall.bypassCount)" }
        if let thumbnails { disk += " thumbnail_bytes=\(thumbnails.bytesKept)" }
        if let readAhead { disk += " " + readAhead.statusFields }
        if let zips = reader.zips { disk += " " + zips.statusFields }
        let more = (offline.statusFields() + options.statusFields()).map { " " + $0 }.joined()
        return line + " records=\(records) open_handles=\(kept.handles + exports.openCount) contents=\(kept.contents) inode_notes=\(kept.inodeNotes)"
            + disk + more
    }
}
