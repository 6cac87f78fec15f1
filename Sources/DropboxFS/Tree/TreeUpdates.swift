// Applies pages of Dropbox entries to the tree by `path_lower`, in the order given, with Dropbox's
// rules for applying list_folder results (docs/SEMANTICS.md, "Listing order"), whatever order,
// page size, repetition or folding the server uses:
// - a file: stored at its path; missing parent folders are made from the path (provisional until
//   their own entry arrives); whatever else is at the path is replaced, with its subtree;
// - a folder: stored (a provisional one is confirmed), its children kept; a file there is replaced;
// - deleted: whatever is at the path is removed with its subtree; an unknown path is ignored;
// - an entry whose name the kernel cannot carry is hidden with everything below it.
// Entries are keyed by the components of their `path_lower` exactly as Dropbox sent them, never by a
// folding of ours. Used for recursive listings (whole tree or a subtree) and for change batches
// from the cursor, and for a folder's own listing (`replaceChildren`). The sync engine calls these
// inside `LiveTree.change`, with LiveTree's lock held (LiveTree.swift).

import DropboxAPI
import Log

/// How a page of entries came: it decides whether missing parent folders may be made.
enum PageKind {
    /// A page of a recursive listing tagged with that listing's epoch.
    case listing(epoch: UInt32)
    /// Changes since a cursor.
    case changes
}

extension LiveTree.State {
    /// Applies entries in order. What a change batch makes or updates carries `changeEpoch`, the
    /// newest recursive listing's epoch (SyncEngine.State.changeEpoch).
    mutating func apply(_ entries: [Metadata], as kind: PageKind, changeEpoch: UInt32, invalidations: inout [Invalidation]) {
        var memo: ParentMemo?
        let epoch: UInt32
        switch kind {
        case .listing(let listingEpoch): epoch = listingEpoch
        case .changes: epoch = changeEpoch
        }
        for entry in entries {
            apply(entry, as: kind, epoch: epoch, memo: &memo, invalidations: &invalidations)
        }
    }

    private mutating func apply(
        _ entry: Metadata, as kind: PageKind, epoch: UInt32, memo: inout ParentMemo?, invalidations: inout [Invalidation]
    ) {
        if case .deleted = entry {
            if !hiddenPaths.isEmpty, let lower = entry.pathLower { forgetHidden(lower) }
            // Only what exists can be removed: never make folders for a deletion.
            guard let path = EntryPath(entry), let parent = tree.folder(atKeyPath: path.parent) else { return }
            if case .listing(let listingEpoch) = kind, tree.snapshot(of: parent) > listingEpoch { return }
            tree.remove(parent: parent, key: path.key, invalidations: &invalidations)
            return
        }
        // Check the name first: a name with '/' would otherwise look like a deeper path.
        guard let name = validName(entry) else {
            if let path = EntryPath(entry) { hide(path, invalidations: &invalidations) }
            return
        }
        guard let path = EntryPath(entry) else { return }
        guard let parent = parentFolder(of: path, as: kind, epoch: epoch, memo: &memo, invalidations: &invalidations)
        else { return }
        if case .listing = kind, tree.snapshot(of: parent) > epoch {
            // A newer listing of the folder was applied: this older snapshot's entry does not
            // land in it (docs/SEMANTICS.md, "Listings in flight"). A subfolder it still holds was
            // seen, so this listing's completion may complete that subfolder.
            if case .folder = entry, case .found(let existing) = tree.lookup(parent: parent, key: path.key),
                tree.nodes[Int(existing)].kind == .folder
            {
                tree.markSeen(existing, epoch: epoch)
            }
            return
        }
        let newFoldersComplete: Bool
        if case .changes = kind { newFoldersComplete = tree.isComplete(parent) } else { newFoldersComplete = false }
        tree.upsert(
            parent: parent, key: path.key, name: name, metadata: entry, epoch: epoch,
            newFoldersComplete: newFoldersComplete, invalidations: &invalidations)
    }

