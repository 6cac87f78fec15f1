// What the filesystem facade asks the tree to answer the kernel: lookups, attributes, symlink
// targets, the kernel's lookup counts, whether a folder is listed enough to serve, pieces of a
// folder's listing (with their cookies, DirectoryCookie below), the Dropbox facts shown as
// extended attributes, what an open pins, and the image files a thumbnail writer fetches. Each is
// one short step under the tree's lock (LiveTree.swift); none waits.
//
// Below it, DirectoryCookie: the readdir offsets these queries hand out and resume from.

import DropboxAPI

extension LiveTree {
    /// Looks `name` up in folder `parent`; a found entry counts one kernel lookup. `listed`: the
    /// folder was just listed for this lookup, so a missing name is missing even if the listing
    /// is not complete (it was taken out, or expired at once).
    func lookup(
        parent: UInt32, name: String, fold: FoldKey, listed: Bool, ownership: Ownership
    ) throws(FilesystemError) -> Filesystem.CachedLookup {
        try bookkeeping { (t: inout State) throws(FilesystemError) -> Filesystem.CachedLookup in
            guard let folder = t.tree.node(parent) else { throw .stale }
            guard folder.kind == .folder else { throw .notADirectory }
            try Self.checkEntry(parent, folder, in: t)
            // No entry can have a longer name (those are hidden, SEMANTICS.md): ENAMETOOLONG, as
            // ext4 answers, without listing the folder. The kernel passes FUSE names of up to 1024.
            guard name.utf8.count <= NodeName.maxBytes else { throw .nameTooLong }
            switch t.tree.lookup(parent: parent, name: name, fold: fold) {
            case .found(let child) where !shows(child, in: folder, t):
                return .notFound
            case .found(let child):
                t.tree.addLookup(child)
                return .found(t.tree.attributes(of: child, ownership: ownership))
            case .absent, .unknown:
                return listed || isListed(parent, in: t) ? .notFound : .needsListing
            }
        }
    }

    /// The attributes of a node the kernel knows.
    func attributes(of index: UInt32, ownership: Ownership) throws(FilesystemError) -> FileAttributes {
        try read { (t: State) throws(FilesystemError) -> FileAttributes in
            guard t.tree.node(index) != nil else { throw .stale }
            return t.tree.attributes(of: index, ownership: ownership)
        }
    }

    /// The kernel released `count` references to the node; returns whether it holds none now.
    func forget(_ index: UInt32, count: UInt64) -> Bool {
        bookkeeping { t in
            t.tree.forget(index, count: count)
            return (t.tree.node(index)?.lookups ?? 0) == 0
        }
    }

    /// The target of a symlink.
    func symlinkTarget(_ index: UInt32) throws(FilesystemError) -> String {
        try read { (t: State) throws(FilesystemError) -> String in
            guard let node = t.tree.node(index) else { throw .stale }
            guard node.kind == .symlink, let target = t.tree.symlinkTarget(index) else { throw .notSupported }
            return target
        }
    }

    /// The Dropbox facts of a node shown as extended attributes, in a stable order.
    func dropboxAttributes(of index: UInt32) throws(FilesystemError) -> [(name: String, value: String)] {
        try read { (t: State) throws(FilesystemError) -> [(name: String, value: String)] in
            guard let node = t.tree.node(index) else { throw .stale }
            var result: [(name: String, value: String)] = []
            if !node.id.isEmpty { result.append(("user.dropbox.id", node.id)) }
            if !node.rev.isEmpty { result.append(("user.dropbox.rev", node.rev)) }
            if let hash = node.contentHash { result.append(("user.dropbox.content_hash", hash.hex)) }
            switch node.access {
            case .full: break
            case .traverseOnly: result.append(("user.dropbox.access", "traverse_only"))
            case .noAccess: result.append(("user.dropbox.access", "no_access"))
            }
            return result
        }
    }

    /// The file an open pins, as it stands now: its path and node. `.notDownloadable` for an
    /// export-only document (opened as an export instead).
    func downloadableFile(_ index: UInt32) throws(FilesystemError) -> (path: String, node: Node) {
        try read { (t: State) throws(FilesystemError) -> (path: String, node: Node) in
            guard let node = t.tree.node(index) else { throw .stale }
            switch node.kind {
            case .folder: throw .isADirectory
            case .symlink: throw .notSupported
            case .file: break
            }
            guard node.isDownloadable else { throw .notDownloadable }
            return (t.tree.path(of: index), node)
        }
    }

    /// An export-only document's path, revision and the source to export it from (its id, or its
    /// path when it has none).
    func exportSource(_ index: UInt32) throws(FilesystemError) -> (path: String, rev: String, source: String) {
        try read { (t: State) throws(FilesystemError) -> (path: String, rev: String, source: String) in
            guard let node = t.tree.node(index) else { throw .stale }
            guard node.kind == .file else { throw node.kind == .folder ? .isADirectory : .notSupported }
            guard !node.isDownloadable else { throw .stale }
            let path = t.tree.path(of: index)
            return (path, node.rev, node.id.isEmpty ? path : node.id)
        }
    }

