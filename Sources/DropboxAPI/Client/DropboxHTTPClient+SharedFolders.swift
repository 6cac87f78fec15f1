// The shared-folder routes over HTTP (SharedFolderRoutes.swift): sharing/list_folders and its
// continue as RPCs (scope sharing.read), and a namespace-rooted client that shares this one's
// tokens, transport and pacer.

extension DropboxHTTPClient: SharedFolderRoutes {
    public func listSharedFolders(limit: Int) async throws(DropboxError) -> ListSharedFoldersResult {
        try await rpc("sharing/list_folders", ListSharedFoldersArg(limit: limit))
    }

    public func listSharedFoldersContinue(cursor: String) async throws(DropboxError) -> ListSharedFoldersResult {
        try await rpc("sharing/list_folders/continue", CursorArg(cursor: cursor))
    }

    public func rooted(atNamespace namespaceId: String) -> any DropboxClient {
        with(pathRoot: .namespace(namespaceId))
    }
}
