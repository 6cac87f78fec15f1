// A folder's identity across a wait. Tree indices are reused once a removed node is forgotten
// (MetadataTree.release), so an index kept across an `await` (a listing in flight, a fill branch
// waiting for its retry) may by then name another entry. The sync engine keeps a FolderRef instead:
// the index with the generation it had, checked against the node before any use after the wait
// (`MetadataTree.folder(_:)`), and used as the key of the listings in flight, so a listing of a
// removed folder is never found for, nor applied to, a new folder at the same index.

struct FolderRef: Hashable, Sendable, CustomStringConvertible {
    var index: UInt32
    var generation: UInt32

    var description: String { "\(index)#\(generation)" }
}

extension MetadataTree {
    /// The reference of `index` as it stands (any node, attached or not).
    func ref(_ index: UInt32) -> FolderRef {
        FolderRef(index: index, generation: nodes[Int(index)].generation)
    }

    /// The index of `ref` when it still names the same attached folder; nil once it was removed
    /// (and perhaps its index reused).
    func folder(_ ref: FolderRef) -> UInt32? {
        guard let node = node(ref.index), node.attached, node.kind == .folder, node.generation == ref.generation
        else { return nil }
        return ref.index
    }
}
