// The history views (docs/SEMANTICS.md, "History"): a file's earlier versions and what was deleted
// in a folder, as read-only folders and files under two hidden names in every folder
// (HistoryNames.swift). The core answers every request on these inodes here; the facade only
// routes them (Filesystem+History.swift) and the FUSE adapter knows nothing of them.
//
// What each costs, and when, is the point of the design: nothing until someone enters a hidden
// name (walks, `ls -a` and file managers never do: the names are never listed), then
// - FOLDER/.dropboxfs-versions: nothing (the folder's files, from the tree); a name not in the tree
//   costs one list_revisions (a deleted file's versions are still found);
// - .../NAME: one list_revisions page (100 revisions) per 100 revisions a listing reaches, paged
//   lazily with before_rev; a revision looked up by name without a listing costs one get_metadata;
// - FOLDER/.dropboxfs-deleted: one recursive include_deleted listing of FOLDER (every deleted entry
//   below it, so deleted folders can be browsed), kept `freshFor` seconds; looking up a deleted
//   file costs one list_revisions (its last revision, its deletion time).
// Contents are read like any file's (Reader/): pinned to the revision, downloaded by "rev:",
// checked against the content_hash and cached by it.
//
// Locking: `state` guards HistoryState (HistoryNodes.swift); it is held for short steps only,
// never across a request, and never while the tree's lock is taken (the tree is asked first).

import DropboxAPI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

final class HistoryViews: Sendable {
    /// The first inode of the views: above every tree index (those are UInt32).
    static let firstInode: UInt64 = 1 << 32
    /// A view's facts are asked for again when it is listed from the start after this long.
    static let freshFor: Double = 30
    /// Revisions asked for per list_revisions call (Dropbox's maximum).
    static let pageSize = ListRevisionsArg.maxLimit

    /// Below the shared-folders view's inodes (SharedFolders/), which start at 2^48.
    static func owns(_ inode: UInt64) -> Bool { inode >= firstInode && inode < SharedFolders.topInode }

    let client: any DropboxClient
    let tree: LiveTree
    let sync: SyncEngine
    let ownership: Ownership
    let monotonicNow: @Sendable () -> Double
    private let state = Mutex(HistoryState())

    init(
        client: any DropboxClient, tree: LiveTree, sync: SyncEngine, ownership: Ownership,
        monotonicNow: @escaping @Sendable () -> Double
    ) {
        self.client = client
        self.tree = tree
        self.sync = sync
        self.ownership = ownership
        self.monotonicNow = monotonicNow
    }

    private static func wallClock() -> Int64 { Int64(time(nil)) }

    // MARK: Nodes

    private func entry(_ inode: UInt64) throws(FilesystemError) -> HistoryState.Entry {
        guard let entry = state.withLock({ $0.nodes[inode] }) else { throw .stale }
        return entry
    }

    private func make(_ node: HistoryNode, named name: String, in parent: UInt64) -> FileAttributes {
        let (inode, made) = state.withLock { s -> (UInt64, Int64) in
            let inode = s.inode(node, named: name, in: parent, now: Self.wallClock())
            return (inode, s.nodes[inode]?.made ?? 0)
        }
        return node.attributes(inode: inode, made: made, ownership: ownership)
    }

    func attributes(of inode: UInt64) throws(FilesystemError) -> FileAttributes {
        let entry = try entry(inode)
        return entry.node.attributes(inode: inode, made: entry.made, ownership: ownership)
    }

    /// The attributes of `.dropboxfs-versions` or `.dropboxfs-deleted` in tree folder `folder`:
    /// no request.
    func root(named name: String, in folder: UInt32) throws(FilesystemError) -> FileAttributes {
        _ = try tree.historyFolderPath(folder)
        let node: HistoryNode = name == HistoryNames.versions ? .versionsRoot(folder: folder) : .deletedRoot(folder: folder)
        return make(node, named: name, in: UInt64(folder))
    }

    // MARK: Lookup

