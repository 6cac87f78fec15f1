// The nodes of the shared-folders view (SharedFolders.swift): a number space of their own, 2^48
// and up, above the tree's indices and the history views' inodes, so neither ever sees them.
// A node is made the first time a listing shows its entry and keeps its number while listings
// show the same thing under the same name: a file changed on Dropbox (a new revision) gets a
// new inode, as in the tree (docs/ARCHITECTURE.md, "A new inode per file revision"). Nodes are
// kept for the life of the mount (a node a listing no longer shows still answers its last facts
// to a kernel that holds it); they grow with what was browsed and changed, not with time.
//
// The names of the shared folders in the view's folder (`SharedFolderNames`): each folder under
// its own name; where two share a name, the one with the lowest shared_folder_id keeps it and
// each other gets " (" + the last 6 digits of its id + ")", so a name never changes while the
// same folders are shared.

import DropboxAPI

/// What one inode of the view is.
enum SharedFolderNode: Sendable, Equatable {
    /// The view's own folder at the top of the mount.
    case top
    /// A folder of a shared folder's namespace: `path` is its display path there ("" for the shared
    /// folder itself), `label` names it for log lines and errors.
    case folder(namespace: String, path: String, access: FolderAccess, label: String)
    /// A file of a namespace, as its folder's listing showed it.
    case file(namespace: String, path: String, FileMetadata)

    var isFolder: Bool {
        if case .file = self { return false }
        return true
    }
}

/// The view's state. Guarded by SharedFolders.state.
struct SharedFolderState {
    struct Entry {
        var node: SharedFolderNode
        /// The folder holding it: the mount's root for the view's folder.
        var parent: UInt64
        /// When the node was made (seconds since the epoch): the time a folder shows.
        var made: Int64
    }

    /// One folder's last listing: its children in name order (byte order), and when it was made
    /// (monotonic seconds).
    struct Listing {
        var children: [(name: String, inode: UInt64)]
        var byName: [String: UInt64]
        var fetchedAt: Double
    }

    /// The count of each folder's listings that changed something: its mtime's nanoseconds, so
    /// the kernel drops a listing it cached before the change (as the tree's stamp does).
    var stamps: [UInt64: UInt32] = [:]

    /// A folder whose listing Dropbox refused (no_permission, a no_access folder): answered from
    /// here, without a request, until the lifetime passed.
    struct Refusal {
        var error: FilesystemError
        var at: Double
    }

    var nodes: [UInt64: Entry] = [:]
    var listings: [UInt64: Listing] = [:]
    var refusals: [UInt64: Refusal] = [:]
    /// A file revision a listing showed -> the namespace it is in, for its downloads
    /// (SharedFolderReads.swift). Revisions name one file across Dropbox.
    var namespaceOfRevision: [String: String] = [:]
    /// Namespaces whose refusal was logged once already.
    var refusalLogged: Set<String> = []
    /// When a `stat` last started a background listing of each folder (SharedFolders.attributes):
    /// at most one per lifetime, so a listing that keeps failing is not asked for at every stat.
    var backgroundListing: [UInt64: Double] = [:]
    var next: UInt64 = SharedFolders.topInode + 1

    init(made: Int64) {
        nodes[SharedFolders.topInode] = Entry(node: .top, parent: 1, made: made)
    }

    /// The inode of `node` named `name` in `parent`: the one it had when the last listing showed
    /// the same node there, else a new one.
    mutating func inode(_ node: SharedFolderNode, named name: String, in parent: UInt64, now: Int64) -> UInt64 {
        if let existing = listings[parent]?.byName[name], nodes[existing]?.node == node { return existing }
        let inode = next
        next += 1
        nodes[inode] = Entry(node: node, parent: parent, made: now)
        return inode
    }

