// The metadata tree as the mount serves it: the one MetadataTree, behind its own lock, with the
// memory of names hidden for what they are, the rules that apply Dropbox's entries to it
// (TreeUpdates.swift) and the hand-off of its changed records to the tree store. The filesystem
// facade reads it to answer the kernel (lookups, attributes, folder pieces); the sync engine
// (Sync/SyncEngine.swift) is the only writer of Dropbox's entries into it.
//
// Locking: `state` guards the tree, the hidden-name memory and the store batches go to, and nothing else. It is taken
// inside the sync engine's lock when a listing's result must land atomically with the engine's
// bookkeeping (SyncEngine.state, then LiveTree.state), never the other way round, and never held
// across an `await` or a network call.

import Synchronization

final class LiveTree: Sendable {
    struct State {
        var tree: MetadataTree
        /// The `path_lower` of every entry hidden for its name, so each is logged once and nothing
        /// is made inside one (TreeUpdates.swift); forgotten when Dropbox deletes the entry.
        var hiddenPaths: Set<String> = []
        /// Where each applied batch of changed records goes (Store/TreeStore.swift); nil: memory
        /// only. Replaced only when the tree is dropped for another account's (AccountConfirmation.swift).
        var store: TreeStore?
    }

    let state: Mutex<State>
    /// How long a complete folder listing is trusted (`.infinity` while changes are followed).
    let listingTTL: Double
    let monotonicNow: @Sendable () -> Double

    init(_ tree: MetadataTree, store: TreeStore?, listingTTL: Double, monotonicNow: @escaping @Sendable () -> Double) {
        var tree = tree
        if store != nil { tree.trackChanges() }
        self.state = Mutex(State(tree: tree, store: store))
        self.listingTTL = listingTTL
        self.monotonicNow = monotonicNow
    }

    /// Whether `folder` holds a complete listing younger than the TTL. Call with the lock held.
    func isFresh(_ folder: UInt32, in t: State) -> Bool {
        guard t.tree.isComplete(folder) else { return false }
        if listingTTL == .infinity { return true }
        return monotonicNow() - t.tree.listedAt(folder) < listingTTL
    }

    /// Hands the records changed since the last batch to the store, with what happens to the
    /// cursor: after each applied page, under the same lock that applied it, so a stored batch is
    /// exactly a state the tree was in. Call with the lock held, right after the change the cursor
    /// describes.
    func persist(in t: inout State, cursor: StoreBatch.CursorChange = .keep) {
        guard let store = t.store else { return }
        let records = t.tree.takeChangedRecords()
        if records.isEmpty, case .keep = cursor { return }
        store.submit(StoreBatch(records: records, cursor: cursor))
    }

    /// Entries in the tree, and records kept (live or not), for statfs and the status line.
    var counts: (live: Int, records: Int) { state.withLock { ($0.tree.liveCount, $0.tree.nodes.count) } }
}