    /// Records the size of an export of revision `rev`, which stat shows from then on; the
    /// kernel's attributes of the node are invalidated when it differs from what they showed.
    func noteExportedSize(_ index: UInt32, rev: String, size: UInt64) {
        change { t, invalidated in
            guard t.tree.node(index)?.rev == rev else { return }
            if t.tree.noteExportedSize(index, rev: rev, size: size) { invalidated.append(.inode(UInt64(index))) }
        }
    }

    /// Whether a folder can be served at once (`isListed`). Throws for a node that is gone or no
    /// folder.
    func isReady(_ index: UInt32, acceptingExpired: Bool) throws(FilesystemError) -> Bool {
        try read { (t: State) throws(FilesystemError) -> Bool in
            guard let node = t.tree.node(index) else { throw .stale }
            guard node.kind == .folder else { throw .notADirectory }
            try Self.checkEntry(index, node, in: t)
            return isListed(index, in: t, acceptingExpired: acceptingExpired)
        }
    }

    /// Whether the listing of the folder last handed to the kernel is the current one; records
    /// the current one as handed out.
    func kernelMayKeepListing(_ index: UInt32) -> Bool {
        bookkeeping { t in
            guard t.tree.node(index) != nil else { return false }
            return t.tree.markServed(index, version: t.tree.version(of: index))
        }
    }

    /// Offers the entries of a listed folder after offset `cookie` (DirectoryCookie) to `add`
    /// until it returns false. With `countingLookups` each accepted child entry counts one kernel
    /// lookup, except files offered lean (`leanFiles`).
    /// `hiding`: a name left out (the shared-folders view's, at the root); true when an entry of
    /// that name was left out.
    @discardableResult
    func readDirectory(
        _ index: UInt32, from cookie: UInt64, countingLookups: Bool, leanFiles: Bool, ownership: Ownership,
        hiding: String? = nil, add: (_ entry: DirectoryEntry, _ nextOffset: UInt64) -> Bool
    ) throws(FilesystemError) -> Bool {
        var hid = false
        try bookkeeping { (t: inout State) throws(FilesystemError) in
            guard let node = t.tree.node(index) else { throw .stale }
            guard node.kind == .folder else { throw .notADirectory }
            try Self.checkEntry(index, node, in: t)
            let children = t.tree.children(of: index)
            var position: Int
            switch DirectoryCookie.resume(after: cookie, in: children, tree: t.tree, folder: index) {
            case .dot(let dot):
                for which in dot..<2 {
                    let target = which == 0 ? index : node.parent
                    let entry = DirectoryEntry(
                        name: which == 0 ? "." : "..", attributes: t.tree.attributes(of: target, ownership: ownership))
                    guard add(entry, UInt64(which + 1)) else { return }
                }
                position = 0
            case .child(let at):
                position = at
            }
            while position < children.count {
                let child = children[position]
                guard shows(child, in: node, t) else {
                    position += 1
                    continue
                }
                if let hiding, t.tree.nodes[Int(child)].name == hiding {
                    hid = true
                    position += 1
                    continue
                }
                let lean = leanFiles && t.tree.nodes[Int(child)].kind != .folder
                let entry = DirectoryEntry(
                    name: t.tree.nodes[Int(child)].name, attributes: t.tree.attributes(of: child, ownership: ownership),
                    lean: lean)
                guard add(entry, DirectoryCookie.after(child: child, position: position)) else { return }
                if countingLookups && !lean { t.tree.addLookup(child) }
                position += 1
            }
        }
        return hid
    }

    /// EACCES for a folder the user may not enter (`no_access`): it is never listed, and nothing
    /// is looked up in it (docs/SEMANTICS.md, "Access levels").
    private static func checkEntry(_ index: UInt32, _ folder: Node, in t: State) throws(FilesystemError) {
        guard folder.access == .noAccess else { return }
        throw .restricted(.noAccessFolder(t.tree.path(of: index)))
    }

    /// Whether `child` of `folder` is shown: a traverse-only folder shows only the folders a
    /// member can pass through (a file in it could not be read), and a `no_access` folder is
    /// left out when the mount hides them (`hideNoAccess`).
    private func shows(_ child: UInt32, in folder: Node, _ t: State) -> Bool {
        let node = t.tree.nodes[Int(child)]
        if folder.access == .traverseOnly && node.kind != .folder { return false }
        if hideNoAccess && node.access == .noAccess { return false }
        return true
    }

    /// The files of a listed folder Dropbox can make thumbnails of, in name order; nil when the
    /// folder is gone.
    func thumbnailSources(folder index: UInt32) -> [ThumbnailSource]? {
        bookkeeping { t -> [ThumbnailSource]? in
            guard let node = t.tree.node(index), node.kind == .folder, node.attached, node.access == .full
            else { return nil }
            let folderPath = t.tree.path(of: index)
            return t.tree.children(of: index).compactMap { child -> ThumbnailSource? in
                let file = t.tree.nodes[Int(child)]
                guard file.kind == .file, file.isDownloadable, ThumbnailNames.isImage(name: file.name, size: file.size)
                else { return nil }
                let rev = file.rev
                guard !rev.isEmpty else { return nil }
                return ThumbnailSource(path: folderPath + "/" + file.name, rev: rev, mtime: file.mtime, size: file.size)
            }
        }
    }
}

// MARK: -
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
