// Shared folders of the in-memory Dropbox, as the HTTP fake serves them (tools/fakedropbox
// sharedfolders.py) and Dropbox documents them (docs/DROPBOX-API.md, "Shared folders not added"):
// `listSharedFolders` pages through every folder shared with the account (a folder the account
// added carries its `path_lower`; one it did not, none), and `rooted(atNamespace:)` reads one
// folder's namespace, where "" is the shared folder itself. Each shared folder is an InMemoryDropbox
// of its own (its own entries, journal and cursors), whose revisions start far above every other's
// so a rev names one file across the account, as on Dropbox. A folder unshared, or one made
// unreadable, answers 422 `no_permission` on every request, as an unknown namespace does.
// The table lives in the store, under the store's lock; the namespaces have their own.

import DropboxAPI

/// One folder shared with the account: what list_folders says of it, its namespace's contents, and
/// whether the account may read them.
struct StoredSharedFolder: Sendable {
    var metadata: SharedFolderMetadata
    var namespace: InMemoryDropbox
    var readable: Bool
}

extension InMemoryDropbox: SharedFolderRoutes {
    /// Shares a new folder named `name` with the account and returns its namespace, to be filled
    /// and changed like any InMemoryDropbox. With `addedAt` the account has added it at that path
    /// of its own Dropbox (a folder made there, empty: the two are not kept in step); with
    /// `readable` false its namespace answers no_permission.
    @discardableResult
    public func shareFolder(
        _ name: String, accessType: String = "viewer", addedAt: String? = nil, readable: Bool = true
    ) -> (id: String, namespace: InMemoryDropbox) {
        let pathLower = addedAt.map { addFolder($0).pathLower ?? DropboxPath.key($0) }
        return store.withLock { s in
            let number = s.sharedFolders.count + 1
            let id = String(3_000_000_000 + number)
            let namespace = InMemoryDropbox(
                account: FullAccount(
                    accountId: "dbid:sharedfolder\(id)", displayName: name, email: "owner@example.com",
                    accountType: "basic", rootInfo: RootInfo(tag: "user", rootNamespaceId: id, homeNamespaceId: id)))
            namespace.store.withLock { $0.nextRev = number << 36 }
            let metadata = SharedFolderMetadata(name: name, sharedFolderId: id, pathLower: pathLower, accessType: accessType)
            s.sharedFolders.append(StoredSharedFolder(metadata: metadata, namespace: namespace, readable: readable))
            return (id, namespace)
        }
    }

    /// The account loses the shared folder `id`.
    public func unshareFolder(_ id: String) {
        store.withLock { $0.sharedFolders.removeAll { $0.metadata.sharedFolderId == id } }
    }

    /// The account may (or may no longer) read shared folder `id`.
    public func setSharedFolderReadable(_ id: String, _ readable: Bool) {
        store.withLock { s in
            for i in s.sharedFolders.indices where s.sharedFolders[i].metadata.sharedFolderId == id {
                s.sharedFolders[i].readable = readable
            }
        }
    }

    public func listSharedFolders(limit: Int) async throws(DropboxError) -> ListSharedFoldersResult {
        guard (1...SharedFolderListing.maxLimit).contains(limit) else {
            throw .badRequest(message: "limit: \(limit) is not a valid value (1..\(SharedFolderListing.maxLimit))")
        }
        return sharedFolderPage(from: 0, limit: limit)
    }

    public func listSharedFoldersContinue(cursor: String) async throws(DropboxError) -> ListSharedFoldersResult {
        let parts = cursor.split(separator: ":")
        guard parts.count == 3, parts[0] == "sf", let offset = Int(parts[1]), let limit = Int(parts[2]), offset >= 0,
            limit > 0
        else { throw .routeError(summary: "invalid_cursor/..") }
        return sharedFolderPage(from: offset, limit: limit)
    }

    private func sharedFolderPage(from offset: Int, limit: Int) -> ListSharedFoldersResult {
        store.withLock { s in
            let all = s.sharedFolders.map(\.metadata)
            let page = Array(all.dropFirst(offset).prefix(limit))
            let next = offset + limit
            return ListSharedFoldersResult(entries: page, cursor: next < all.count ? "sf:\(next):\(limit)" : nil)
        }
    }

    public func rooted(atNamespace namespaceId: String) -> any DropboxClient {
        NamespaceRootedClient(owner: self, namespaceId: namespaceId)
    }

    /// The namespace a request may read now, or no_permission.
    func readableNamespace(_ id: String) throws(DropboxError) -> InMemoryDropbox {
        let found = store.withLock { s in s.sharedFolders.first { $0.metadata.sharedFolderId == id && $0.readable } }
        guard let found else { throw .pathRoot(tag: "no_permission") }
        return found.namespace
    }
}

/// A client of the account whose paths are relative to one shared folder's namespace: each
/// request checks that the account may still read it.
struct NamespaceRootedClient: DropboxClient {
    let owner: InMemoryDropbox
    let namespaceId: String

    private func namespace() throws(DropboxError) -> InMemoryDropbox { try owner.readableNamespace(namespaceId) }

    func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
        try await namespace().listFolder(arg)
    }
    func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
        try await namespace().listFolderContinue(cursor: cursor)
    }
    func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String {
        try await namespace().listFolderGetLatestCursor(arg)
    }
    func listFolderLongpoll(cursor: String, timeoutSeconds: Int) async throws(DropboxError) -> LongpollResult {
        try await namespace().listFolderLongpoll(cursor: cursor, timeoutSeconds: timeoutSeconds)
    }
    func getMetadata(path: String) async throws(DropboxError) -> Metadata {
        try await namespace().getMetadata(path: path)
    }
    func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult {
        try await namespace().download(path: path, range: range)
    }
    func export(path: String) async throws(DropboxError) -> ExportResult {
        try await namespace().export(path: path)
    }
    func getThumbnailBatch(_ entries: [ThumbnailArg]) async throws(DropboxError) -> [Result<[UInt8], ThumbnailFailure>] {
        try await namespace().getThumbnailBatch(entries)
    }
    func listRevisions(_ arg: ListRevisionsArg) async throws(DropboxError) -> ListRevisionsResult {
        try await namespace().listRevisions(arg)
    }
    func getCurrentAccount() async throws(DropboxError) -> FullAccount {
        try await owner.getCurrentAccount()
    }
    func getSpaceUsage() async throws(DropboxError) -> SpaceUsage {
        try await owner.getSpaceUsage()
    }
}

extension InMemoryDropbox {
    /// The namespace of shared folder `id`, to change its contents (nil: no such folder).
    public func sharedNamespace(_ id: String) -> InMemoryDropbox? {
        store.withLock { s in s.sharedFolders.first { $0.metadata.sharedFolderId == id }?.namespace }
    }
}
