// The tree's side of the tree store (Store/TreeStore.swift): which records changed since the store
// last looked, and the one-pass rebuild of a stored tree at mount. A record is a node under its own
// index, so the stored rows mirror the tree exactly: the parent is an index, the key is stored only
// when it is not the name itself, and a removed node is a deleted row. Rebuilding keeps every index,
// which makes the load a straight scan with no lookups by path.
//
// A stored tree is checked as it is rebuilt (names the kernel can carry, parents that are folders,
// one child per key, every node reachable from the root): a damaged or hand-edited database is
// refused here and rebuilt from Dropbox, never served.

import DropboxAPI

/// One changed record: the node now at `index`, or nil when the index holds no entry any more.
struct StoredRecord {
    var index: UInt32
    var node: Node?
    /// Dropbox's key for the node when it differs from the name (most lower-case names: nil).
    var key: String?
    /// The key is not the client's folding of the name (FolderState.odd): stored, so a load
    /// need not fold every name again to find the few.
    var oddKey = false
    var symlinkTarget: String?
    /// A folder not completely listed (a branch the fill gave up on, a folder a newer listing left
    /// to be listed by itself): a restored tree lists it again when it is reached.
    var incomplete = false
}

/// Why a stored tree was refused.
struct TreeRestoreError: Error, CustomStringConvertible {
    var description: String
}

extension MetadataTree {
    /// Starts recording changed indices for the store.
    mutating func trackChanges() {
        if changedIndices == nil { changedIndices = [] }
    }

    /// The records changed since the last call, in index order, and forgets them.
    mutating func takeChangedRecords() -> [StoredRecord] {
        guard let changed = changedIndices, !changed.isEmpty else { return [] }
        changedIndices = []
        return changed.sorted().compactMap { index in
            guard index > Self.rootIndex, Int(index) < nodes.count else { return nil }
            let node = nodes[Int(index)]
            guard node.attached, let key = key(of: index) else { return StoredRecord(index: index) }
            let parentSlot = Int(nodes[Int(node.parent)].folderSlot)
            let odd = folders[parentSlot].odd?.keys[index] != nil
            return StoredRecord(
                index: index, node: node, key: sameUTF8(key.folded, node.name) ? nil : key.folded, oddKey: odd,
                symlinkTarget: symlinkTargets[index], incomplete: node.kind == .folder && !isComplete(index))
        }
    }

    // MARK: Rebuilding

    /// Adds a stored node at `index`; indices must come in increasing order, from 2 (1 is the root).
    /// Indices skipped become free for reuse, each a node (TreeStore.rebuild bounds the highest
    /// index by the number of rows first). `key` is Dropbox's key when it is not the name. A folder
    /// is complete as it was stored (`complete`), never assumed so.
    mutating func restore(
        _ node: Node, at index: UInt32, key: String?, oddKey: Bool, symlinkTarget: String?, complete: Bool = true,
        scan: inout RestoreScan
    ) throws(TreeRestoreError) {
        guard index > Self.rootIndex, Int(index) >= nodes.count, index < UInt32.max else {
            throw TreeRestoreError(description: "record \(index) is out of order")
        }
        guard NodeName(node.name) != nil else { throw TreeRestoreError(description: "record \(index) has a name Linux cannot carry") }
        if let key, key.isEmpty || key.utf8.contains(UInt8(ascii: "/")) {
            throw TreeRestoreError(description: "record \(index) has a malformed key")
        }
        while nodes.count < Int(index) {
            var free = Node(parent: 0, name: "", kind: .file)
            free.attached = false
            freeList.append(UInt32(nodes.count))
            nodes.append(free)
            scan.childCounts.append(0)
        }
        var node = node
        node.generation = takeGeneration()
        node.lookups = 0
        node.seenEpoch = 0
        node.attached = true
        if node.kind == .folder {
            // Folders show the mount's time (Dropbox does not date them), not the stored mount's.
            node.mtime = folderTime
            node.ctime = folderTime
        }
        node.folderSlot = node.kind == .folder ? allocateFolder(FolderState(complete: complete)) : 0
        nodes.append(node)
        scan.childCounts.append(0)
        // A parent restored after its child (an index reused) is not counted: the count only sizes
        // the folder's table, which grows as usual past it.
        if Int(node.parent) < scan.childCounts.count { scan.childCounts[Int(node.parent)] += 1 }
        if key != nil || oddKey { scan.keys.append((index, RestoredKey(key: key, odd: oddKey))) }
        if let symlinkTarget { symlinkTargets[index] = symlinkTarget }
    }