    /// Looks `name` up in the view folder `parent`: now when the view's facts answer it, later when
    /// Dropbox must be asked.
    func lookup(parent: UInt64, name: String) -> Answer<FileAttributes> {
        .deciding { () throws(FilesystemError) -> Answer<FileAttributes> in
            let entry = try entry(parent)
            guard entry.node.isFolder else { throw .notADirectory }
            if let found = try lookupNow(parent, entry.node, name) { return .now(.success(found)) }
            return .later { [self] () async throws(FilesystemError) -> FileAttributes in
                try await lookupLater(parent, entry.node, name)
            }
        }
    }

    /// The answer from what is known, nil when Dropbox must be asked.
    private func lookupNow(_ parent: UInt64, _ node: HistoryNode, _ name: String) throws(FilesystemError) -> FileAttributes? {
        switch node {
        case .versionsRoot(let folder):
            switch tree.historyName(folder: folder, name: name) {
            case .file(let path, let id): return make(.fileVersions(path: path, id: id), named: name, in: parent)
            case .other: throw .notFound
            case .absent, .unknown: return nil
            }
        case .fileVersions(let path, _):
            guard let rev = HistoryNames.rev(inRevisionName: name) else { throw .notFound }
            let known = state.withLock { $0.revisions[parent]?.entries.first { $0.rev == rev } }
            guard let known else { return nil }
            guard Self.name(of: known, path: path) == name else { throw .notFound }
            return make(.revision(known, path: path), named: name, in: parent)
        case .deletedRoot, .deletedFolder:
            let known = state.withLock { s -> (HistoryState.Deleted, HistoryNode?)? in
                guard let root = Self.deletedRoot(parent, s), let deleted = s.deleted[root],
                    monotonicNow() - deleted.fetchedAt < Self.freshFor
                else { return nil }
                return (deleted, s.children[parent]?[name].flatMap { s.nodes[$0]?.node })
            }
            guard let (deleted, existing) = known else { return nil }
            guard let found = Self.deletedChild(named: name, of: node, in: deleted, scope: try deletedScope(node)) else {
                throw .notFound
            }
            if deleted.folders.contains(found.pathLower ?? "") {
                return make(.deletedFolder(root: try Self.deletedRootInode(parent, node), pathLower: found.pathLower ?? ""), named: name, in: parent)
            }
            if case .deletedFile(_, .some, _)? = existing, let inode = state.withLock({ $0.children[parent]?[name] }) {
                return try attributes(of: inode)
            }
            return nil
        case .revision, .deletedFile:
            throw .notADirectory
        }
    }

    private func lookupLater(_ parent: UInt64, _ node: HistoryNode, _ name: String) async throws(FilesystemError) -> FileAttributes {
        switch node {
        case .versionsRoot(let folder):
            if tree.historyName(folder: folder, name: name) == .unknown {
                try await sync.ensureListed(folder, waitForFill: false)
            }
            switch tree.historyName(folder: folder, name: name) {
            case .file(let path, let id): return make(.fileVersions(path: path, id: id), named: name, in: parent)
            case .other: throw .notFound
            case .absent, .unknown: break
            }
            // Not a live file: a deleted one still has its versions.
            let path = try tree.historyFolderPath(folder) + "/" + name
            let page = try await listRevisions(ListRevisionsArg(path: path, limit: 1))
            guard let newest = page.entries.first else { throw .notFound }
            return make(.fileVersions(path: newest.pathDisplay ?? path, id: ""), named: name, in: parent)
        case .fileVersions(let path, let id):
            guard let rev = HistoryNames.rev(inRevisionName: name) else { throw .notFound }
            let metadata: Metadata
            do throws(DropboxError) {
                metadata = try await client.getMetadata(path: "rev:" + rev)
            } catch {
                throw FilesystemError.history(error)
            }
            guard case .file(let file) = metadata, Self.samePath(file.pathLower, path) || (!id.isEmpty && file.id == id),
                Self.name(of: file, path: path) == name
            else { throw .notFound }
            return make(.revision(file, path: path), named: name, in: parent)
        case .deletedRoot, .deletedFolder:
            let root = try Self.deletedRootInode(parent, node)
            let deleted = try await deletedEntries(root: root, refresh: false)
            guard let found = Self.deletedChild(named: name, of: node, in: deleted, scope: try deletedScope(node)) else {
                throw .notFound
            }
            let pathLower = found.pathLower ?? ""
            if deleted.folders.contains(pathLower) {
                return make(.deletedFolder(root: root, pathLower: pathLower), named: name, in: parent)
            }
            let path = found.pathDisplay ?? pathLower
            let page = try await listRevisions(ListRevisionsArg(path: path, limit: 1))
            guard let last = page.entries.first else { throw .notFound }
            return make(.deletedFile(path: path, last: last, deletedAt: page.serverDeleted), named: name, in: parent)
        case .revision, .deletedFile:
            throw .notADirectory
        }
    }

