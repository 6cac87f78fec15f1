// The routes that read folders shared with the account but not added to its Dropbox, beside the
// DropboxClient protocol: the list of shared folders, and a client of the same sign-in whose paths
// are relative to one shared folder's namespace (`Dropbox-API-Path-Root: namespace_id`). Listing
// and reading a folder then use the ordinary routes of that client. Implemented by the live client
// (DropboxHTTPClient+SharedFolders.swift) and the in-memory fake.

public protocol SharedFolderRoutes: DropboxClient {
    /// sharing/list_folders: the first page of every shared folder the account can access
    /// (`limit` 1...1000 per page).
    func listSharedFolders(limit: Int) async throws(DropboxError) -> ListSharedFoldersResult
    /// sharing/list_folders/continue.
    func listSharedFoldersContinue(cursor: String) async throws(DropboxError) -> ListSharedFoldersResult
    /// The same sign-in, with "" meaning the root of namespace `namespaceId`. A namespace the
    /// account may not read answers `.pathRoot(tag: "no_permission")` on every request.
    func rooted(atNamespace namespaceId: String) -> any DropboxClient
}

extension SharedFolderRoutes {
    /// Every shared folder the account can access, all pages.
    public func listAllSharedFolders(limit: Int = SharedFolderListing.maxLimit) async throws(DropboxError)
        -> [SharedFolderMetadata]
    {
        var page = try await listSharedFolders(limit: limit)
        var all = page.entries
        var pages = 1
        while let cursor = page.cursor {
            // A server that hands back cursors for ever must not keep a mount listing for ever.
            pages += 1
            guard pages <= 10_000 else { throw .malformedResponse("sharing/list_folders: more than 10000 pages") }
            page = try await listSharedFoldersContinue(cursor: cursor)
            all += page.entries
        }
        return all
    }
}
