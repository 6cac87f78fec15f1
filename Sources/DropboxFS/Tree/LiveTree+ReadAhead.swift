// The tree's answer to the read-ahead across files (Reader/FolderReadAheadPolicy.swift): which
// files of a folder come next after one just opened, pinned to the revision and content_hash the
// tree holds now. A file changed since is a new revision with a new content_hash: its read-ahead
// (if any) was of the old bytes, under the old key, and an open of the new revision never finds
// them (docs/READS.md, "Read-ahead across files").

extension LiveTree {
    /// The folder holding file `index`; nil when it is not a file in the tree.
    func parentFolder(of index: UInt32) -> UInt32? {
        read { t -> UInt32? in
            guard let node = t.tree.node(index), node.kind == .file, node.attached else { return nil }
            return node.parent
        }
    }

    /// The files to read ahead in `folder` after `file` was opened, and the new `requestedUpTo`;
    /// nil when `file` is no longer in `folder`. Only downloadable files with a revision and a
    /// content_hash are read ahead (a download is checked against it like any other).
    func readAheadFiles(
        in folder: UInt32, after file: UInt32, requestedUpTo: Int, options: FolderReadAheadOptions
    ) -> (files: [PinnedFile], requestedUpTo: Int)? {
        bookkeeping { t -> (files: [PinnedFile], requestedUpTo: Int)? in
            guard let node = t.tree.node(folder), node.kind == .folder, let opened = t.tree.node(file) else { return nil }
            let children = t.tree.children(of: folder)
            // Children are sorted by name bytes (MetadataTree.children): find the opened one by name.
            var low = 0
            var high = children.count
            while low < high {
                let middle = (low + high) / 2
                if precedesUTF8(t.tree.nodes[Int(children[middle])].name, opened.name) {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            guard low < children.count, children[low] == file else { return nil }
            let window = FolderReadAheadPolicy.window(
                after: low, requestedUpTo: requestedUpTo, count: children.count, options: options
            ) { position -> UInt64? in
                let child = t.tree.nodes[Int(children[position])]
                guard child.kind == .file, child.isDownloadable, child.contentHash != nil, child.size > 0 else { return nil }
                return child.size
            }
            let files = window.positions.compactMap { position -> PinnedFile? in
                let index = children[position]
                let child = t.tree.nodes[Int(index)]
                let rev = child.rev
                guard !rev.isEmpty else { return nil }
                return PinnedFile(
                    inode: UInt64(index), path: t.tree.path(of: index), rev: rev, size: child.size,
                    contentHash: child.contentHash)
            }
            return (files, window.requestedUpTo)
        }
    }
}
