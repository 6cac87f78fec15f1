// The metadata tree as the mount serves it: the one MetadataTree, behind its own lock, with the
// memory of names hidden for what they are, the rules that apply Dropbox's entries to it
// (TreeUpdates.swift), the cursor it matches, and the hand-off of its changed records to the tree
// store and of the kernel caches it made stale to the FUSE layer. It is the only way to the tree:
// the filesystem facade asks it named questions (LiveTree+Queries.swift: lookups, attributes,
// folder pieces, the kernel's lookup counts, extended attributes, thumbnail sources), the sync
// engine likewise (its sync queries, below), and every change of Dropbox's entries goes through
// `change`, which the sync engine (Sync/SyncEngine.swift) is the only caller of but for an
// export's size.
//
// Locking: `state` guards the tree, the hidden-name memory, the cursor and the store batches go
// to, and nothing else. It is taken inside the sync engine's lock when a listing's result must
// land atomically with the engine's bookkeeping (`change(with:)`: SyncEngine.state, then
// LiveTree.state), never the other way round, and never held across an `await` or a network
// call. Invalidations are published after it is let go (Invalidations.swift).
//
// Below it, the questions the sync engine asks between its changes (LiveTree's sync queries).

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
    /// Folders the user may not enter are left out of listings and lookups instead of shown with
    /// mode 000 (FilesystemOptions.hideNoAccess).
    let hideNoAccess: Bool
    /// Where the kernel cache invalidations of every change go (the FUSE session's handler).
    let invalidations: InvalidationPublisher
    /// Counts the calls of `change`: the offline keeper looks again after it moved.
    let changeCount = Atomic<UInt64>(0)

    /// `cursor`: the one a restored tree was stored with. `invalidationRepeat`: the delay of an
    /// invalidation's second delivery (Invalidations.swift).
    init(
        _ tree: MetadataTree, store: TreeStore?, cursor: String? = nil, listingTTL: Double,
        monotonicNow: @escaping @Sendable () -> Double, invalidationRepeat: Double? = 1, hideNoAccess: Bool = false
    ) {
        var tree = tree
        if store != nil { tree.trackChanges() }
        self.state = Mutex(State(tree: tree, store: store, cursor: cursor))
        self.listingTTL = listingTTL
        self.hideNoAccess = hideNoAccess
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
            changeCount.add(1, ordering: .releasing)
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
            changeCount.add(1, ordering: .releasing)
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
    /// (LiveTree+Queries.swift and, for the engine, LiveTree.swift) and for tests; the rest of the core
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
        // A folder the user may not enter has nothing to list, and is never asked for.
        if t.tree.nodes[Int(folder)].access == .noAccess { return true }
        guard t.tree.isComplete(folder) else { return false }
        if acceptingExpired || listingTTL == .infinity { return true }
        return monotonicNow() - t.tree.listedAt(folder) < listingTTL
    }

    /// Entries in the tree, and records kept (live or not), for statfs and the status line.
    var counts: (live: Int, records: Int) { read { ($0.tree.liveCount, $0.tree.nodes.count) } }

    /// The cursor the tree matches (see State.cursor).
    var cursor: String? { read { $0.cursor } }
}

// MARK: -
// What the sync engine asks the tree between its changes: which folder a reference names now,
// whether a folder still needs a listing (LiveTree.isListed, the one rule the facade uses too),
// the paths listings are sent for, the branches and sizes the whole-account fill plans with, and
// the folders above one a walk is in. Each is one short step under the tree's lock; the engine may
// ask while it holds its own lock (SyncEngine.state, then LiveTree.state), never the other way.

extension LiveTree {
    /// The reference of the folder at `index` as it stands now, to keep across a wait (FolderRef).
    func ref(_ index: UInt32) -> FolderRef {
        read { $0.tree.ref(index) }
    }

    /// The reference of the node at `index`; `.stale` when the tree has none there.
    func existingRef(_ index: UInt32) throws(FilesystemError) -> FolderRef {
        try read { (t: State) throws(FilesystemError) -> FolderRef in
            guard t.tree.node(index) != nil else { throw .stale }
            return t.tree.ref(index)
        }
    }

    /// Whether the folder `ref` names must be listed before it can answer (`isListed`). `.stale`
    /// once the node at its index is another one; `.notADirectory` for a node that is no folder.
    func needsListing(_ ref: FolderRef) throws(FilesystemError) -> Bool {
        try read { (t: State) throws(FilesystemError) -> Bool in
            guard let node = t.tree.node(ref.index), node.generation == ref.generation else { throw .stale }
            guard node.kind == .folder else { throw .notADirectory }
            return !isListed(ref.index, in: t)
        }
    }

    /// After a listing of `ref` ended: whether the folder holds a complete listing now (or is
    /// gone, which no listing changes), expired or not.
    func holdsListing(_ ref: FolderRef) -> Bool {
        read { t in t.tree.folder(ref).map { isListed($0, in: t, acceptingExpired: true) } ?? true }
    }

    /// Whether `ref` still names an attached folder of the tree.
    func isFolder(_ ref: FolderRef) -> Bool {
        read { $0.tree.folder(ref) != nil }
    }

    /// The path (or id) a listing of the folder at `index` is sent for.
    func listingPath(of index: UInt32) -> String {
        read { $0.tree.listingPath(of: index) }
    }

    /// The path (or id) a listing of `ref` is sent for; nil once the folder is gone.
    func listingPath(of ref: FolderRef) -> String? {
        read { t in t.tree.folder(ref).map { t.tree.listingPath(of: $0) } }
    }

    /// The path of a node, for the log.
    func path(of index: UInt32) -> String {
        read { $0.tree.path(of: index) }
    }

    /// The subfolders of the folder at `index`, in name order.
    func subfolders(of index: UInt32) -> [FolderRef] {
        bookkeeping { t in t.tree.subfolders(of: index).map { t.tree.ref($0) } }
    }

    /// The subfolders of each of `folders` still in the tree, by the folder's index, in one step.
    func subfolders(ofEach folders: Set<FolderRef>) -> [UInt32: [FolderRef]] {
        bookkeeping { t in
            Dictionary(uniqueKeysWithValues: folders.compactMap { folder -> (UInt32, [FolderRef])? in
                guard let index = t.tree.folder(folder) else { return nil }
                return (index, t.tree.subfolders(of: index).map { t.tree.ref($0) })
            })
        }
    }

    /// The entries, children and subfolders below the folder at `index` (MetadataTree.subtreeCounts).
    func subtreeCounts(of index: UInt32) -> (entries: Int, children: Int, subfolders: Int) {
        read { $0.tree.subtreeCounts(of: index) }
    }

    /// The folder at `index` and the folders above it up to the root, nearest first, as long as
    /// each is attached (empty for a detached folder).
    func attachedAncestry(of index: UInt32) -> [FolderRef] {
        read { t in
            var chain: [FolderRef] = []
            var current = index
            while t.tree.node(current)?.attached == true {
                chain.append(t.tree.ref(current))
                if current == MetadataTree.rootIndex { break }
                current = t.tree.nodes[Int(current)].parent
            }
            return chain
        }
    }
}