    /// The folder that holds `path`'s last component, made (provisional) where missing or where a
    /// file stands in the way, as Dropbox's rules say. A change whose nearest known folder is not
    /// completely listed is skipped instead: nothing of it is cached, and the listing of that folder
    /// will bring it. Nothing is made inside a hidden entry.
    private mutating func parentFolder(
        of path: EntryPath, as kind: PageKind, epoch: UInt32, memo: inout ParentMemo?, invalidations: inout [Invalidation]
    ) -> UInt32? {
        if let memo, sameUTF8(memo.path, path.parent), let node = tree.node(memo.folder), node.attached,
            node.generation == memo.generation, node.kind == .folder
        {
            return memo.folder
        }
        var current = MetadataTree.rootIndex
        let components = path.parentComponents
        for (position, component) in components.enumerated() {
            let key = FoldKey(alreadyFolded: component)
            if case .found(let next) = tree.lookup(parent: current, key: key), tree.nodes[Int(next)].kind == .folder {
                // A listing that lists an entry inside a folder has seen the folder, whether or not
                // its own entry comes: the end of the listing must not remove it (completeSubtree).
                if case .listing = kind { tree.markSeen(next, epoch: epoch) }
                current = next
                continue
            }
            let madeBy: UInt32
            switch kind {
            case .listing(let listingEpoch):
                // Nothing is made in a folder a newer listing was applied to: that listing did not
                // see this folder (it was removed since this older snapshot).
                guard tree.snapshot(of: current) <= listingEpoch else { return nil }
                madeBy = listingEpoch
            case .changes:
                guard tree.isComplete(current) else { return nil }
                madeBy = 0
            }
            if !hiddenPaths.isEmpty {
                for end in position..<components.count
                where hiddenPaths.contains("/" + components.prefix(end + 1).joined(separator: "/")) {
                    return nil
                }
            }
            guard let name = path.displayName(ofParentComponent: position, of: components) else { return nil }
            let complete: Bool
            if case .changes = kind { complete = true } else { complete = false }
            guard
                let made = tree.provisionalFolder(
                    parent: current, key: key, name: name, epoch: epoch, madeBy: madeBy, complete: complete,
                    invalidations: &invalidations)
            else { return nil }
            current = made
        }
        memo = ParentMemo(path: path.parent, folder: current, generation: tree.nodes[Int(current)].generation)
        return current
    }

    /// An entry whose name cannot be shown: whatever stands at its path (folders made from the
    /// paths of its children, which came first) goes, with the made folders it leaves empty.
    private mutating func hide(_ path: EntryPath, invalidations: inout [Invalidation]) {
        guard let parent = tree.folder(atKeyPath: path.parent) else { return }
        tree.remove(parent: parent, key: path.key, invalidations: &invalidations)
        var current = parent
        while current != MetadataTree.rootIndex, let node = tree.node(current), node.attached, node.provisional,
            !tree.hasChildren(current)
        {
            let up = node.parent
            tree.remove(current, invalidations: &invalidations)
            current = up
        }
    }

    /// Forgets a hidden entry Dropbox deleted, with the hidden entries below it, so the memory of
    /// hidden names holds what exists (a long-running mount beside files with over-long names that
    /// come and go stays level). Paths compare as bytes, as everywhere in the tree.
    private mutating func forgetHidden(_ path: String) {
        guard hiddenPaths.remove(path) != nil else { return }
        let below = Array((path + "/").utf8)
        hiddenPaths = hiddenPaths.filter { !$0.utf8.starts(with: below) }
    }

    /// Makes `folder`'s children exactly `entries` (its own listing, all pages, in any order and
    /// with repeats: the later occurrence of a key wins), marks it complete at `now` and stamps it
    /// with the listing's snapshot sequence `snapshot`. Returns false, changing nothing, when a
    /// newer listing was applied to the folder already (docs/SEMANTICS.md, "Listings in flight").
    /// A child a newer snapshot saw meanwhile (a newer recursive listing's page, a change batch
    /// applied since this listing started: its `seenEpoch` is above `snapshot`) is kept as it is.
    @discardableResult
    mutating func replaceChildren(
        of folder: UInt32, with entries: [Metadata], snapshot: UInt32, at now: Double,
        invalidations: inout [Invalidation]
    ) -> Bool {
        guard tree.node(folder)?.attached == true, tree.snapshot(of: folder) <= snapshot else { return false }
        // A `deleted` entry takes its key out. Keys are distinct, so the survivors can be applied
        // in any order.
        var latest: [FoldKey: (entry: Metadata, name: NodeName)] = [:]
        latest.reserveCapacity(entries.count)
        for entry in entries {
            if case .deleted = entry {
                if let key = EntryPath(entry)?.key { latest[key] = nil }
                continue
            }
            // The name first: one the kernel cannot carry is hidden (and warned about) whatever
            // its path looks like.
            guard let name = validName(entry) else { continue }
            latest[EntryPath(entry)?.key ?? FoldKey(name.string)] = (entry, name)
        }
        var seen = Set<UInt32>()
        seen.reserveCapacity(latest.count)
        seen.formUnion(tree.children(of: folder, seenAfter: snapshot))
        for (key, child) in latest {
            if case .found(let existing) = tree.lookup(parent: folder, key: key), seen.contains(existing) { continue }
            if let index = tree.upsert(parent: folder, key: key, name: child.name, metadata: child.entry, invalidations: &invalidations) {
                seen.insert(index)
            }
        }
        tree.removeChildren(of: folder, notIn: seen, invalidations: &invalidations)
        tree.setComplete(folder, true, at: now)
        tree.stampSnapshot(folder, snapshot)
        return true
    }

