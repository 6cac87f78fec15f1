// The metadata tree: every known Dropbox entry as a Node, indexed by inode number, with each
// folder's children keyed by Dropbox's own key for them, the last component of their `path_lower`
// (FoldKey), never by a folding of ours (docs/ARCHITECTURE.md "The metadata tree";
// docs/SEMANTICS.md "Names"). Nodes live in a chunked NodeStore; folder-only state in a separate
// FolderState table that a folder node points into (`folderSlot`). It is a plain value type with no
// locking and no I/O: the LiveTree owns the one instance inside its mutex (LiveTree.state), and
// every mutation reports which kernel cache entries it made stale so the FUSE layer can invalidate
// exactly those.
//
// Entries may arrive in any order (Dropbox promises none): a child before its parent folder gets a
// *provisional* folder made from its path (`provisionalFolder`), which the parent's own entry later
// confirms or replaces.

import DropboxAPI

/// The outcome of looking a name up in a folder.
enum ChildLookup: Equatable {
    case found(UInt32)
    /// The folder is completely listed and has no such child.
    case absent
    /// The folder is not (yet) completely listed.
    case unknown
}

struct MetadataTree {
    static let rootIndex: UInt32 = 1

    // The storage below is internal (not private) only for MetadataTree+Store.swift, which rebuilds
    // it from the tree store in one pass; everything else goes through the methods of this file.

    /// Index 0 is unused so that an index is also a valid FUSE inode number (the root is 1).
    var nodes = NodeStore()
    /// Folder state by `Node.folderSlot`; slot 0 is unused (files point there).
    var folders: [FolderState] = [FolderState()]
    /// Slots of released folders; reused for new folders.
    private var freeFolderSlots: [UInt32] = []
    var symlinkTargets: [UInt32: String] = [:]
    /// The size of an export-only document's export, once exported, with the revision it is of
    /// (Reader/Exports.swift): reported instead of the size Dropbox lists for that revision.
    var exportedSizes: [UInt32: (rev: String, size: UInt64)] = [:]
    /// Indices of detached nodes whose records were released, reused for new entries oldest
    /// first (from `freeHead` on), so a released node keeps its name and parent as long as
    /// possible: a folder listing read in pieces resumes after such a node by its name.
    var freeList: [UInt32] = []
    private var freeHead = 0
    /// The generation given to the next allocated node (wraps after 2^32, skipping 0).
    var nextGeneration: UInt32 = 1
    /// How many nodes are attached (for statfs and progress).
    var liveCount = 1
    /// Indices whose record changed (added, updated, renamed or removed) since the tree store last
    /// took them (MetadataTree+Store.swift); nil when the tree is not stored, so an in-memory mount
    /// pays nothing.
    var changedIndices: Set<UInt32>?
    /// Attached provisional folders not yet reported, with the listing epoch that made them (0: a
    /// change batch), so the sync engine can log each one whose own entry never came, once.
    private(set) var unconfirmedFolders: [UInt32: UInt32] = [:]
    /// Time given to folders, which Dropbox does not date (see SEMANTICS.md).
    let folderTime: Int64

    init(folderTime: Int64) {
        self.folderTime = folderTime
        var root = Node(parent: Self.rootIndex, name: "", kind: .folder)
        root.mtime = folderTime
        root.ctime = folderTime
        root.lookups = 1  // the kernel holds the root for the life of the mount
        var unused = Node(parent: 0, name: "", kind: .file)
        unused.attached = false
        nodes.append(unused)
        root.folderSlot = allocateFolder(FolderState())
        nodes.append(root)
    }

    // MARK: Reading

    func node(_ index: UInt32) -> Node? {
        guard index > 0, Int(index) < nodes.count else { return nil }
        let node = nodes[Int(index)]
        return node.attached || node.lookups > 0 ? node : nil
    }

    func symlinkTarget(_ index: UInt32) -> String? { symlinkTargets[index] }

