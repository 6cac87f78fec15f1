// The tree's answer to the read-ahead across files (Reader/FolderReadAheadPolicy.swift): which
// files of a folder come next after one just opened, and, when the window reaches the end of a
// folder without subfolders, the first files of the folder a walk enters next (the next folder in
// its parent's listing: walks go in listing order). Each file is pinned to the revision and
// content_hash the tree holds now. A file changed since is a new revision with a new content_hash:
// its read-ahead (if any) was of the old bytes, under the old key, and an open of the new revision
// never finds them (docs/READS.md, "Read-ahead across files").

extension LiveTree {
    /// What to read ahead after an open.
    struct ReadAheadWindow {
        var files: [PinnedFile]
        /// The new `requestedUpTo` in the folder.
        var requestedUpTo: Int
        /// The next folder a walk enters and its first files, when the window reached the end of
        /// a folder without subfolders and `alsoNextFolder` was asked.
        /// (`requestedUpTo`: the positions of that folder covered.)
        var next: (folder: UInt32, files: [PinnedFile], requestedUpTo: Int)?
    }

    /// The folder holding file `index`; nil when it is not a file in the tree.
    func parentFolder(of index: UInt32) -> UInt32? {
        read { t -> UInt32? in
            guard let node = t.tree.node(index), node.kind == .file, node.attached else { return nil }
            return node.parent
        }
    }

    /// The files to read ahead in `folder` after `file` was opened; nil when `file` is no longer in
    /// `folder`. Only downloadable files with a revision and a content_hash are read ahead (a
    /// download is checked against it like any other). `alsoNextFolder`: when the window reaches
    /// the end of `folder`, the next folder's first files too, within what is left of
    /// `filesAhead`.
    func readAheadFiles(
        in folder: UInt32, after file: UInt32, requestedUpTo: Int, alsoNextFolder: Bool, options: FolderReadAheadOptions
    ) -> ReadAheadWindow? {
        bookkeeping { t -> ReadAheadWindow? in
            guard let node = t.tree.node(folder), node.kind == .folder, let opened = t.tree.node(file) else { return nil }
            let children = t.tree.children(of: folder)
            guard let position = Self.position(of: opened.name, in: children, tree: t.tree), children[position] == file
            else { return nil }
            let (files, reached) = Self.window(
                of: children, after: position, requestedUpTo: requestedUpTo, options: options, tree: t.tree)
            var result = ReadAheadWindow(files: files, requestedUpTo: reached)
            let left = options.filesAhead - (children.count - position - 1)
            guard alsoNextFolder, reached >= children.count, left > 0, folder != MetadataTree.rootIndex,
                t.tree.subfolders(of: folder).isEmpty
            else { return result }
            let siblings = t.tree.children(of: node.parent)
            guard let at = Self.position(of: node.name, in: siblings, tree: t.tree), siblings[at] == folder,
                let next = siblings[(at + 1)...].first(where: { t.tree.nodes[Int($0)].kind == .folder })
            else { return result }
            var bounded = options
            bounded.filesAhead = left
            let nextWindow = Self.window(
                of: t.tree.children(of: next), after: -1, requestedUpTo: 0, options: bounded, tree: t.tree)
            result.next = (next, nextWindow.files, nextWindow.requestedUpTo)
            return result
        }
    }

    /// `folder` as a zip of it would hold it (Reader/FolderZips.swift): nil when it is not a
    /// completely listed folder without subfolders (a zip holds every subfolder, and the tree may
    /// not know what one holds).
    func zipPlan(of folder: UInt32) -> FolderZipPlan? {
        bookkeeping { t -> FolderZipPlan? in
            guard folder != MetadataTree.rootIndex, let node = t.tree.node(folder), node.kind == .folder, node.attached,
                t.tree.isComplete(folder), t.tree.subfolders(of: folder).isEmpty
            else { return nil }
            let children = t.tree.children(of: folder)
            var plan = FolderZipPlan(
                folder: folder, path: t.tree.path(of: folder), entries: 1 + children.count, totalBytes: 0, files: [])
            for index in children {
                let child = t.tree.nodes[Int(index)]
                guard child.kind == .file else { continue }
                plan.totalBytes += child.size
                let rev = child.rev
                guard child.isDownloadable, let hash = child.contentHash, !rev.isEmpty else { continue }
                // The folder's path and the child's name: MetadataTree.path(of:) without its walk up.
                let path = plan.path + "/" + child.name
                plan.files.append(
                    (child.name, PinnedFile(inode: UInt64(index), path: path, rev: rev, size: child.size, contentHash: hash)))
            }
            return plan
        }
    }

    /// The position of the child named `name` in `children` (sorted by name bytes:
    /// MetadataTree.children), or where it would be.
    private static func position(of name: String, in children: [UInt32], tree: MetadataTree) -> Int? {
        var low = 0
        var high = children.count
        while low < high {
            let middle = (low + high) / 2
            if precedesUTF8(tree.nodes[Int(children[middle])].name, name) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low < children.count ? low : nil
    }

    /// The files of the policy's window over `children` after `position`, pinned.
    private static func window(
        of children: [UInt32], after position: Int, requestedUpTo: Int, options: FolderReadAheadOptions,
        tree: MetadataTree
    ) -> (files: [PinnedFile], requestedUpTo: Int) {
        let window = FolderReadAheadPolicy.window(
            after: position, requestedUpTo: requestedUpTo, count: children.count, options: options
        ) { at -> UInt64? in
            let child = tree.nodes[Int(children[at])]
            guard child.kind == .file, child.isDownloadable, child.contentHash != nil, child.size > 0 else { return nil }
            return child.size
        }
        let files = window.positions.compactMap { at -> PinnedFile? in
            let index = children[at]
            let child = tree.nodes[Int(index)]
            let rev = child.rev
            guard !rev.isEmpty else { return nil }
            return PinnedFile(
                inode: UInt64(index), path: tree.path(of: index), rev: rev, size: child.size, contentHash: child.contentHash)
        }
        return (files, window.requestedUpTo)
    }
}