    /// Parses an entry's name, logging each name the kernel cannot carry once (after the tree's
    /// lock is released: OffLockLog).
    mutating func validName(_ entry: Metadata) -> NodeName? {
        switch NodeName.parse(entry.name) {
        case .success(let name):
            return name
        case .failure(let why):
            let key = entry.pathLower ?? entry.name
            if hiddenPaths.insert(key).inserted {
                OffLockLog.warning("hiding \(Log.quoted(entry.pathDisplay ?? entry.name)): \(why)")
            }
            return nil
        }
    }

    /// Logs, once each, the folders made from paths that the listing of `epoch` (0: change batches)
    /// never confirmed with an entry of their own (off the lock: OffLockLog); returns how many.
    mutating func reportUnconfirmedFolders(madeBy epoch: UInt32) -> Int {
        let folders = tree.takeUnconfirmedFolders(madeBy: epoch)
        for folder in folders {
            OffLockLog.warning(
                "Dropbox listed entries inside \(Log.quoted(tree.path(of: folder))) but not the folder itself; "
                    + "showing them in a folder made from their paths")
        }
        return folders.count
    }
}

/// Where an entry goes: its `path_lower` (or, when Dropbox sends none, its `path_display` folded
/// our way), split into the parent's path and the last component, Dropbox's key for the entry.
struct EntryPath {
    /// "/a/b" for "/a/b/c"; "" for a top-level entry.
    let parent: String
    let key: FoldKey
    /// The `path_display`, whose components name folders made from the path (Dropbox promises the
    /// right case only for the last component, so such a name is provisional).
    private let display: String?

    init?(_ entry: Metadata) {
        let lower: String
        if let pathLower = entry.pathLower {
            lower = pathLower
        } else if let pathDisplay = entry.pathDisplay {
            lower = pathDisplay.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
                .map { FoldKey(String(Substring($0))).folded }.joined(separator: "/")
        } else {
            return nil
        }
        // Split on the '/' byte: splitting the String would glue a component that starts with a
        // combining mark or joiner onto the '/' before it (one grapheme cluster).
        guard lower.utf8.first == UInt8(ascii: "/"), let slash = lower.utf8.lastIndex(of: UInt8(ascii: "/")) else {
            return nil
        }
        let last = Substring(lower)[lower.utf8.index(after: slash)...]
        guard !last.isEmpty else { return nil }
        parent = String(Substring(lower)[..<slash])
        key = FoldKey(alreadyFolded: last)
        display = entry.pathDisplay
    }

    var parentComponents: [Substring] {
        parent.utf8.split(separator: UInt8(ascii: "/")).map { Substring($0) }
    }

    /// The name for a folder made from parent component `position` (of `components`, the
    /// `parentComponents`): the `path_display` component when the display path has as many
    /// components as the key path, else the key component.
    func displayName(ofParentComponent position: Int, of components: [Substring]) -> NodeName? {
        let display = (self.display ?? "").utf8.split(separator: UInt8(ascii: "/")).map { Substring($0) }
        if display.count == components.count + 1, let name = NodeName(String(display[position])) { return name }
        return NodeName(String(components[position]))
    }
}

/// The folder that held the previous entry of a page: listings give a folder's children together,
/// so most entries skip the walk from the root.
struct ParentMemo {
    /// The `path_lower` of the folder.
    var path: String
    var folder: UInt32
    /// The folder's generation: a page may detach it and reuse its index for another entry.
    var generation: UInt32
}