    /// The child of `parent` under Dropbox's key `key` (a `path_lower` component).
    func lookup(parent: UInt32, key: FoldKey) -> ChildLookup {
        guard let slot = folderSlot(parent) else { return .absent }
        if let child = child(inSlot: slot, key: key) { return .found(child) }
        return folders[slot].complete ? .absent : .unknown
    }

    /// The child of `parent` whose name is exactly `name` (byte for byte), found through the
    /// client's folding `fold` of the name (`FoldKey(name)`) or, for the few children Dropbox keys
    /// otherwise, OddKeys.
    func lookup(parent: UInt32, name: String, fold: FoldKey) -> ChildLookup {
        guard let slot = folderSlot(parent) else { return .absent }
        let odd = folders[slot].odd
        // A child filed under the name's folding is the one when its name is the same bytes (and
        // it is not an odd child whose own key only shares the hash).
        let found = folders[slot].children.find(hash: ChildTable.hash(fold)) { child in
            sameUTF8(nodes[Int(child)].name, name) && odd?.keys[child] == nil
        }
        if let found { return .found(found) }
        if let child = odd?.byName[ExactName(name)] { return .found(child) }
        return folders[slot].complete ? .absent : .unknown
    }

    /// Dropbox's key of an attached child (the one its parent files it under).
    func key(of index: UInt32) -> FoldKey? {
        let node = nodes[Int(index)]
        guard node.attached, index != Self.rootIndex, let slot = folderSlot(node.parent) else { return nil }
        return key(ofChild: index, inSlot: slot)
    }

    /// Dropbox's key of the child `child` of the folder in `slot`: its OddKeys record, or its
    /// name's folding.
    private func key(ofChild child: UInt32, inSlot slot: Int) -> FoldKey {
        if let key = folders[slot].odd?.keys[child] { return key }
        let node = nodes[Int(child)]
        if node.keyIsName { return FoldKey(sharing: node.name) }
        if node.folderSlot != 0, let own = folders[Int(node.folderSlot)].ownKey { return FoldKey(sharing: own) }
        return FoldKey(node.name)
    }

    /// The child of the folder in `slot` filed under `key`. A candidate (same hash, nearly always
    /// the one) is checked against its OddKeys record, its name when that is its key
    /// (`Node.keyIsName`), a folder's own key, or else its name's folding (built only for a
    /// non-ASCII name, FoldKey.folds).
    func child(inSlot slot: Int, key: FoldKey, hash: UInt32? = nil) -> UInt32? {
        let odd = folders[slot].odd
        return folders[slot].children.find(hash: hash ?? ChildTable.hash(key)) { child in
            if let own = odd?.keys[child] { return own == key }
            let node = nodes[Int(child)]
            if node.keyIsName { return sameUTF8(node.name, key.folded) }
            if node.folderSlot != 0, let own = folders[Int(node.folderSlot)].ownKey { return sameUTF8(own, key.folded) }
            return FoldKey.folds(node.name, to: key)
        }
    }

    /// The path to ask Dropbox for when listing `folder`: its `id`, or for a provisional folder
    /// (no id yet) its path of Dropbox keys ("/a/b"); "" for the root.
    func listingPath(of folder: UInt32) -> String {
        if folder == Self.rootIndex { return "" }
        let id = nodes[Int(folder)].id
        if !id.isEmpty { return id }
        var parts: [String] = []
        var current = folder
        while current != Self.rootIndex, let key = key(of: current) {
            parts.append(key.folded)
            current = nodes[Int(current)].parent
        }
        return "/" + parts.reversed().joined(separator: "/")
    }

    func isComplete(_ folder: UInt32) -> Bool { folderState(folder)?.complete ?? false }

    func hasChildren(_ folder: UInt32) -> Bool { !(folderState(folder)?.children.isEmpty ?? true) }

