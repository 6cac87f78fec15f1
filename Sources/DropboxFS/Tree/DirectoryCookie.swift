// The offsets handed to the kernel with each folder entry: "." is followed by 1, ".." by 2, and
// the child at sorted position i by (child inode << 32) | (i + 3). Resuming after a child finds it
// again by position or, when the folder changed in between, by its name, so a listing read while
// the folder changes neither repeats nor skips an entry that did not change
// (LiveTree+Queries.swift serves the pieces). Pure functions of the tree they are given; the
// caller holds the tree's lock.

/// The offsets handed to the kernel with each folder entry (see the file comment).
enum DirectoryCookie {
    enum Resume: Equatable {
        /// Continue with "." (0) or ".." (1).
        case dot(Int)
        /// Continue with the child at this sorted position.
        case child(Int)
    }

    static func after(child: UInt32, position: Int) -> UInt64 {
        (UInt64(child & 0x7fff_ffff) << 32) | UInt64(position + 3)
    }

    /// Where a listing continues after the entry whose cookie is `cookie`.
    static func resume(after cookie: UInt64, in children: [UInt32], tree: MetadataTree, folder: UInt32) -> Resume {
        let low = cookie & 0xffff_ffff
        if low < 2 { return .dot(Int(low)) }
        if low == 2 { return .child(0) }
        let last = Int(min(low - 3, UInt64(children.count)))
        let child = UInt32(truncatingIfNeeded: cookie >> 32)
        // The common case: the folder did not change since the previous piece.
        if last < children.count && children[last] & 0x7fff_ffff == child { return .child(last + 1) }
        // The folder changed: continue after the entry's name. A removed entry the kernel still
        // holds keeps its name; one already released is assumed to be the one removed, so the
        // entry now at its position is the next one.
        guard child > MetadataTree.rootIndex, Int(child) < tree.nodes.count else { return .child(last) }
        let node = tree.nodes[Int(child)]
        guard node.parent == folder, !node.name.isEmpty else { return .child(last) }
        return .child(firstPosition(after: node.name, in: children, tree: tree))
    }

    /// The position of the first child whose name sorts after `name` (byte order).
    static func firstPosition(after name: String, in children: [UInt32], tree: MetadataTree) -> Int {
        var low = 0
        var high = children.count
        while low < high {
            let middle = (low + high) / 2
            if precedesUTF8(name, tree.nodes[Int(children[middle])].name) {
                high = middle
            } else {
                low = middle + 1
            }
        }
        return low
    }
}
