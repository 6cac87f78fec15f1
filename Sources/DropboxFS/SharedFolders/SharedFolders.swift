// Folders shared with the account that it has not added to its Dropbox (docs/SEMANTICS.md,
// "Shared folders not added"), shown read-only under one folder at the top of the mount
// (`SharedFoldersOptions.name`, "Shared with me" by default). The core answers every request on
// these inodes here; the facade only routes them (Filesystem+SharedFolders.swift).
//
// Why a view beside the tree, not a subtree of it: the main tree is filled by whole-account
// recursive listings, follows one cursor, is emptied and refilled on a cursor reset, and is
// stored. A subtree of other namespaces inside it would have to be kept out of each of those,
// in every place that removes "what a listing did not see". Here the tree never holds one of
// these nodes, so none of that can touch them, and none of this can touch the tree: the view has
// its own nodes (SharedFolderNodes.swift, inodes 2^48 and up), its own lock, and asks nothing
// of the tree. It is what the history views do for earlier versions (History/).
//
// What it costs, and when:
// - the view's folder: one sharing/list_folders (+ continue pages) when it is listed or looked
//   into and its listing is older than the lifetime (`--dir-cache-time`, polled: Dropbox has
//   no change feed of the list of shared folders). A folder the account added is in its own
//   Dropbox, hence in the tree: it is left out here.
// - each folder inside: one list_folder of that folder (+ continue pages) in the shared folder's
//   namespace (`Dropbox-API-Path-Root: namespace_id`, never mount_folder, which is a write),
//   again once older than the lifetime. No cursor is followed: changes are found by listing again
//   (polling), and the kernel's caches of the names that changed are invalidated then.
// - a file: read like any file (Reader/), pinned to its revision, downloaded by "rev:" through
//   its namespace (SharedFolderReads.swift routes it), checked against its content_hash.
// A namespace the account may not read answers 422 no_permission: EACCES for that folder, one
// log line per namespace, and no request again for it until the lifetime passed.
// Nothing here is stored: after a remount the view is listed afresh. Offline, its requests fail
// fast (ENETUNREACH) like any folder not listed yet.
//
// Locking: `state` guards SharedFolderState (SharedFolderNodes.swift); held for short steps only,
// never across a request, never together with another lock. Listings of one folder in flight are
// shared by its waiters (`listings`, SharedWork), so two identical listings never run at once.

import DropboxAPI
import Log
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What a mount with `--shared-folders` asks of the core.
public struct SharedFoldersOptions: Sendable {
    /// sharing/list_folders, and a client rooted at each shared folder's namespace.
    public var routes: any SharedFolderRoutes
    /// The name of the view's folder at the top of the mount.
    public var name: String
    /// How long a listing (of the shared folders, or of a folder inside one) is trusted, seconds.
    public var lifetime: Double

    public init(routes: any SharedFolderRoutes, name: String = SharedFolders.defaultName, lifetime: Double = 60) {
        self.routes = routes
        self.name = name
        self.lifetime = lifetime
    }
}

public final class SharedFolders: Sendable {
    public static let defaultName = "Shared with me"
    /// The view's folder; its contents follow.
    static let topInode: UInt64 = 1 << 48

    static func owns(_ inode: UInt64) -> Bool { inode >= topInode }

    let routes: any SharedFolderRoutes
    let name: String
    let lifetime: Double
    let connectivity: Connectivity
    let ownership: Ownership
    let invalidations: InvalidationPublisher
    let monotonicNow: @Sendable () -> Double
    /// The mount root's attributes (the view folder's "..").
    let rootAttributes: @Sendable () -> FileAttributes?
    private let state: Mutex<SharedFolderState>
    /// Listings in flight, by folder inode (their own lock: taken alone).
    private let listings = Mutex<[UInt64: SharedWork<Void>]>([:])

    init(
        options: SharedFoldersOptions, connectivity: Connectivity, ownership: Ownership,
        invalidations: InvalidationPublisher, monotonicNow: @escaping @Sendable () -> Double,
        rootAttributes: @escaping @Sendable () -> FileAttributes?
    ) {
        self.rootAttributes = rootAttributes
        routes = options.routes
        name = options.name
        lifetime = options.lifetime
        self.connectivity = connectivity
        self.ownership = ownership
        self.invalidations = invalidations
        self.monotonicNow = monotonicNow
        state = Mutex(SharedFolderState(made: Int64(time(nil))))
    }