    func listedAt(_ folder: UInt32) -> Double { folderState(folder)?.listedAt ?? 0 }

    /// Folders with more children than this keep their sorted order until they change.
    static let sortedCacheMinimum = 64

    /// The children of a folder, sorted by name bytes so listings are stable. The order of a big
    /// folder is kept until it changes; a small one is sorted each time (keeping every folder's
    /// order would cost 4 bytes per entry for as long as the mount lives).
    mutating func children(of folder: UInt32) -> [UInt32] {
        guard let slot = folderSlot(folder) else { return [] }
        let state = folders[slot]
        if let sorted = state.sorted, sorted.version == state.version { return sorted.children }
        let children = state.children.children.sorted { a, b in precedesUTF8(nodes[Int(a)].name, nodes[Int(b)].name) }
        folders[slot].sorted = children.count > Self.sortedCacheMinimum ? (state.version, children) : nil
        return children
    }

    /// The children of a folder that are folders, sorted as `children(of:)`.
    mutating func subfolders(of folder: UInt32) -> [UInt32] {
        children(of: folder).filter { nodes[Int($0)].kind == .folder }
    }

    /// The entries below `folder` (all its descendants), its children, and how many of those are
    /// folders, counted over the tree as it stands; zeros for a file. The parallel fill plans a
    /// refill from these (FillPlan.swift). A walk of the subtree: call it per branch, not per
    /// request.
    func subtreeCounts(of folder: UInt32) -> (entries: Int, children: Int, subfolders: Int) {
        guard let top = folderSlot(folder) else { return (0, 0, 0) }
        var entries = 0
        var subfolders = 0
        folders[top].children.forEachChild { child in
            if nodes[Int(child)].kind == .folder { subfolders += 1 }
        }
        var stack: [Int] = [top]
        while let slot = stack.popLast() {
            folders[slot].children.forEachChild { child in
                entries += 1
                if let below = folderSlot(child) { stack.append(below) }
            }
        }
        return (entries, Int(folders[top].children.count), subfolders)
    }

    /// The folder's change counter (see FolderState.version).
    func version(of folder: UInt32) -> UInt32 { folderState(folder)?.version ?? 0 }

    /// The folder's count of changes the kernel was told about (see FolderState.stamp).
    func stamp(of folder: UInt32) -> UInt32 { folderState(folder)?.stamp ?? 0 }

    /// Records that the kernel was handed the listing of `version`; returns whether the kernel's
    /// cached listing (from an earlier handle) is that same listing.
    mutating func markServed(_ folder: UInt32, version: UInt32) -> Bool {
        guard let slot = folderSlot(folder) else { return false }
        let served = folders[slot].servedVersion
        folders[slot].servedVersion = version
        return served == version
    }

    /// The display path of an attached node ("/a/b"; "" for the root), built from the nodes' own names.
    /// The entry whose Dropbox id is `id` (a scan of every node: for the rare caller that must
    /// find an entry moved since it last knew its path, such as a pin; OfflineKeeper.followMoves).
    func index(ofID id: String) -> UInt32? {
        guard !id.isEmpty else { return nil }
        let packed = Node.packedID(id)
        for index in 1..<nodes.count {
            let node = nodes[index]
            if node.attached, node.hasID(packed: packed, text: id) { return UInt32(index) }
        }
        return nil
    }

    func path(of index: UInt32) -> String {
        var parts: [String] = []
        var current = index
        while current != Self.rootIndex {
            let node = nodes[Int(current)]
            parts.append(node.name)
            current = node.parent
        }
        return parts.isEmpty ? "" : "/" + parts.reversed().joined(separator: "/")
    }