    /// Replaces `folder`'s listing with `children` (name order); returns the names whose meaning
    /// changed (added, removed, or now another inode), for the kernel's caches.
    mutating func replaceListing(
        of folder: UInt64, with children: [(name: String, inode: UInt64)], at now: Double
    ) -> [String] {
        let old = listings[folder]?.byName ?? [:]
        var byName: [String: UInt64] = [:]
        for child in children { byName[child.name] = child.inode }
        listings[folder] = Listing(children: children, byName: byName, fetchedAt: now)
        refusals[folder] = nil
        var changed = children.filter { old[$0.name] != $0.inode }.map(\.name)
        changed += old.keys.filter { byName[$0] == nil }
        if !changed.isEmpty { stamps[folder] = ((stamps[folder] ?? 0) + 1) % 1_000_000_000 }
        return changed
    }
}

enum SharedFolderNames {
    /// The name of each shared folder not added to the account's Dropbox, in the view's folder, by
    /// shared_folder_id (see the file comment). Folders with an empty name are left out.
    static func assign(_ folders: [SharedFolderMetadata]) -> [(name: String, folder: SharedFolderMetadata)] {
        let shown = folders.filter { !$0.isAdded && NodeName($0.name) != nil }
        let ordered = shown.sorted { idOrder($0.sharedFolderId, $1.sharedFolderId) }
        var taken = Set<String>()
        var out: [(name: String, folder: SharedFolderMetadata)] = []
        for folder in ordered {
            var name = folder.name
            if taken.contains(name) { name = folder.name + " (" + String(folder.sharedFolderId.suffix(6)) + ")" }
            // Still taken (a folder already named like the suffixed one): the whole id.
            if taken.contains(name) { name = folder.name + " (" + folder.sharedFolderId + ")" }
            guard !taken.contains(name), NodeName(name) != nil else { continue }
            taken.insert(name)
            out.append((name, folder))
        }
        return out.sorted { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
    }

    /// Ids are decimal numbers: shorter ones first, then by their digits.
    private static func idOrder(_ a: String, _ b: String) -> Bool {
        a.utf8.count != b.utf8.count ? a.utf8.count < b.utf8.count : a < b
    }

    /// The access a folder shared with `accessType` gives: `traverse` only passes through, and
    /// `no_access` does not enter (docs/SEMANTICS.md, "Access levels").
    static func access(_ accessType: String) -> FolderAccess {
        switch accessType {
        case "no_access": return .noAccess
        case "traverse": return .traverseOnly
        default: return .full
        }
    }
}

extension SharedFolderNode {
    /// The attributes of the node with inode `inode`: folders 0555 (000 where the account may not
    /// enter), files 0444 sized and dated by their revision. A folder's attributes and every
    /// node's name are never cached by the kernel (what a listing shows may change with no
    /// invalidation before the lifetime passes); a file's attributes are its revision's, which
    /// never change.
    func attributes(inode: UInt64, made: Int64, stamp: UInt32 = 0, ownership: Ownership) -> FileAttributes {
        switch self {
        case .file(_, _, let file):
            let time = file.serverModified.secondsSinceEpoch
            var a = FileAttributes(
                inode: inode, generation: 0, kind: .file, permissions: 0o444, linkCount: 1, uid: ownership.uid,
                gid: ownership.gid, size: file.size, blocks: file.size / 512 + (file.size % 512 == 0 ? 0 : 1),
                blockSize: 4096, atime: time, mtime: time, ctime: time)
            a.entryCacheable = false
            return a
        case .top, .folder:
            var permissions: UInt32 = 0o555
            if case .folder(_, _, .noAccess, _) = self { permissions = 0 }
            var a = FileAttributes(
                inode: inode, generation: 0, kind: .folder, permissions: permissions, linkCount: 1, uid: ownership.uid,
                gid: ownership.gid, size: 0, blocks: 0, blockSize: 4096, atime: made, mtime: made, ctime: made,
                cacheable: false)
            a.timeNanoseconds = stamp
            a.entryCacheable = false
            return a
        }
    }
}
