// One record per Dropbox entry, stored in the MetadataTree's array and addressed by its index, which
// is also the inode number the kernel sees. A struct in an array (no class per entry) keeps a
// million entries compact (NOTES-swift-fuse.md, memory); folder-only state lives in FolderState.

import DropboxAPI

public enum NodeKind: UInt8, Sendable {
    case file, folder, symlink
}

/// What a folder knows about its children.
struct FolderState {
    /// Children by folded name (Dropbox's case-insensitive, NFC key) -> node index.
    var children: [FoldKey: UInt32] = [:]
    /// True once every child is known: a missing name is then answered without a request.
    var complete = false
    /// When the folder's listing completed (monotonic seconds), for expiry without a watcher.
    var listedAt: Double = 0
    /// Bumped whenever the set of children (or a child's name) changes.
    var version: UInt32 = 0
    /// The `version` of the last listing handed to the kernel: when it differs, the kernel's
    /// cached listing of this folder may be stale.
    var servedVersion: UInt32 = 0
    /// Children sorted by name bytes, for `version` (cached: sorting a big folder on every
    /// opendir would hold the tree lock for long).
    var sorted: (version: UInt32, children: [UInt32])?
}

struct Node {
    /// Index of the parent folder (the root is its own parent).
    var parent: UInt32
    /// The entry's own `name`, exactly as Dropbox sent it (validated by NodeName).
    var name: String
    var kind: NodeKind
    /// False once the entry left the tree; the record stays until the kernel forgets it.
    var attached = true
    var isDownloadable = true
    var readOnly = false
    var size: UInt64 = 0
    /// client_modified (files) or the folder time, seconds since the epoch.
    var mtime: Int64 = 0
    /// server_modified (files) or the folder time.
    var ctime: Int64 = 0
    /// Dropbox `id` ("id:...") and `rev`; empty for the root and for folders' rev.
    var id: String = ""
    var rev: String = ""
    var contentHash: ContentHash?
    /// Distinguishes successive users of a reused index (FUSE's generation number).
    var generation: UInt64 = 0
    /// The fill epoch that last saw this entry; a completed full listing removes older ones.
    var seenEpoch: UInt32 = 0
    /// Kernel lookup count: how many LOOKUP/READDIRPLUS replies the kernel still holds.
    var lookups: UInt64 = 0
    var folder: FolderState?

    init(parent: UInt32, name: String, kind: NodeKind) {
        self.parent = parent
        self.name = name
        self.kind = kind
        if kind == .folder { folder = FolderState() }
    }
}