    /// The attached folder at a Dropbox `path_lower`-style path ("/a/b"; "" is the root), found by
    /// its components as keys; nil when some component is missing or a file. Splits on the '/'
    /// byte: splitting the String would glue a component that starts with a combining mark or
    /// joiner onto the '/' before it (one grapheme cluster).
    func folder(atKeyPath path: String) -> UInt32? {
        var current = Self.rootIndex
        for component in path.utf8.split(separator: UInt8(ascii: "/")) {
            guard case .found(let next) = lookup(parent: current, key: FoldKey(alreadyFolded: Substring(component))),
                nodes[Int(next)].kind == .folder
            else { return nil }
            current = next
        }
        return current
    }

    // MARK: Kernel lookup counts

    /// The kernel took `count` more references. The count saturates at 2^32 - 1, which no kernel
    /// reaches without forgetting (it would take as many replies for one inode).
    mutating func addLookup(_ index: UInt32, count: UInt64 = 1) {
        let sum = UInt64(nodes[Int(index)].lookups) + count
        nodes[Int(index)].lookups = UInt32(min(sum, UInt64(UInt32.max)))
    }

    /// The kernel dropped `count` references; a detached node with none left is released. A
    /// forget of a node the kernel holds none of (released already, or never looked up: a kernel
    /// forgetting more than it looked up) is ignored, so an index goes on the free list only once.
    mutating func forget(_ index: UInt32, count: UInt64) {
        guard index > Self.rootIndex, Int(index) < nodes.count, nodes[Int(index)].lookups > 0 else { return }
        let current = UInt64(nodes[Int(index)].lookups)
        nodes[Int(index)].lookups = current > count ? UInt32(current - count) : 0
        if nodes[Int(index)].lookups == 0 && !nodes[Int(index)].attached {
            release(index)
        }
    }

    // MARK: Changing

    /// Creates or updates the child of `parent` under Dropbox's key `key` from Dropbox metadata,
    /// named `name`. Whatever else is at that key is replaced (a file by a folder or the reverse,
    /// with its subtree), as Dropbox's delta rules say; a folder already there keeps its children,
    /// and a provisional one is confirmed. A folder created here starts complete only when
    /// `newFoldersComplete` (its children will all arrive as deltas).
    @discardableResult
    mutating func upsert(
        parent: UInt32, key: FoldKey, name: NodeName, metadata: Metadata, epoch: UInt32? = nil,
        newFoldersComplete: Bool = false, invalidations: inout [Invalidation]
    ) -> UInt32? {
        let kind: NodeKind
        switch metadata {
        case .file(let file): kind = file.symlinkTarget == nil ? .file : .symlink
        case .folder: kind = .folder
        case .deleted: return nil
        }
        guard let parentSlot = folderSlot(parent) else { return nil }
        if let existing = child(inSlot: parentSlot, key: key) {
            // A new revision of a file gets a new inode, as a replace-by-rename would on a local
            // disk: open handles keep the old inode, whose size and cached pages stay those of
            // their revision, and the name points to the new one.
            var sameRevision = true
            if case .file(let file) = metadata { sameRevision = nodes[Int(existing)].rev == file.rev }
            if nodes[Int(existing)].kind == kind && sameRevision {
                let before = nodes[Int(existing)]
                fill(existing, from: metadata)
                if before.provisional { unconfirmedFolders[existing] = nil }
                // Listings overlap (a subtree listing runs inside the whole-account one): an entry
                // keeps the newest snapshot that saw it.
                if let epoch { nodes[Int(existing)].seenEpoch = max(nodes[Int(existing)].seenEpoch, epoch) }
                if !sameUTF8(before.name, name.string) {
                    rename(existing, in: parentSlot, key: key, to: name.string, invalidations: &invalidations)
                }
                let after = nodes[Int(existing)]
                if before.size != after.size || before.mtime != after.mtime || !before.sameIDAndRev(as: after)
                    || before.contentHash != after.contentHash
                {
                    invalidations.append(.inode(UInt64(existing)))
                }
                return existing
            }
            detach(existing, from: parent, key: key, invalidations: &invalidations)
        }
        let index = attach(
            Node(parent: parent, name: name.string, kind: kind), under: parent, key: key, epoch: epoch,
            complete: newFoldersComplete, invalidations: &invalidations)
        fill(index, from: metadata)
        return index
    }