    // MARK: Listing

    /// The entries of view folder `inode` from position `position` on ("." is 0, ".." is 1, its
    /// children follow), and whether more may follow them (revisions not fetched yet: the caller
    /// asks again from the position after the last). Asks Dropbox only for what is not known yet,
    /// or, listed from the start, for what is older than `freshFor`.
    func entries(of inode: UInt64, from position: UInt64) async throws(FilesystemError) -> (entries: [DirectoryEntry], more: Bool) {
        let entry = try entry(inode)
        guard entry.node.isFolder else { throw .notADirectory }
        var out: [DirectoryEntry] = []
        if position == 0 { out.append(DirectoryEntry(name: ".", attributes: try attributes(of: inode))) }
        if position <= 1 { out.append(DirectoryEntry(name: "..", attributes: try parentAttributes(entry.parent))) }
        let first = Int(max(position, 2) - 2)
        let refresh = position == 0
        switch entry.node {
        case .versionsRoot(let folder):
            var names = tree.historyFileNames(folder: folder)
            if names == nil {
                try await sync.ensureListed(folder, waitForFill: false)
                names = tree.historyFileNames(folder: folder)
            }
            let folderPath = try tree.historyFolderPath(folder)
            for (name, id) in (names ?? []).dropFirst(first) {
                out.append(
                    DirectoryEntry(
                        name: name, attributes: make(.fileVersions(path: folderPath + "/" + name, id: id), named: name, in: inode)))
            }
            return (out, false)
        case .fileVersions(let path, let id):
            let known = try await revisions(of: inode, path: path, id: id, reaching: first, refresh: refresh)
            for file in known.entries.dropFirst(first) {
                let name = Self.name(of: file, path: path)
                out.append(DirectoryEntry(name: name, attributes: make(.revision(file, path: path), named: name, in: inode)))
            }
            let pending = known.hasMore || (!known.idModeDone && !id.isEmpty)
            return (out, pending && known.entries.count > first)
        case .deletedRoot, .deletedFolder:
            let root = try Self.deletedRootInode(inode, entry.node)
            let deleted = try await deletedEntries(root: root, refresh: refresh && inode == root)
            let scope = try deletedScope(entry.node)
            let children = deleted.entries.filter { Self.isChild($0.pathLower ?? "", of: scope) }
            for child in children.dropFirst(first) {
                let pathLower = child.pathLower ?? ""
                if deleted.folders.contains(pathLower) {
                    out.append(
                        DirectoryEntry(
                            name: child.name,
                            attributes: make(.deletedFolder(root: root, pathLower: pathLower), named: child.name, in: inode)))
                    continue
                }
                // Named without asking Dropbox: a lean entry (name and type), looked up on stat.
                let existing = state.withLock { s in s.children[inode]?[child.name] }
                let attributes: FileAttributes
                if let existing, let known = try? self.attributes(of: existing) {
                    attributes = known
                } else {
                    attributes = make(.deletedFile(path: child.pathDisplay ?? pathLower, last: nil, deletedAt: nil), named: child.name, in: inode)
                }
                out.append(DirectoryEntry(name: child.name, attributes: attributes, lean: true))
            }
            return (out, false)
        case .revision, .deletedFile:
            throw .notADirectory
        }
    }

