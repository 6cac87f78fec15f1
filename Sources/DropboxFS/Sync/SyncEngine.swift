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
//
// Below it, ChangeReplay: how a listing and the change batches that landed meanwhile are ordered.

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
        /// Change batches to apply again after listings in flight (ChangeReplay, SyncEngine.swift).
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
    /// Ends the watcher's longpoll or pause early (WatcherWakeup, ChangeWatcher.swift).
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
    /// (ChangeReplay, SyncEngine.swift). Call inside `tree.change(with: state)`.
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

// MARK: -
// Listings and the change watcher must never undo each other. A listing is a snapshot taken when
// Dropbox served it; a change batch the watcher applies while that listing is in flight may be newer
// than the snapshot (a deletion the snapshot still shows, a file it does not have yet). So each
// listing notes the change sequence when it starts, and when it applies its result it applies again,
// in order, every change batch recorded since: for the paths those batches touch the newer truth
// wins, every other path takes the listing's. Batches are kept only while a listing is in flight.
// Guarded by SyncEngine.state.

struct ChangeReplay {
    /// Change batches applied so far.
    private(set) var sequence: UInt64 = 0
    /// Batches applied while a listing was in flight, with their sequence numbers.
    private var batches: [(sequence: UInt64, entries: [Metadata])] = []
    /// Listings in flight by the sequence they started at (several may share one).
    private var open: [UInt64: Int] = [:]

    /// A listing starts; returns its ticket for `batches(since:)` and `end`.
    mutating func begin() -> UInt64 {
        open[sequence, default: 0] += 1
        return sequence
    }

    /// The listing of `ticket` has ended (applied, failed or cancelled).
    mutating func end(_ ticket: UInt64) {
        guard let count = open[ticket] else { return }
        open[ticket] = count > 1 ? count - 1 : nil
        guard let oldest = open.keys.min() else {
            batches = []
            return
        }
        batches.removeAll { $0.sequence <= oldest }
    }

    /// A change batch was applied.
    mutating func record(_ entries: [Metadata]) {
        sequence += 1
        if !open.isEmpty && !entries.isEmpty { batches.append((sequence, entries)) }
    }

    /// The batches applied since the listing of `ticket` started, oldest first.
    func batches(since ticket: UInt64) -> [[Metadata]] {
        batches.filter { $0.sequence > ticket }.map(\.entries)
    }
}
