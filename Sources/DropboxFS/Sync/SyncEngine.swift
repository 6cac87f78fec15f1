// The sync engine: everything that brings Dropbox's entries into the tree and keeps them fresh.
// Folder listings on demand (FolderListing.swift), recursive listings (RecursiveListing.swift), the
// whole-account fill over parallel branches (ParallelFill.swift), the change watcher and its
// cursor (ChangeWatcher.swift), and the progress `dropboxfs status` shows (SyncProgress.swift). It
// is the only writer of Dropbox's entries into the LiveTree (through `LiveTree.change`); the
// filesystem facade asks it for a folder's listing (`ensureListed`) and asks the tree itself.
//
// Locking: `state` guards the engine's bookkeeping (the listings in flight, the recursive listings
// and their epochs, the change replay, the fill queue, the progress and the background tasks; the
// cursor is the tree's, LiveTree.swift). A listing's result lands in the tree in the same step as
// the engine checks that the listing is still the current one (`tree.change(with: state)`), so
// `state` is held while LiveTree.state is taken: always in that order (the tree's lock is never
// held while taking the engine's; the tree's queries may be asked with `state` held), and neither
// across an `await` or a network call.

import DropboxAPI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

final class SyncEngine: Sendable {
    struct State {
        /// Folder -> the listing filling it; concurrent callers share it (SharedWork.swift). Keyed
        /// by FolderRef: the listing of a removed folder is never found for a new one at its index.
        var listings: [FolderRef: SharedWork<Void>] = [:]
        /// Change batches to apply again after listings in flight (ChangeReplay.swift).
        var changeReplay = ChangeReplay()
        /// Running recursive listings by the folder they list.
        var recursiveListings: [FolderRef: RecursiveListing] = [:]
        /// The snapshot sequence given to the next listing when it starts, recursive or not (its
        /// epoch, for a recursive listing): a listing that starts later sees a snapshot at least as
        /// new (docs/SEMANTICS.md, "Listings in flight").
        var nextEpoch: UInt32 = 1
        var progress = SyncProgress()
        /// The change watcher, cancelled by `stop`.
        var backgroundTasks: [Task<Void, Never>] = []
        /// When the last top-level branch listing started (monotonic seconds).
        var lastBranchListing: Double = -.infinity
        /// The branches of a running parallel fill (ParallelFill.swift).
        var fillQueue: FillQueue?
        /// The tasks of running recursive listings by top folder, cancelled by `stop`.
        var listingTasks: [FolderRef: Task<Void, Never>] = [:]
        /// The tree came from the store: it is complete, and the watcher catches up from its
        /// cursor (LiveTree.cursor; without one, a refill runs while it is served).
        var restored = false
        /// The restored tree's last full listing is old: list the account again after the catch-up.
        var relistRestored = false

        /// The epoch folders made for change batches carry: the newest listing's.
        var changeEpoch: UInt32 { nextEpoch &- 1 }

        /// The snapshot sequence of a listing starting now.
        mutating func takeSnapshotSequence() -> UInt32 {
            defer { nextEpoch += 1 }
            return nextEpoch
        }
    }

    let state: Mutex<State>
    let tree: LiveTree
    /// The client of user-driven listings: fails at once while offline (Connectivity.swift).
    let client: any DropboxClient
    /// The client of the change watcher and the whole-account fill, which keep trying while offline.
    let syncClient: any DropboxClient
    let connectivity: Connectivity
    let options: FilesystemOptions
    /// Fired when the tree first matches Dropbox: the whole-account fill completed, or a restored
    /// tree caught up with the changes since its stored cursor.
    let caughtUp = CompletionSignal()
    /// Ends the watcher's longpoll or pause early (WatcherWakeup.swift).
    let wakeup = WatcherWakeup()

    init(
        tree: LiveTree, client: any DropboxClient, syncClient: any DropboxClient, connectivity: Connectivity,
        options: FilesystemOptions, restoring stored: StoredTree?
    ) {
        self.tree = tree
        self.client = client
        self.syncClient = syncClient
        self.connectivity = connectivity
        self.options = options
        var initial = State()
        if let stored {
            initial.restored = true
            initial.relistRestored = Double(Int64(time(nil)) - stored.filledAt) >= options.relistStoredAfter
            initial.progress.restoredEntries = stored.entryCount
            initial.progress.storedSyncedAt = stored.syncedAt
            initial.progress.asOf = stored.syncedAt
            initial.progress.phase = stored.cursor == nil ? .filling : .watching
        }
        self.state = Mutex(initial)
    }

    /// The reference of the folder at `index` as it stands now, to keep across a wait (FolderRef).
    func ref(_ index: UInt32) -> FolderRef { tree.ref(index) }

    /// Applies one page and returns how many entries it held. A change page comes with its
    /// `cursor`, which becomes the tree's cursor in the same step (and the same stored batch).
    @discardableResult
    func applyPage(_ entries: [Metadata], as kind: PageKind, cursor: String? = nil) -> Int {
        tree.change(with: state, cursor: cursor.map { .set($0) } ?? .keep) { s, t, invalidated in
            t.apply(entries, as: kind, changeEpoch: s.changeEpoch, invalidations: &invalidated)
            switch kind {
            case .listing:
                s.progress.entriesListed += entries.count
                s.progress.pages += 1
            case .changes:
                s.progress.deltaBatches += 1
                s.changeReplay.record(entries)
            }
        }
        return entries.count
    }

    /// Applies again the change batches recorded since `ticket`, after a listing that started then
    /// (ChangeReplay.swift). Call inside `tree.change(with: state)`.
    func replayChanges(since ticket: UInt64, in s: inout State, _ t: inout LiveTree.State, invalidations: inout [Invalidation]) {
        for batch in s.changeReplay.batches(since: ticket) {
            t.apply(batch, as: .changes, changeEpoch: s.changeEpoch, invalidations: &invalidations)
        }
    }

    /// Logs the folders made from paths that the listing of `epoch` never confirmed, and counts
    /// them for the status line. Call inside `tree.change(with: state)`.
    func reportUnconfirmedFolders(madeBy epoch: UInt32, in s: inout State, _ t: inout LiveTree.State) {
        s.progress.madeFolders += t.reportUnconfirmedFolders(madeBy: epoch)
    }
}
