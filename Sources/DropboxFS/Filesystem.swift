// The filesystem core: what the FUSE adapter calls. It owns the metadata tree, fills it from the
// Dropbox client on demand, and answers lookups, attributes and folder listings. It knows nothing
// of FUSE or libcurl: inodes are UInt64, errors are FilesystemError, and the client is any
// DropboxClient, so the whole core runs in unit tests against an in-memory Dropbox.
//
// Locking: `state` (one Mutex) guards the tree, the in-flight listings, the sync progress, the
// hidden-name memory and the change replay. It is never held across an `await` or a network call.
// The tree store, the connectivity state and the thumbnail writer have locks of their own, never
// taken around `state`.

import DropboxAPI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

public struct FilesystemOptions: Sendable {
    public var ownership: Ownership
    /// The time shown for folders (seconds since the epoch): the mount time by default.
    public var folderTime: Int64
    /// How long a completed folder listing is trusted before it is listed again on the next
    /// opendir or missing-name lookup. `.infinity` when a change watcher keeps the tree fresh.
    public var folderListingTTL: Double
    /// Page size asked of list_folder (1...2000).
    public var pageLimit: UInt32
    /// How long a space-usage answer is reused for statfs.
    public var spaceUsageTTL: Double
    /// Fill the whole tree in the background with recursive listings (docs/ARCHITECTURE.md,
    /// "Recursive listings and complete folders").
    public var prefetch: Bool
    /// Follow changes with longpoll + list_folder/continue and invalidate the kernel's caches.
    public var watchChanges: Bool
    /// How long a request for a folder waits for a recursive listing that will fill it before
    /// listing the folder by itself.
    public var prefetchWait: Double
    /// How the whole-tree listing is spread over parallel branches (Sync/ParallelFill.swift).
    public var fill: FillOptions
    /// After the whole-tree listing has run this long, a walk that enters an unfilled folder gets
    /// a recursive listing of its own subtree first.
    public var subtreeListingAfter: Double
    /// `timeout` of each longpoll, seconds (Dropbox accepts 30...480).
    public var longpollTimeout: Int
    /// Kernel invalidations are delivered again after this many seconds (Invalidations.swift).
    public var invalidationRepeat: Double?
    /// Multiplies the pause before a failed whole-account listing is started again (1, 2, 4 ... 60
    /// s); tests shrink it.
    public var fillRetryScale: Double
    /// File reads: prefetch, buffer memory cap, disk cache (Reader/ReaderOptions.swift).
    public var reader: ReaderOptions
    /// Where the tree and its cursor are kept across mounts (Store/TreeStore.swift); nil keeps
    /// everything in memory. Used with prefetch and watchChanges only.
    public var store: TreeStore?
    /// While offline, the change watcher tries Dropbox again at least this often (seconds).
    public var offlineRetry: Double
    /// A stored tree whose last whole-account listing is older than this (seconds) is listed
    /// again in the background after its catch-up: the only way to learn of case-only renames,
    /// which Dropbox does not report as changes.
    public var relistStoredAfter: Double
    /// Dropbox's thumbnails of the images in folders file managers list, written to the
    /// thumbnail cache (Thumbnails/ThumbnailWriter.swift); nil: off.
    public var thumbnails: ThumbnailOptions?
    /// Monotonic seconds; injectable for tests.
    public var monotonicNow: @Sendable () -> Double

    public init(
        ownership: Ownership = Ownership(uid: getuid(), gid: getgid()),
        folderTime: Int64 = Int64(time(nil)),
        folderListingTTL: Double = 60,
        pageLimit: UInt32 = 2000,
        spaceUsageTTL: Double = 60,
        prefetch: Bool = false,
        watchChanges: Bool = false,
        prefetchWait: Double = 0.5,
        fill: FillOptions = FillOptions(),
        subtreeListingAfter: Double = 10,
        longpollTimeout: Int = 120,
        invalidationRepeat: Double? = 1,
        fillRetryScale: Double = 1,
        reader: ReaderOptions = ReaderOptions(),
        store: TreeStore? = nil,
        offlineRetry: Double = 10,
        relistStoredAfter: Double = 7 * 86400,
        thumbnails: ThumbnailOptions? = nil,
        monotonicNow: @escaping @Sendable () -> Double = Filesystem.monotonicSeconds
    ) {
        self.ownership = ownership
        self.folderTime = folderTime
        self.folderListingTTL = folderListingTTL
        self.pageLimit = pageLimit
        self.spaceUsageTTL = spaceUsageTTL
        self.prefetch = prefetch
        self.watchChanges = watchChanges
        self.prefetchWait = prefetchWait
        self.fill = fill
        self.subtreeListingAfter = subtreeListingAfter
        self.longpollTimeout = longpollTimeout
        self.invalidationRepeat = invalidationRepeat
        self.fillRetryScale = fillRetryScale
        self.reader = reader
        self.store = store
        self.offlineRetry = offlineRetry
        self.relistStoredAfter = relistStoredAfter
        self.thumbnails = thumbnails
        self.monotonicNow = monotonicNow
    }
}

