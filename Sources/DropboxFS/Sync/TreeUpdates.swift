// Applies pages of Dropbox entries to the tree by `path_lower`, in the order given, with Dropbox's
// delta rules (dropbox-api.md §3): file -> create or replace; folder -> create or keep its
// children; deleted -> remove with its subtree, or ignore when absent. Used for recursive listings
// (whole tree or a subtree) and for change batches from the cursor.

import DropboxAPI

extension Filesystem {
    enum PageKind {
        /// A page of a recursive listing tagged with that listing's epoch.
        case listing(epoch: UInt32)
        /// Changes since a cursor.
        case changes
    }

    /// Applies one page and returns how many entries it held.
    @discardableResult
    func applyPage(_ entries: [Metadata], as kind: PageKind) -> Int {
        var invalidated: [Invalidation] = []
        var memo: ParentMemo?
        state.withLock { s in
            let epoch: UInt32
            switch kind {
            case .listing(let listingEpoch): epoch = listingEpoch
            case .changes: epoch = s.nextEpoch &- 1
            }
            for entry in entries {
                // Check the name first: a name with '/' would otherwise look like a deeper path.
                var name: NodeName?
                if case .deleted = entry {} else {
                    guard let valid = validName(entry, in: &s) else { continue }
                    name = valid
                }
                guard let pathLower = entry.pathLower ?? entry.pathDisplay,
                    let (parent, last) = resolve(pathLower, memo: &memo, in: s.tree)
                else {
                    // The parent is unknown: nothing of it is cached, and a later listing covers it.
                    continue
                }
                if case .deleted = entry {
                    s.tree.remove(parent: parent, fold: FoldKey(alreadyFolded: last), invalidations: &invalidated)
                    continue
                }
                guard let name else { continue }
                let newFoldersComplete: Bool
                if case .changes = kind { newFoldersComplete = s.tree.isComplete(parent) } else { newFoldersComplete = false }
                s.tree.upsert(
                    parent: parent, name: name, metadata: entry, epoch: epoch,
                    newFoldersComplete: newFoldersComplete, invalidations: &invalidated)
            }
            if case .listing = kind {
                s.progress.entriesListed += entries.count
                s.progress.pages += 1
            } else {
                s.progress.deltaBatches += 1
            }
        }
        invalidations.publish(invalidated)
        return entries.count
    }
}

/// The folder that held the previous entry of a page: listings give a folder's children together,
/// so most entries skip the walk from the root.
struct ParentMemo {
    var path: Substring.UTF8View
    var folder: UInt32
    /// The folder's generation: a page may detach it and reuse its index for another entry.
    var generation: UInt64
}

/// The folder holding the last component of `path` ("/a/b/c" -> the node of "/a/b", "c").
func resolve(_ path: String, memo: inout ParentMemo?, in tree: MetadataTree) -> (UInt32, Substring)? {
    let slash = UInt8(ascii: "/")
    guard let lastSlash = path.utf8.lastIndex(of: slash) else { return nil }
    let parentPath = Substring(path)[..<lastSlash].utf8
    let last = Substring(path)[path.utf8.index(after: lastSlash)...]
    if let memo, memo.path.elementsEqual(parentPath), let node = tree.node(memo.folder), node.attached,
        node.generation == memo.generation, node.kind == .folder, !last.isEmpty
    {
        return (memo.folder, last)
    }
    guard let (parent, resolvedLast) = tree.resolveParent(ofPath: path) else { return nil }
    memo = ParentMemo(path: parentPath, folder: parent, generation: tree.nodes[Int(parent)].generation)
    return (parent, resolvedLast)
}
