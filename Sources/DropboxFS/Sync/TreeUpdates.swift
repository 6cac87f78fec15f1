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
                    let (parent, last) = s.tree.resolveParent(ofPath: pathLower)
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