    // MARK: Nodes

    private func entry(_ inode: UInt64) throws(FilesystemError) -> SharedFolderState.Entry {
        guard let entry = state.withLock({ $0.nodes[inode] }) else { throw .stale }
        return entry
    }

    /// A folder's attributes; asked (the kernel keeps them for no time) when a program opens
    /// it, so a folder whose listing is older than the lifetime is listed again in the
    /// background: the kernel keeps the folder's listing it cached until the folder's mtime moves
    /// (when opendir is not asked, docs/ARCHITECTURE.md "No folder handles"), and this is the
    /// request that tells it whether to.
    func attributes(of inode: UInt64) throws(FilesystemError) -> FileAttributes {
        let now = monotonicNow()
        let (found, stamp, expired) = state.withLock { s -> (SharedFolderState.Entry?, UInt32, Bool) in
            var expired = s.listings[inode].map { now - $0.fetchedAt >= lifetime } ?? false
            if expired {
                if let last = s.backgroundListing[inode], now - last < lifetime {
                    expired = false
                } else {
                    s.backgroundListing[inode] = now
                }
            }
            return (s.nodes[inode], s.stamps[inode] ?? 0, expired)
        }
        guard let entry = found else { throw .stale }
        if expired && entry.node.isFolder {
            let node = entry.node
            Task(priority: .utility) { [self] in try? await ensureListed(inode, node) }
        }
        return entry.node.attributes(inode: inode, made: entry.made, stamp: stamp, ownership: ownership)
    }

    /// The view's folder, as the mount's root lists it.
    func topEntry() -> DirectoryEntry {
        DirectoryEntry(name: name, attributes: (try? attributes(of: Self.topInode)) ?? fallbackTop())
    }

    private func fallbackTop() -> FileAttributes {
        SharedFolderNode.top.attributes(inode: Self.topInode, made: 0, ownership: ownership)
    }

    // MARK: Lookup

    /// Looks `name` up in view folder `parent`: now when its listing is fresh (or refused), later
    /// once it was listed again.
    func lookup(parent: UInt64, name: String) -> Answer<FileAttributes> {
        .deciding { () throws(FilesystemError) -> Answer<FileAttributes> in
            let entry = try entry(parent)
            guard entry.node.isFolder else { throw .notADirectory }
            if let known = try lookupNow(parent, name) { return .now(.success(known)) }
            return .later { [self] () async throws(FilesystemError) -> FileAttributes in
                try await ensureListed(parent, entry.node)
                guard let found = try lookupNow(parent, name, acceptingExpired: true) else { throw .notFound }
                return found
            }
        }
    }

    /// The answer from the folder's listing, nil when it must be listed first.
    private func lookupNow(_ parent: UInt64, _ name: String, acceptingExpired: Bool = false) throws(FilesystemError)
        -> FileAttributes?
    {
        let now = monotonicNow()
        let found = try state.withLock { s throws(FilesystemError) -> (UInt64?, Bool)? in
            if let refusal = s.refusals[parent], now - refusal.at < lifetime { throw refusal.error }
            guard let listing = s.listings[parent], acceptingExpired || now - listing.fetchedAt < lifetime else {
                return nil
            }
            return (listing.byName[name], true)
        }
        guard let (inode, _) = found else { return nil }
        guard let inode else { throw .notFound }
        return try attributes(of: inode)
    }

    // MARK: Listing

    /// The entries of view folder `inode` from position `position` on ("." is 0, ".." is 1, its
    /// children follow). Listed again from the start when its listing is older than the lifetime;
    /// a later piece is served from the listing the first one came from.
    func entries(of inode: UInt64, from position: UInt64) async throws(FilesystemError) -> [DirectoryEntry] {
        let entry = try entry(inode)
        guard entry.node.isFolder else { throw .notADirectory }
        let fresh = state.withLock { s -> Bool in
            guard let listing = s.listings[inode] else { return false }
            return position > 0 || monotonicNow() - listing.fetchedAt < lifetime
        }
        if !fresh { try await ensureListed(inode, entry.node) }
        let children = state.withLock { s in s.listings[inode]?.children ?? [] }
        var out: [DirectoryEntry] = []
        if position == 0 { out.append(DirectoryEntry(name: ".", attributes: try attributes(of: inode))) }
        if position <= 1 { out.append(DirectoryEntry(name: "..", attributes: try parentAttributes(entry.parent))) }
        for child in children.dropFirst(Int(max(position, 2) - 2)) {
            guard let attributes = try? attributes(of: child.inode) else { continue }
            out.append(DirectoryEntry(name: child.name, attributes: attributes))
        }
        return out
    }