    /// Files every restored node under its parent, marks folders listed at `time`, and checks that
    /// the records form one tree under the root.
    mutating func finishRestore(_ scan: RestoreScan, at time: Double) throws(TreeRestoreError) {
        var attachedCount = 1
        var nextKey = 0
        for i in 2..<nodes.count where nodes[i].attached {
            let parent = nodes[i].parent
            guard parent >= Self.rootIndex, Int(parent) < nodes.count, nodes[Int(parent)].attached,
                nodes[Int(parent)].folderSlot != 0
            else { throw TreeRestoreError(description: "record \(i) has no parent folder") }
            let slot = Int(nodes[Int(parent)].folderSlot)
            if folders[slot].children.isEmpty, Int(parent) < scan.childCounts.count {
                folders[slot].children.reserveCapacity(Int(scan.childCounts[Int(parent)]))
            }
            let name = nodes[i].name
            // The keys came in index order, as the nodes did: the next one is this node's or a later one's.
            var restored: RestoredKey?
            if nextKey < scan.keys.count, scan.keys[nextKey].index == UInt32(i) {
                restored = scan.keys[nextKey].key
                nextKey += 1
            }
            let key = FoldKey(sharing: restored?.key ?? name)
            let hash = ChildTable.hash(key)
            guard child(inSlot: slot, key: key, hash: hash) == nil else {
                throw TreeRestoreError(description: "two records under one key in folder \(parent)")
            }
            folders[slot].children.insert(UInt32(i), hash: hash)
            let keyIsName = restored?.key == nil
            nodes[i].keyIsName = keyIsName
            if nodes[i].folderSlot != 0, !keyIsName, !isASCII(name) { folders[Int(nodes[i].folderSlot)].ownKey = key.folded }
            // The stored flag spares folding every name at load; an ASCII name costs nothing to
            // check, so a wrong flag there (a damaged file) cannot hide the child from its key.
            let odd = restored?.odd == true || (!keyIsName && isASCII(name) && !FoldKey.folds(name, to: key))
            if odd { recordOddKey(key, of: UInt32(i), named: name, in: slot) }
            folders[slot].listedAt = time
            attachedCount += 1
        }
        let rootSlot = Int(nodes[Int(Self.rootIndex)].folderSlot)
        folders[rootSlot].listedAt = time
        folders[rootSlot].complete = true
        // Every record must hang from the root: a parent cycle would otherwise make paths endless.
        var reachable = 0
        var stack = [Self.rootIndex]
        while let current = stack.popLast() {
            reachable += 1
            let slot = Int(nodes[Int(current)].folderSlot)
            guard slot != 0 else { continue }
            stack.append(contentsOf: folders[slot].children.children)
        }
        guard reachable == attachedCount else {
            throw TreeRestoreError(description: "\(attachedCount - reachable) records are not under the root")
        }
        liveCount = attachedCount
        if changedIndices != nil { changedIndices = [] }
    }
}

/// A restored node's key when it is not its name, and whether it is odd (StoredRecord).
struct RestoredKey {
    var key: String?
    var odd: Bool
}

/// What `restore` gathers for `finishRestore`, kept in arrays rather than tables keyed by index:
/// at a million records, hashing every index twice and growing every folder's table step by step
/// took 17% of the load's CPU (docs/JOURNAL.md, "Faster load of the stored tree").
struct RestoreScan {
    /// The keys that are not the name (or are odd), in increasing index order, as restored.
    var keys: [(index: UInt32, key: RestoredKey)] = []
    /// How many restored children name each index as their parent, to size each folder's table once.
    var childCounts: [UInt32] = [0, 0]
}

extension StoredRecord {
    init(index: UInt32) {
        self.init(index: index, node: nil, key: nil, symlinkTarget: nil)
    }
}