    /// Records that the listing of `epoch` saw the node (an entry below it, for a folder whose own
    /// entry the listing may never send), so its completion keeps it (`completeSubtree`).
    mutating func markSeen(_ index: UInt32, epoch: UInt32) {
        if nodes[Int(index)].seenEpoch < epoch { nodes[Int(index)].seenEpoch = epoch }
    }

    /// The folder under Dropbox's key `key` in `parent`, made provisional from an entry's path when
    /// the entry came before its parent folder's own entry (Dropbox promises no order): a file in
    /// the way is replaced, as the delta rules say ("create the missing parents"). It is named
    /// `name` (from the entry's `path_display`) until its own entry confirms it.
    /// `madeBy` is the listing epoch that needs it (0: a change batch), for takeUnconfirmedFolders.
    mutating func provisionalFolder(
        parent: UInt32, key: FoldKey, name: NodeName, epoch: UInt32, madeBy: UInt32, complete: Bool,
        invalidations: inout [Invalidation]
    ) -> UInt32? {
        guard let parentSlot = folderSlot(parent) else { return nil }
        if let existing = child(inSlot: parentSlot, key: key) {
            if nodes[Int(existing)].kind == .folder { return existing }
            detach(existing, from: parent, key: key, invalidations: &invalidations)
        }
        var node = Node(parent: parent, name: name.string, kind: .folder)
        node.mtime = folderTime
        node.ctime = folderTime
        node.provisional = true
        let index = attach(node, under: parent, key: key, epoch: epoch, complete: complete, invalidations: &invalidations)
        unconfirmedFolders[index] = madeBy
        return index
    }

    /// Takes the unconfirmed provisional folders made by the listing of `epoch` (0: by change
    /// batches) out of the report list and returns them, so each is reported once.
    mutating func takeUnconfirmedFolders(madeBy epoch: UInt32) -> [UInt32] {
        let taken = unconfirmedFolders.filter { $0.value == epoch }.map(\.key)
        for index in taken { unconfirmedFolders[index] = nil }
        return taken.filter { nodes[Int($0)].attached && nodes[Int($0)].provisional }
    }

    /// Removes the child under Dropbox's key `key` of `parent`, with its whole subtree.
    mutating func remove(parent: UInt32, key: FoldKey, invalidations: inout [Invalidation]) {
        guard let slot = folderSlot(parent), let child = child(inSlot: slot, key: key) else { return }
        detach(child, from: parent, key: key, invalidations: &invalidations)
    }

    /// Removes an attached node with its whole subtree.
    mutating func remove(_ index: UInt32, invalidations: inout [Invalidation]) {
        guard index != Self.rootIndex, let key = key(of: index) else { return }
        detach(index, from: nodes[Int(index)].parent, key: key, invalidations: &invalidations)
    }

    /// Marks a folder completely listed (or not). A change of the flag is stored with the folder's
    /// record (a restored tree lists again what was not complete).
    mutating func setComplete(_ folder: UInt32, _ complete: Bool, at time: Double) {
        guard let slot = folderSlot(folder) else { return }
        if folders[slot].complete != complete { changedIndices?.insert(folder) }
        folders[slot].complete = complete
        if complete { folders[slot].listedAt = time }
    }

    /// The children of `folder` that a listing or change batch newer than snapshot `sequence` saw.
    func children(of folder: UInt32, seenAfter sequence: UInt32) -> [UInt32] {
        guard let slot = folderSlot(folder) else { return [] }
        var out: [UInt32] = []
        folders[slot].children.forEachChild { child in
            if nodes[Int(child)].seenEpoch > sequence { out.append(child) }
        }
        return out
    }