    private func parentAttributes(_ parent: UInt64) throws(FilesystemError) -> FileAttributes {
        if Self.owns(parent) { return try attributes(of: parent) }
        guard let root = rootAttributes() else { throw .stale }
        return root
    }

    /// Lists folder `inode` unless a fresh listing or refusal is known; joins a listing in flight.
    private func ensureListed(_ inode: UInt64, _ node: SharedFolderNode) async throws(FilesystemError) {
        let now = monotonicNow()
        let known = try state.withLock { s throws(FilesystemError) -> Bool in
            if let refusal = s.refusals[inode], now - refusal.at < lifetime { throw refusal.error }
            guard let listing = s.listings[inode] else { return false }
            return now - listing.fetchedAt < lifetime
        }
        if known { return }
        while true {
            let work = listings.withLock { map -> SharedWork<Void> in
                if let running = map[inode], !running.isAbandoned { return running }
                let work = SharedWork<Void> { [self] work in
                    let result = await list(inode, node)
                    listings.withLock { map in
                        if map[inode] === work { map[inode] = nil }
                    }
                    return result
                }
                map[inode] = work
                return work
            }
            if try await work.value() != nil { return }
        }
    }

    /// Lists folder `inode` once and records what it shows (or Dropbox's refusal).
    private func list(_ inode: UInt64, _ node: SharedFolderNode) async -> Result<Void, FilesystemError> {
        let started = monotonicNow()
        let made = Int64(time(nil))
        switch node {
        case .top:
            let folders: [SharedFolderMetadata]
            do throws(DropboxError) {
                guard connectivity.mayTry(.api) else { throw connectivity.offlineError(.api) }
                folders = try await routes.listAllSharedFolders()
            } catch .authentication(.missingScope(let scope)) {
                return .failure(missingPermission(inode, scope: scope, at: started))
            } catch {
                return .failure(FilesystemError(error))
            }
            let named = SharedFolderNames.assign(folders)
            record(inode, at: started) { s in
                named.map { item in
                    let folder = item.folder
                    let child = SharedFolderNode.folder(
                        namespace: folder.sharedFolderId, path: "",
                        access: SharedFolderNames.access(folder.accessType), label: item.name)
                    return (item.name, s.inode(child, named: item.name, in: inode, now: made))
                }
            }
            return .success(())
        case .folder(let namespace, let path, let access, let label):
            if access == .noAccess {
                let refusal = FilesystemError.restricted(.noAccessFolder(name + "/" + label + path))
                state.withLock { $0.refusals[inode] = SharedFolderState.Refusal(error: refusal, at: started) }
                return .failure(refusal)
            }
            var found: [Metadata] = []
            do throws(DropboxError) {
                _ = try await client(namespace).listFolderAll(ListFolderArg(path: path)) { page in
                    found += page.entries
                    return true
                }
            } catch .pathRoot(let tag) where tag == "no_permission" {
                return .failure(refused(inode, namespace: namespace, label: label, at: started))
            } catch {
                return .failure(FilesystemError(error))
            }
            record(inode, at: started) { s in
                var children: [(String, UInt64)] = []
                for entry in found {
                    let child: SharedFolderNode
                    switch entry {
                    case .file(let file):
                        // A traverse-only folder shows only what can be passed through.
                        if access == .traverseOnly { continue }
                        child = .file(namespace: namespace, path: path + "/" + file.name, file)
                        s.namespaceOfRevision[file.rev] = namespace
                    case .folder(let folder):
                        child = .folder(
                            namespace: namespace, path: path + "/" + folder.name, access: FolderAccess(folder),
                            label: label)
                    case .deleted:
                        continue
                    }
                    guard NodeName(entry.name) != nil else { continue }
                    children.append((entry.name, s.inode(child, named: entry.name, in: inode, now: made)))
                }
                return children
            }
            return .success(())
        case .file:
            return .failure(.notADirectory)
        }
    }

