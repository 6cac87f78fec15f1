// The metadata tree as the mount serves it: the one MetadataTree, behind its own lock, with the
// memory of names hidden for what they are, the rules that apply Dropbox's entries to it
// (TreeUpdates.swift), the cursor it matches, and the hand-off of its changed records to the tree
// store and of the kernel caches it made stale to the FUSE layer. It is the only way to the tree:
// the filesystem facade asks it named questions (LiveTree+Queries.swift: lookups, attributes,
// folder pieces, the kernel's lookup counts, extended attributes, thumbnail sources), the sync
// engine likewise (LiveTree+SyncQueries.swift), and every change of Dropbox's entries goes through
// `change`, which the sync engine (Sync/SyncEngine.swift) is the only caller of but for an
// export's size.
//
// Locking: `state` guards the tree, the hidden-name memory, the cursor and the store batches go
// to, and nothing else. It is taken inside the sync engine's lock when a listing's result must
// land atomically with the engine's bookkeeping (`change(with:)`: SyncEngine.state, then
// LiveTree.state), never the other way round, and never held across an `await` or a network
// call. Invalidations are published after it is let go (Invalidations.swift).

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
        /// The newest cursor covering the whole account that the tree matches (the one handed to
        /// the store with the batch that made it so); nil while none is known. Set only by
        /// `change(cursor:)`, so it and the stored one are the same.
        var cursor: String?
    }

    private let state: Mutex<State>
    /// How long a complete folder listing is trusted (`.infinity` while changes are followed).
    let listingTTL: Double
    let monotonicNow: @Sendable () -> Double
    /// Where the kernel cache invalidations of every change go (the FUSE session's handler).
    let invalidations: InvalidationPublisher
    /// Counts the calls of `change`: the offline keeper looks again after it moved.
    let changeCount = Atomic<UInt64>(0)

    /// `cursor`: the one a restored tree was stored with. `invalidationRepeat`: the delay of an
    /// invalidation's second delivery (Invalidations.swift).
    init(
        _ tree: MetadataTree, store: TreeStore?, cursor: String? = nil, listingTTL: Double,
        monotonicNow: @escaping @Sendable () -> Double, invalidationRepeat: Double? = 1
    ) {
        var tree = tree
        if store != nil { tree.trackChanges() }
        self.state = Mutex(State(tree: tree, store: store, cursor: cursor))
        self.listingTTL = listingTTL
        self.monotonicNow = monotonicNow
        self.invalidations = InvalidationPublisher(repeatAfter: invalidationRepeat)
    }

    // MARK: Changes

    /// The one way to change the tree's entries: runs `mutation` under the tree's lock with the
    /// list of kernel caches it makes stale, hands the changed records to the store with what
    /// happens to the cursor (`cursor`) in the same step, so a stored batch is exactly a state the
    /// tree was in, and publishes the invalidations once the lock is let go.
    @discardableResult
    func change<R>(cursor: StoreBatch.CursorChange = .keep, _ mutation: (inout State, inout [Invalidation]) -> R) -> R {
        var invalidated: [Invalidation] = []
        defer {
            invalidations.publish(invalidated)
            changeCount.add(1, ordering: .relaxed)
        }
        return state.withLock { t in
            let result = mutation(&t, &invalidated)
            Self.persist(in: &t, cursor: cursor)
            return result
        }
    }

    /// `change`, inside the sync engine's lock (`engine` is SyncEngine.state, the only lock ever
    /// taken before the tree's): a listing's result lands in the same step as the engine checks
    /// the listing is still the current one and counts it.
    @discardableResult
    func change<Engine: Sendable, R>(
        with engine: borrowing Mutex<Engine>, cursor: StoreBatch.CursorChange = .keep,
        _ mutation: (inout Engine, inout State, inout [Invalidation]) -> R
    ) -> R {
        var invalidated: [Invalidation] = []
        defer {
            invalidations.publish(invalidated)
            changeCount.add(1, ordering: .relaxed)
        }
        return engine.withLock { s in
            state.withLock { t in
                let result = mutation(&s, &t, &invalidated)
                Self.persist(in: &t, cursor: cursor)
                return result
            }
        }
    }

    /// Hands the records changed since the last batch to the store, with what happens to the
    /// cursor, which the tree keeps too.
    private static func persist(in t: inout State, cursor: StoreBatch.CursorChange) {
        switch cursor {
        case .keep: break
        case .set(let newest), .filled(let newest): t.cursor = newest
        case .clear: t.cursor = nil
        }
        guard let store = t.store else { return }
        let records = t.tree.takeChangedRecords()
        if records.isEmpty, case .keep = cursor { return }
        store.submit(StoreBatch(records: records, cursor: cursor))
    }

    // MARK: Reading

    /// A look at the tree under its lock. For the named queries of this folder
    /// (LiveTree+Queries.swift, LiveTree+SyncQueries.swift) and for tests; the rest of the core
    /// asks those.
    func read<R, E: Error>(_ body: (State) throws(E) -> R) throws(E) -> R {
        try state.withLock { (t: inout State) throws(E) -> R in try body(t) }
    }

    /// The tree's own bookkeeping (the kernel's lookup counts, the listing versions handed out,
    /// the sorted order of a folder's children kept for the next piece): no entry of Dropbox's
    /// changes, so nothing is stored or published. For the named queries of this folder only.
    func bookkeeping<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R {
        try state.withLock { (t: inout State) throws(E) -> R in try body(&t) }
    }

    /// The one rule for "listed enough to answer from": a folder Dropbox deleted but the kernel
    /// still holds is (it is empty); otherwise its listing is complete and younger than the TTL,
    /// or, `acceptingExpired` (the later pieces of one listing, the end of a listing just made),
    /// complete at all. Call with the lock held, on a folder of the tree.
    func isListed(_ folder: UInt32, in t: State, acceptingExpired: Bool = false) -> Bool {
        guard t.tree.nodes[Int(folder)].attached else { return true }
        guard t.tree.isComplete(folder) else { return false }
        if acceptingExpired || listingTTL == .infinity { return true }
        return monotonicNow() - t.tree.listedAt(folder) < listingTTL
    }

    /// Entries in the tree, and records kept (live or not), for statfs and the status line.
    var counts: (live: Int, records: Int) { read { ($0.tree.liveCount, $0.tree.nodes.count) } }

    /// The cursor the tree matches (see State.cursor).
    var cursor: String? { read { $0.cursor } }
}