    /// The snapshot sequence of the newest listing applied to `folder` (FolderState.snapshot).
    func snapshot(of folder: UInt32) -> UInt32 { folderState(folder)?.snapshot ?? 0 }

    /// Records that the listing of snapshot `sequence` was applied to `folder`.
    mutating func stampSnapshot(_ folder: UInt32, _ sequence: UInt32) {
        guard let slot = folderSlot(folder) else { return }
        folders[slot].snapshot = max(folders[slot].snapshot, sequence)
    }

    /// After a full listing of `folder`, removes the children that the listing did not contain.
    mutating func removeChildren(
        of folder: UInt32, notIn seen: Set<UInt32>, invalidations: inout [Invalidation]
    ) {
        guard let children = folderState(folder)?.children else { return }
        for (child, hash) in children.entries where !seen.contains(child) {
            detach(child, from: folder, hash: hash, invalidations: &invalidations)
        }
    }

    /// Completes the recursive listing of `top` with snapshot sequence `epoch` (docs/SEMANTICS.md,
    /// "Listings in flight"): every folder of the subtree that the listing saw is marked complete
    /// and stamped with `epoch`, and loses the children the listing did not see (a full recursive
    /// listing is the truth). A folder a newer listing was applied to (its snapshot is above
    /// `epoch`) is left as that listing made it; below it, only the folders this listing saw (their
    /// `seenEpoch` is exactly `epoch`) are completed: one a newer listing brought may hold more than
    /// this older snapshot, and one a newer recursive listing also saw is completed by that one.
    /// A folder left incomplete is listed by itself when needed.
    mutating func completeSubtree(
        _ top: UInt32, epoch: UInt32, at time: Double, invalidations: inout [Invalidation]
    ) {
        var stack = [top]
        while let current = stack.popLast() {
            guard let slot = folderSlot(current) else { continue }
            if folders[slot].snapshot > epoch {
                folders[slot].children.forEachChild { child in
                    if nodes[Int(child)].kind == .folder && nodes[Int(child)].seenEpoch == epoch { stack.append(child) }
                }
                continue
            }
            for (child, hash) in folders[slot].children.entries where nodes[Int(child)].seenEpoch < epoch {
                detach(child, from: current, hash: hash, invalidations: &invalidations)
            }
            if !folders[slot].complete {
                folders[slot].complete = true
                changedIndices?.insert(current)
            }
            folders[slot].listedAt = time
            folders[slot].snapshot = epoch
            folders[slot].children.forEachChild { child in
                if nodes[Int(child)].kind == .folder && nodes[Int(child)].seenEpoch == epoch { stack.append(child) }
            }
        }
    }

    /// Marks every folder incomplete, so each is listed again when next needed (after a cursor
    /// reset when no full listing runs).
    mutating func markAllIncomplete() {
        for index in nodes.indices where nodes[index].attached && nodes[index].folderSlot != 0 {
            let slot = Int(nodes[index].folderSlot)
            if folders[slot].complete {
                folders[slot].wasComplete = true
                changedIndices?.insert(UInt32(index))
            }
            folders[slot].complete = false
            folders[slot].stamp &+= 1
        }
    }

    // MARK: Internals

    /// The folder table slot of `index`, nil for a file (or a released node).
    private func folderSlot(_ index: UInt32) -> Int? {
        let slot = nodes[Int(index)].folderSlot
        return slot == 0 ? nil : Int(slot)
    }

    private func folderState(_ index: UInt32) -> FolderState? {
        folderSlot(index).map { folders[$0] }
    }

    mutating func allocateFolder(_ state: FolderState) -> UInt32 {
        if let slot = freeFolderSlots.popLast() {
            folders[Int(slot)] = state
            return slot
        }
        folders.append(state)
        return UInt32(folders.count - 1)
    }