    /// Records a folder's new listing, and invalidates the kernel's caches of the names that
    /// changed (and of the folder's listing).
    private func record(
        _ inode: UInt64, at started: Double, _ children: (inout SharedFolderState) -> [(String, UInt64)]
    ) {
        let changed = state.withLock { s -> [String] in
            var listed = children(&s)
            listed.sort { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
            // Two entries of one name (Dropbox never sends them): the first is kept.
            var seen = Set<String>()
            listed = listed.filter { seen.insert($0.0).inserted }
            return s.replaceListing(of: inode, with: listed.map { (name: $0.0, inode: $0.1) }, at: started)
        }
        guard !changed.isEmpty else { return }
        invalidations.publish(changed.map { Invalidation.entry(parent: inode, name: $0) } + [.inode(inode)])
    }

    /// A namespace Dropbox refused (no_permission): EACCES for the folder until the lifetime
    /// passed, and one log line per namespace.
    private func refused(_ inode: UInt64, namespace: String, label: String, at: Double) -> FilesystemError {
        let error = FilesystemError.restricted(.sharedFolderNotReadable(label))
        let first = state.withLock { s -> Bool in
            s.refusals[inode] = SharedFolderState.Refusal(error: error, at: at)
            return s.refusalLogged.insert(namespace).inserted
        }
        if first {
            Log.warning(
                "shared folder \(Log.quoted(label)) (namespace \(namespace)): Dropbox does not let this account read "
                    + "it (no_permission); it answers EACCES")
        }
        return error
    }

    /// The app may not list shared folders (no `sharing.read`): EACCES for the view's folder until
    /// the lifetime passed, and one log line that says how to grant it.
    private func missingPermission(_ inode: UInt64, scope: String, at: Double) -> FilesystemError {
        let error = FilesystemError.restricted(.appPermission(scope))
        let first = state.withLock { s -> Bool in
            s.refusals[inode] = SharedFolderState.Refusal(error: error, at: at)
            return s.refusalLogged.insert("scope:" + scope).inserted
        }
        if first {
            Log.warning(
                "--shared-folders: the Dropbox app lacks the permission \(Log.quoted(scope)), so the folders shared "
                    + "with you cannot be listed (\(Log.quoted(name)) answers EACCES): tick it on the app's Permissions "
                    + "tab, then run `dropboxfs auth` again")
        }
        return error
    }

    /// A client of the account's sign-in rooted at `namespace`, failing fast while offline.
    func client(_ namespace: String) -> any DropboxClient {
        ConnectivityGate(client: routes.rooted(atNamespace: namespace), connectivity: connectivity, blocksWhileOffline: true)
    }

    /// The namespace of a revision a listing showed, for its downloads.
    func namespace(ofRevision rev: String) -> String? {
        state.withLock { $0.namespaceOfRevision[rev] }
    }

    // MARK: Files

    /// The revision an open of a view file pins.
    func pinnedFile(_ inode: UInt64) throws(FilesystemError) -> PinnedFile {
        guard case .file(_, let path, let file) = try entry(inode).node else { throw .isADirectory }
        guard file.isDownloadable else { throw .notDownloadable }
        return PinnedFile(
            inode: inode, path: name + "/" + path, rev: file.rev, size: file.size, contentHash: file.contentHash)
    }

    /// A file's Dropbox facts as extended attributes, like a tree file's; none for a folder.
    func extendedAttributes(of inode: UInt64) throws(FilesystemError) -> [(name: String, value: String)] {
        switch try entry(inode).node {
        case .file(_, _, let file):
            var result: [(name: String, value: String)] = [("user.dropbox.id", file.id), ("user.dropbox.rev", file.rev)]
            if let hash = file.contentHash { result.append(("user.dropbox.content_hash", hash.hex)) }
            return result
        case .folder(let namespace, "", _, _):
            return [("user.dropbox.shared_folder_id", namespace)]
        case .top, .folder:
            return []
        }
    }
}