    private func parentAttributes(_ parent: UInt64) throws(FilesystemError) -> FileAttributes {
        if Self.owns(parent) { return try attributes(of: parent) }
        guard parent > 0, parent <= UInt64(UInt32.max) else { throw .stale }
        return try tree.attributes(of: UInt32(parent), ownership: ownership)
    }

    /// The Dropbox facts of a revision or deleted file, as extended attributes like a file's
    /// (user.dropbox.id, .rev, .content_hash, and .modified_by when Dropbox says who stored it);
    /// none for a view folder.
    func extendedAttributes(of inode: UInt64) throws(FilesystemError) -> [(name: String, value: String)] {
        let file: FileMetadata?
        switch try entry(inode).node {
        case .revision(let revision, _): file = revision
        case .deletedFile(_, let last, _): file = last
        case .versionsRoot, .fileVersions, .deletedRoot, .deletedFolder: file = nil
        }
        guard let file else { return [] }
        var result: [(name: String, value: String)] = [("user.dropbox.id", file.id), ("user.dropbox.rev", file.rev)]
        if let hash = file.contentHash { result.append(("user.dropbox.content_hash", hash.hex)) }
        if let who = file.modifiedBy { result.append(("user.dropbox.modified_by", who)) }
        return result
    }

    // MARK: Opening

    /// The revision an open of a view file pins.
    func pinnedFile(_ inode: UInt64) throws(FilesystemError) -> PinnedFile {
        let entry = try entry(inode)
        let file: FileMetadata
        let path: String
        switch entry.node {
        case .revision(let revision, let at): (file, path) = (revision, at)
        case .deletedFile(let at, let last?, _): (file, path) = (last, at)
        case .deletedFile: throw .stale  // never looked up: the kernel has no inode of it
        case .versionsRoot, .fileVersions, .deletedRoot, .deletedFolder: throw .isADirectory
        }
        guard file.isDownloadable else { throw .notDownloadable }
        return PinnedFile(inode: inode, path: path, rev: file.rev, size: file.size, contentHash: file.contentHash)
    }

    // MARK: Asking Dropbox

    private func listRevisions(_ arg: ListRevisionsArg) async throws(FilesystemError) -> ListRevisionsResult {
        do throws(DropboxError) {
            return try await client.listRevisions(arg)
        } catch {
            throw FilesystemError.history(error)
        }
    }

    /// The revisions of the file at `path` (id `id`) known for view `inode`, fetched until more
    /// than `reaching` are known or there are no more: the path's history a page at a time, then
    /// once, for a live file, one id-mode call for its revisions from before a move or rename
    /// (id mode cannot page: at most 100, docs/SEMANTICS.md "History").
    private func revisions(
        of inode: UInt64, path: String, id: String, reaching: Int, refresh: Bool
    ) async throws(FilesystemError) -> HistoryState.Revisions {
        let now = monotonicNow()
        var known = state.withLock { $0.revisions[inode] }
        if let cached = known, refresh, now - cached.fetchedAt >= Self.freshFor { known = nil }
        while true {
            var next = known ?? HistoryState.Revisions(entries: [], hasMore: true, fetchedAt: now)
            if next.entries.count > reaching || (!next.hasMore && (next.idModeDone || id.isEmpty)) { return next }
            if next.hasMore {
                let page = try await listRevisions(
                    ListRevisionsArg(path: path, limit: Self.pageSize, beforeRev: next.entries.last?.rev))
                next.entries += page.entries
                next.hasMore = page.hasMore && !page.entries.isEmpty
            } else {
                let byId: [FileMetadata]
                do throws(FilesystemError) {
                    byId = try await listRevisions(ListRevisionsArg(path: id, mode: .id, limit: Self.pageSize)).entries
                } catch .notFound {
                    byId = []  // the id is gone: the path's history is all there is
                }
                let seen = Set(next.entries.map(\.rev))
                let oldest = next.entries.last?.serverModified
                // Only what lies beyond the path's history: the revisions from before the move.
                next.entries += byId.filter { file in
                    guard !seen.contains(file.rev) else { return false }
                    guard let oldest else { return true }
                    return file.serverModified <= oldest
                }.sorted { ($0.serverModified, $0.rev) > ($1.serverModified, $1.rev) }
                next.idModeDone = true
            }
            let stored = next
            state.withLock { $0.revisions[inode] = stored }
            known = next
        }
    }

