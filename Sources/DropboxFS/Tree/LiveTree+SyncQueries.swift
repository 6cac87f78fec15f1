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