public final class Filesystem: Sendable {
    public static let rootInode: UInt64 = 1

    struct State {
        var tree: MetadataTree
        /// Folder index -> the listing filling it; concurrent callers share it (SharedWork.swift).
        var listings: [UInt32: SharedWork<Void>] = [:]
        /// The `path_lower` of every entry hidden for its name, so each is logged once and nothing
        /// is made inside one (TreeUpdates.swift).
        var hiddenPaths: Set<String> = []
        /// Change batches to apply again after listings in flight (ChangeReplay.swift).
        var changeReplay = ChangeReplay()
        var spaceUsage: (value: SpaceUsage, at: Double)?
        /// Running recursive listings by the folder they list.
        var recursiveListings: [UInt32: RecursiveListing] = [:]
        /// The epoch given to the next recursive listing (newer listings see newer snapshots).
        var nextEpoch: UInt32 = 1
        /// The newest cursor covering the whole account, once known.
        var cursor: String?
        var progress = SyncProgress()
        /// The change watcher, cancelled by `stop`.
        var backgroundTasks: [Task<Void, Never>] = []
        /// When the last top-level branch listing started (monotonic seconds).
        var lastBranchListing: Double = -.infinity
        /// The branches of a running parallel fill (Sync/ParallelFill.swift).
        var fillQueue: FillQueue?
        /// The tasks of running recursive listings by top folder, cancelled by `stop`.
        var listingTasks: [UInt32: Task<Void, Never>] = [:]
        /// The tree came from the store: it is complete, and the watcher catches up from `cursor`
        /// (or, without one, a refill runs while it is served).
        var restored = false
        /// The restored tree's last full listing is old: list the account again after the catch-up.
        var relistRestored = false
    }

    /// The client of user-driven requests (lookups, listings, reads, space usage): fails at once
    /// while offline (Sync/Connectivity.swift).
    let client: any DropboxClient
    /// The client of the change watcher and the whole-account fill, which keep trying while offline.
    let syncClient: any DropboxClient
    public let connectivity: Connectivity
    /// Fired when the tree first matches Dropbox: the whole-account fill completed, or a restored
    /// tree caught up with the changes since its stored cursor.
    let caughtUp = CompletionSignal()
    let options: FilesystemOptions
    let state: Mutex<State>
    let invalidations: InvalidationPublisher
    /// Open files and their bytes; guarded by its own lock, never taken while `state` is held.
    let reader: FileReader
    /// Open handles on exported documents (Exports.swift); its own lock, like the reader's.
    let exports = ExportedDocuments()
    /// Thumbnails for file managers (Thumbnails/); its own lock; nil when off.
    let thumbnails: ThumbnailWriter?

    /// `restoring`: a tree read back from `options.store`, served at once and caught up from its
    /// cursor. `connectivity`: offline from the start when the mount could not reach Dropbox.
    public init(
        client: any DropboxClient, options: FilesystemOptions = FilesystemOptions(), restoring stored: StoredTree? = nil,
        connectivity: Connectivity = Connectivity()
    ) {
        self.connectivity = connectivity
        if options.watchChanges { connectivity.leaveProbesToWatcher() }
        let gate = ConnectivityGate(client: client, connectivity: connectivity, blocksWhileOffline: true)
        self.client = gate
        self.syncClient = ConnectivityGate(client: client, connectivity: connectivity, blocksWhileOffline: false)
        self.options = options
        var initial = State(tree: stored?.tree ?? MetadataTree(folderTime: options.folderTime))
        if options.store != nil { initial.tree.trackChanges() }
        if let stored {
            initial.cursor = stored.cursor
            initial.restored = true
            initial.relistRestored = Double(Int64(time(nil)) - stored.filledAt) >= options.relistStoredAfter
            initial.progress.restoredEntries = stored.entryCount
            initial.progress.storedSyncedAt = stored.syncedAt
            initial.progress.phase = stored.cursor == nil ? .filling : .watching
        }
        self.state = Mutex(initial)
        self.invalidations = InvalidationPublisher(repeatAfter: options.invalidationRepeat)
        self.reader = FileReader(client: gate, options: options.reader)
        self.thumbnails = options.thumbnails.map { ThumbnailWriter(options: $0, client: gate) }
    }

    public static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
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
    public var entryCount: Int { state.withLock { $0.tree.liveCount } }
}
