// What a mount asks of the filesystem core: the owners of the core (the tree, the sync engine, the
// reader, the thumbnail writer) each read the options that concern them.

import DropboxAPI
import SystemCalls

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
    /// File reads: prefetch, buffer memory cap, disk cache (Reader/ReadPolicy.swift).
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
    /// A tree that has failed to catch up with Dropbox for longer than this (seconds since it
    /// last agreed) is shown as stale in the status (SyncProgress.swift).
    public var staleAfter: Double
    /// Seconds slept since boot (ResumeDetector.swift); injectable for tests and the test hook.
    public var sleepGap: @Sendable () -> Double
    /// Dropbox's thumbnails of the images in folders file managers list, written to the
    /// thumbnail cache (Thumbnails/ThumbnailWriter.swift); nil: off.
    public var thumbnails: ThumbnailOptions?
    /// Entries a thread is listed in full before its files go lean (Walkers.swift); 0 keeps
    /// every listing full.
    public var leanWalkAfter: Int = 0
    /// Read-ahead across files (Reader/FolderReadAheadPolicy.swift); nil: off.
    public var readAhead: FolderReadAheadOptions? = nil
    /// Folders the read-ahead reaches fetched as one zip (Reader/FolderZips.swift); nil: never.
    /// Used only with `readAhead`.
    public var folderZips: FolderZipOptions? = nil
    /// Leave folders the user may not enter (`no_access`) out of listings instead of showing them
    /// with mode 000 (docs/SEMANTICS.md, "Access levels").
    public var hideNoAccess = false
    /// The hidden history views in every folder (docs/SEMANTICS.md, "History"); off for a shared
    /// link, which has no history to show.
    public var historyViews = true
    /// Folders shared with the account that it has not added, under one folder at the top of the
    /// mount (SharedFolders/); nil: not shown.
    public var sharedFolders: SharedFoldersOptions? = nil
    /// The name of the process a thread belongs to, nil when it is gone (FileManagers.swift);
    /// injectable for tests.
    public var processName: @Sendable (Int32) -> String? = FileManagers.processName(of:)
    /// Monotonic seconds; injectable for tests.
    public var monotonicNow: @Sendable () -> Double
    /// A restored tree served before Dropbox named the credentials' account (an offline mount):
    /// confirmed before its first catch-up (Sync/AccountConfirmation.swift). Nil: nothing to confirm.
    public var accountConfirmation: AccountConfirmation? = nil
    /// More `key=value` pairs for the root's status line, from the process that mounts (its
    /// version, its log, Dropbox's rate limit): asked at every read of the status.
    public var statusFields: @Sendable () -> [String] = { [] }

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
        staleAfter: Double = 300,
        sleepGap: @escaping @Sendable () -> Double = SystemClock.suspendedSeconds,
        thumbnails: ThumbnailOptions? = nil,
        monotonicNow: @escaping @Sendable () -> Double = SystemClock.monotonicSeconds
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
        self.staleAfter = staleAfter
        self.sleepGap = sleepGap
        self.thumbnails = thumbnails
        self.monotonicNow = monotonicNow
    }
}