    private mutating func fill(_ index: UInt32, from metadata: Metadata) {
        changedIndices?.insert(index)
        switch metadata {
        case .file(let file):
            nodes[Int(index)].id = file.id
            nodes[Int(index)].rev = file.rev
            nodes[Int(index)].size = file.symlinkTarget.map { UInt64($0.utf8.count) } ?? file.size
            nodes[Int(index)].mtime = file.clientModified.secondsSinceEpoch
            nodes[Int(index)].ctime = file.serverModified.secondsSinceEpoch
            nodes[Int(index)].contentHash = file.contentHash
            nodes[Int(index)].isDownloadable = file.isDownloadable
            if let target = file.symlinkTarget { symlinkTargets[index] = target }
        case .folder(let folder):
            nodes[Int(index)].id = folder.id
            nodes[Int(index)].provisional = false
            nodes[Int(index)].access = FolderAccess(folder)
            nodes[Int(index)].mtime = folderTime
            nodes[Int(index)].ctime = folderTime
        case .deleted:
            break
        }
    }

    private mutating func allocate(_ node: Node) -> UInt32 {
        var node = node
        node.generation = takeGeneration()
        if freeHead < freeList.count {
            let index = freeList[freeHead]
            freeHead += 1
            if freeHead >= 4096 && freeHead * 2 >= freeList.count {
                freeList.removeFirst(freeHead)
                freeHead = 0
            }
            nodes[Int(index)] = node
            return index
        }
        precondition(nodes.count < Int(UInt32.max), "too many nodes")
        nodes.append(node)
        return UInt32(nodes.count - 1)
    }

    /// The generation for a new node: 1, 2, ... wrapping after 2^32 - 1 to 1 (0 is never given).
    mutating func takeGeneration() -> UInt32 {
        let generation = nextGeneration
        nextGeneration = nextGeneration == UInt32.max ? 1 : nextGeneration + 1
        return generation
    }

    /// Files a new node under `key` in `parent` and returns its index.
    private mutating func attach(
        _ node: Node, under parent: UInt32, key: FoldKey, epoch: UInt32?, complete: Bool,
        invalidations: inout [Invalidation]
    ) -> UInt32 {
        var node = node
        node.seenEpoch = epoch ?? 0
        node.keyIsName = sameUTF8(key.folded, node.name)
        if node.kind == .folder {
            let ownKey = node.keyIsName || isASCII(node.name) ? nil : key.folded
            node.folderSlot = allocateFolder(FolderState(ownKey: ownKey, complete: complete))
        }
        let name = node.name
        let index = allocate(node)
        changedIndices?.insert(index)
        // Only a complete folder (or one complete before a cursor reset) can have told the kernel
        // "no such name" or filled its readdir cache, so only its changes need kernel invalidation.
        if let parentSlot = folderSlot(parent) {
            folders[parentSlot].children.insert(index, hash: ChildTable.hash(key))
            noteKey(key, of: index, named: name, in: parentSlot)
            folders[parentSlot].version &+= 1
            if folders[parentSlot].kernelMayKnowNames {
                folders[parentSlot].stamp &+= 1
                invalidations.append(.entry(parent: UInt64(parent), name: name))
                invalidations.append(.inode(UInt64(parent)))
            }
        }
        liveCount += 1
        return index
    }

    /// Gives the child `index` (filed under `key`) a new name: the same entry in another case or
    /// normalisation, or a provisional folder's real name.
    private mutating func rename(
        _ index: UInt32, in parentSlot: Int, key: FoldKey, to name: String, invalidations: inout [Invalidation]
    ) {
        let parent = UInt64(nodes[Int(index)].parent)
        let old = nodes[Int(index)].name
        invalidations.append(.entry(parent: parent, name: old))
        // A complete folder may have told the kernel "no such name" for the new spelling (as for
        // any new name, `attach`).
        if folders[parentSlot].kernelMayKnowNames { invalidations.append(.entry(parent: parent, name: name)) }
        invalidations.append(.inode(parent))
        forgetKey(of: index, named: old, in: parentSlot)
        noteKey(key, of: index, named: name, in: parentSlot)
        nodes[Int(index)].name = name
        nodes[Int(index)].keyIsName = sameUTF8(key.folded, name)
        changedIndices?.insert(index)
        folders[parentSlot].version &+= 1
        folders[parentSlot].stamp &+= 1
    }