    /// Every deleted entry under the folder of deleted view `root`.
    private func deletedEntries(root: UInt64, refresh: Bool) async throws(FilesystemError) -> HistoryState.Deleted {
        let now = monotonicNow()
        if let cached = state.withLock({ $0.deleted[root] }), !(refresh && now - cached.fetchedAt >= Self.freshFor) {
            return cached
        }
        guard case .deletedRoot(let folder) = try entry(root).node else { throw .stale }
        let path = try tree.historyFolderPath(folder)
        var found: [DeletedMetadata] = []
        do throws(DropboxError) {
            _ = try await client.listFolderAll(ListFolderArg(path: path, recursive: true, includeDeleted: true)) { page in
                for case .deleted(let deleted) in page.entries where deleted.pathLower != nil { found.append(deleted) }
                return true
            }
        } catch {
            throw FilesystemError.history(error)
        }
        found.sort { ($0.pathLower ?? "") < ($1.pathLower ?? "") }
        var folders = Set<String>()
        for entry in found {
            guard var parent = entry.pathLower.map(Self.parentPath) else { continue }
            while !parent.isEmpty, folders.insert(parent).inserted { parent = Self.parentPath(parent) }
        }
        folders.formIntersection(found.compactMap(\.pathLower))
        let deleted = HistoryState.Deleted(entries: found, folders: folders, fetchedAt: now)
        state.withLock { $0.deleted[root] = deleted }
        return deleted
    }

    // MARK: Helpers

    /// The name of a revision of the file at `path` (its extension is the file's).
    static func name(of revision: FileMetadata, path: String) -> String {
        HistoryNames.revisionName(serverModified: revision.serverModified, rev: revision.rev, original: lastComponent(path))
    }

    static func lastComponent(_ path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path[path.index(after: slash)...])
    }

    static func parentPath(_ path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return String(path[..<slash])
    }

    static func samePath(_ pathLower: String?, _ path: String) -> Bool {
        guard let pathLower else { return false }
        return pathLower == path.lowercased() || pathLower == FoldKey(path).folded
    }

    /// Whether `pathLower` lies directly in the folder whose depth and prefix `scope` gives.
    static func isChild(_ pathLower: String, of scope: (prefix: String?, depth: Int)) -> Bool {
        let depth = pathLower.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: "/") ? 1 : 0) }
        guard depth == scope.depth + 1 else { return false }
        guard let prefix = scope.prefix else { return true }
        return pathLower.hasPrefix(prefix + "/")
    }

    /// The folder a deleted view folder shows: its path_lower prefix (nil for a view's root: every
    /// entry of its listing lies below it) and its depth in slashes.
    private func deletedScope(_ node: HistoryNode) throws(FilesystemError) -> (prefix: String?, depth: Int) {
        switch node {
        case .deletedRoot(let folder):
            let path = try tree.historyFolderPath(folder)
            return (nil, path.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: "/") ? 1 : 0) })
        case .deletedFolder(_, let pathLower):
            return (pathLower, pathLower.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: "/") ? 1 : 0) })
        default:
            throw .notADirectory
        }
    }

    static func deletedChild(
        named name: String, of node: HistoryNode, in deleted: HistoryState.Deleted, scope: (prefix: String?, depth: Int)
    ) -> DeletedMetadata? {
        deleted.entries.first { $0.name == name && isChild($0.pathLower ?? "", of: scope) }
    }

    private static func deletedRoot(_ inode: UInt64, _ s: HistoryState) -> UInt64? {
        switch s.nodes[inode]?.node {
        case .deletedRoot?: return inode
        case .deletedFolder(let root, _)?: return root
        default: return nil
        }
    }

    private static func deletedRootInode(_ inode: UInt64, _ node: HistoryNode) throws(FilesystemError) -> UInt64 {
        switch node {
        case .deletedRoot: return inode
        case .deletedFolder(let root, _): return root
        default: throw .notADirectory
        }
    }
}
