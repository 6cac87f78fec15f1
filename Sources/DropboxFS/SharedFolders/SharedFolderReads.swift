// The reader's client when the mount shows shared folders (SharedFolders.swift): the reader asks
// for a pinned revision by "rev:R" through one client; a revision a shared folder's listing
// showed is downloaded through that folder's namespace, everything else through the account's
// client unchanged. A revision names one file across Dropbox, so the table of revisions
// (SharedFolderState.namespaceOfRevision) cannot send a file of the account elsewhere.

import DropboxAPI

struct SharedFolderReads: DropboxClient {
    let base: any DropboxClient
    let folders: SharedFolders

    /// The client a request on `path` goes to.
    private func route(_ path: String) -> any DropboxClient {
        guard path.hasPrefix("rev:"), let namespace = folders.namespace(ofRevision: String(path.dropFirst(4))) else {
            return base
        }
        return folders.routes.rooted(atNamespace: namespace)
    }

    func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
        try await base.listFolder(arg)
    }
    func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
        try await base.listFolderContinue(cursor: cursor)
    }
    func listFolderAll(_ arg: ListFolderArg, each: (ListFolderResult) -> Bool) async throws(DropboxError) -> String? {
        try await base.listFolderAll(arg, each: each)
    }
    func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String {
        try await base.listFolderGetLatestCursor(arg)
    }
    func listFolderLongpoll(cursor: String, timeoutSeconds: Int) async throws(DropboxError) -> LongpollResult {
        try await base.listFolderLongpoll(cursor: cursor, timeoutSeconds: timeoutSeconds)
    }
    func getMetadata(path: String) async throws(DropboxError) -> Metadata {
        try await route(path).getMetadata(path: path)
    }
    func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult {
        try await route(path).download(path: path, range: range)
    }
    func download(path: String, range: ByteRange?, freshConnection: Bool) async throws(DropboxError) -> DownloadResult {
        try await route(path).download(path: path, range: range, freshConnection: freshConnection)
    }
    func export(path: String) async throws(DropboxError) -> ExportResult {
        try await route(path).export(path: path)
    }
    func getThumbnailBatch(_ entries: [ThumbnailArg]) async throws(DropboxError) -> [Result<[UInt8], ThumbnailFailure>] {
        try await base.getThumbnailBatch(entries)
    }
    func listRevisions(_ arg: ListRevisionsArg) async throws(DropboxError) -> ListRevisionsResult {
        try await base.listRevisions(arg)
    }
    func getCurrentAccount() async throws(DropboxError) -> FullAccount {
        try await base.getCurrentAccount()
    }
    func getSpaceUsage() async throws(DropboxError) -> SpaceUsage {
        try await base.getSpaceUsage()
    }
}
