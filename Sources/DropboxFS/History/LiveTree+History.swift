// What the history views (HistoryViews.swift) ask the tree: a folder's path, whether a name in a
// folder is a live file, and the names of a listed folder's files. Each is one short step under
// the tree's lock (LiveTree.swift); none counts a kernel lookup, none waits.

extension LiveTree {
    /// What a name in a folder is now, as far as the tree knows.
    enum HistoryName: Equatable {
        /// A live file, at this display path, with its Dropbox id ("" when the tree has none).
        case file(path: String, id: String)
        /// A live folder or symlink.
        case other
        /// No such entry in the listed folder.
        case absent
        /// The folder is not listed.
        case unknown
    }

    /// The display path of folder `index` ("" for the root).
    func historyFolderPath(_ index: UInt32) throws(FilesystemError) -> String {
        try read { (t: State) throws(FilesystemError) -> String in
            guard let node = t.tree.node(index) else { throw .stale }
            guard node.kind == .folder else { throw .notADirectory }
            return t.tree.path(of: index)
        }
    }

    /// What `name` is in folder `folder` now.
    func historyName(folder: UInt32, name: String) -> HistoryName {
        read { t -> HistoryName in
            guard let node = t.tree.node(folder), node.kind == .folder else { return .absent }
            switch t.tree.lookup(parent: folder, name: name, fold: FoldKey(name)) {
            case .found(let child):
                let node = t.tree.nodes[Int(child)]
                return node.kind == .file ? .file(path: t.tree.path(of: child), id: node.id) : .other
            case .absent, .unknown:
                return isListed(folder, in: t, acceptingExpired: true) ? .absent : .unknown
            }
        }
    }

    /// The names and Dropbox ids of the files of a listed folder, in name order; nil when it is not
    /// listed.
    func historyFileNames(folder: UInt32) -> [(name: String, id: String)]? {
        bookkeeping { t -> [(name: String, id: String)]? in
            guard let node = t.tree.node(folder), node.kind == .folder,
                isListed(folder, in: t, acceptingExpired: true)
            else { return nil }
            return t.tree.children(of: folder).compactMap { child -> (name: String, id: String)? in
                let entry = t.tree.nodes[Int(child)]
                return entry.kind == .file ? (entry.name, entry.id) : nil
            }
        }
    }
}
