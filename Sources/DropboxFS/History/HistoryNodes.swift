// The inodes of the history views (docs/SEMANTICS.md, "History"): a number space of their own
// above every tree index (2^32 and up), so the tree never sees them and they never collide with its
// inodes. A node is made the first time a name is looked up or listed in a view and kept, with the
// same number, for the life of the mount (a view's nodes are few: only what someone browsed). The
// Dropbox facts each view shows are kept here too: a file's revisions fetched so far, a folder's
// deleted entries, a deleted file's last revision; views older than `HistoryViews.freshFor` are
// asked for again when they are listed from the start.

import DropboxAPI

/// What one hidden inode is.
enum HistoryNode: Sendable, Equatable {
    /// FOLDER/.dropboxfs-versions: one folder per file of FOLDER.
    case versionsRoot(folder: UInt32)
    /// FOLDER/.dropboxfs-versions/NAME: the revisions of the file at `path`, whose Dropbox id is
    /// `id` ("" for a deleted file: its path's history only).
    case fileVersions(path: String, id: String)
    /// One revision, read-only; `path` is where its file lives (for the log).
    case revision(FileMetadata, path: String)
    /// FOLDER/.dropboxfs-deleted: what was deleted in FOLDER.
    case deletedRoot(folder: UInt32)
    /// A deleted folder inside a deleted view (`root` is the view's inode), by its path_lower.
    case deletedFolder(root: UInt64, pathLower: String)
    /// A deleted file inside a deleted view: reads its last revision (`last`, nil until a lookup
    /// asked Dropbox for it; a listing names the file without asking).
    case deletedFile(path: String, last: FileMetadata?, deletedAt: DropboxTimestamp?)

    var isFolder: Bool {
        switch self {
        case .versionsRoot, .fileVersions, .deletedRoot, .deletedFolder: return true
        case .revision, .deletedFile: return false
        }
    }
}

/// The state of the views. Guarded by HistoryViews.state.
struct HistoryState {
    struct Entry {
        var node: HistoryNode
        /// The inode of the folder holding it: a tree folder for the two roots, a hidden one below.
        var parent: UInt64
        /// When the node was made (seconds since the epoch): the time a view folder shows.
        var made: Int64
    }

    /// A file's revisions fetched so far, newest first: its path's history (path mode, paged),
    /// then, once that ended, those of its id from before a move or rename (id mode, one call).
    struct Revisions {
        var entries: [FileMetadata]
        var hasMore: Bool
        var fetchedAt: Double
        var idModeDone = false
    }

    /// Every deleted entry under a deleted view's folder (one recursive listing), and the folders
    /// among them (those with deleted entries below).
    struct Deleted {
        var entries: [DeletedMetadata]
        var folders: Set<String>
        var fetchedAt: Double
    }

    var nodes: [UInt64: Entry] = [:]
    /// Child inodes by parent inode and name.
    var children: [UInt64: [String: UInt64]] = [:]
    var revisions: [UInt64: Revisions] = [:]
    var deleted: [UInt64: Deleted] = [:]
    var next: UInt64 = HistoryViews.firstInode

    /// The inode of `node` named `name` in `parent`, made when new; a node already there under
    /// that name is replaced by the new facts (a revision listed again, a deleted file deleted
    /// again).
    mutating func inode(_ node: HistoryNode, named name: String, in parent: UInt64, now: Int64) -> UInt64 {
        if let existing = children[parent]?[name], let entry = nodes[existing] {
            if entry.node != node { nodes[existing]?.node = node }
            return existing
        }
        let inode = next
        next += 1
        nodes[inode] = Entry(node: node, parent: parent, made: now)
        children[parent, default: [:]][name] = inode
        return inode
    }
}

extension HistoryNode {
    /// The attributes of the node with inode `inode`: folders 0555, files 0444 sized and dated by
    /// their revision; a view folder is dated by when it was made and never cached by the kernel
    /// (what it lists may change), a revision's attributes never change.
    func attributes(inode: UInt64, made: Int64, ownership: Ownership) -> FileAttributes {
        func file(_ size: UInt64, _ time: Int64, cacheable: Bool) -> FileAttributes {
            FileAttributes(
                inode: inode, generation: 0, kind: .file, permissions: 0o444, linkCount: 1, uid: ownership.uid,
                gid: ownership.gid, size: size, blocks: size / 512 + (size % 512 == 0 ? 0 : 1), blockSize: 4096,
                atime: time, mtime: time, ctime: time, cacheable: cacheable)
        }
        switch self {
        case .revision(let metadata, _):
            return file(metadata.size, metadata.serverModified.secondsSinceEpoch, cacheable: true)
        case .deletedFile(_, let last, let deletedAt):
            guard let last else { return file(0, made, cacheable: false) }
            return file(last.size, (deletedAt ?? last.serverModified).secondsSinceEpoch, cacheable: false)
        case .versionsRoot, .fileVersions, .deletedRoot, .deletedFolder:
            return FileAttributes(
                inode: inode, generation: 0, kind: .folder, permissions: 0o555, linkCount: 1, uid: ownership.uid,
                gid: ownership.gid, size: 0, blocks: 0, blockSize: 4096, atime: made, mtime: made, ctime: made,
                cacheable: false)
        }
    }
}