    /// Records in OddKeys the child `index`'s key when it is not our folding of its name.
    mutating func noteKey(_ key: FoldKey, of index: UInt32, named name: String, in slot: Int) {
        if !FoldKey.folds(name, to: key) { recordOddKey(key, of: index, named: name, in: slot) }
    }

    /// Records the child `index`'s key in OddKeys (the caller knows it is odd).
    mutating func recordOddKey(_ key: FoldKey, of index: UInt32, named name: String, in slot: Int) {
        if folders[slot].odd == nil { folders[slot].odd = OddKeys() }
        folders[slot].odd!.keys[index] = key
        folders[slot].odd!.byName[ExactName(name)] = index
    }

    /// Removes the OddKeys record of the child `index` named `name`, if it has one.
    private mutating func forgetKey(of index: UInt32, named name: String, in slot: Int) {
        guard folders[slot].odd != nil else { return }  // the common case
        folders[slot].odd!.keys[index] = nil
        if folders[slot].odd!.byName[ExactName(name)] == index { folders[slot].odd!.byName[ExactName(name)] = nil }
        if folders[slot].odd!.keys.isEmpty { folders[slot].odd = nil }
    }

    private mutating func detach(
        _ index: UInt32, from parent: UInt32, key: FoldKey, invalidations: inout [Invalidation]
    ) {
        detach(index, from: parent, hash: ChildTable.hash(key), invalidations: &invalidations)
    }

    /// Removes the child `index`, filed under `hash` in `parent`, with its whole subtree.
    private mutating func detach(
        _ index: UInt32, from parent: UInt32, hash: UInt32, invalidations: inout [Invalidation]
    ) {
        if let parentSlot = folderSlot(parent) {
            // A child filed under another hash than its key's (a stored tree whose odd-key flag
            // was wrong) is still taken out, so the table never keeps a released index.
            if !folders[parentSlot].children.remove(index, hash: hash) { folders[parentSlot].children.remove(index) }
            forgetKey(of: index, named: nodes[Int(index)].name, in: parentSlot)
            folders[parentSlot].version &+= 1
            folders[parentSlot].stamp &+= 1
        }
        invalidations.append(.entry(parent: UInt64(parent), name: nodes[Int(index)].name))
        invalidations.append(.inode(UInt64(parent)))
        var stack = [index]
        while let current = stack.popLast() {
            if let slot = folderSlot(current) {
                stack.append(contentsOf: folders[slot].children.children)
                // A detached folder the kernel still holds lists as empty.
                folders[slot] = FolderState(complete: true, listedAt: 0, stamp: folders[slot].stamp &+ 1)
            }
            unconfirmedFolders[current] = nil
            changedIndices?.insert(current)
            nodes[Int(current)].attached = false
            liveCount -= 1
            invalidations.append(.inode(UInt64(current)))
            if nodes[Int(current)].lookups == 0 { release(current) }
        }
    }

    /// Frees a detached, forgotten node's storage and makes its index reusable.
    private mutating func release(_ index: UInt32) {
        if let slot = folderSlot(index) {
            folders[slot] = FolderState()
            freeFolderSlots.append(UInt32(slot))
        }
        let old = nodes[Int(index)]
        // Only the name, parent and generation stay, until the index is reused (DirectoryCookie).
        var released = Node(parent: old.parent, name: old.name, kind: .file)
        released.attached = false
        released.generation = old.generation
        nodes[Int(index)] = released
        symlinkTargets[index] = nil
        exportedSizes[index] = nil
        freeList.append(index)
    }
}
