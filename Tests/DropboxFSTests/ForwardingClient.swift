// Test clients that wrap another client and change a few calls (hold them, record them, damage
// or rename what they return). Every call such a client does not implement itself goes to its
// `forwardee` unchanged, so each wrapper shows only what it changes.

import DropboxAPI

protocol ForwardingClient: DropboxClient {
    /// The client every call this one does not implement goes to.
    var forwardee: any DropboxClient { get }
}

extension ForwardingClient {
    func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
        try await forwardee.listFolder(arg)
    }
    func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
        try await forwardee.listFolderContinue(cursor: cursor)
    }
    func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String {
        try await forwardee.listFolderGetLatestCursor(arg)
    }
    func listFolderLongpoll(cursor: String, timeoutSeconds: Int) async throws(DropboxError) -> LongpollResult {
        try await forwardee.listFolderLongpoll(cursor: cursor, timeoutSeconds: timeoutSeconds)
    }
    func getMetadata(path: String) async throws(DropboxError) -> Metadata { try await forwardee.getMetadata(path: path) }
    func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult {
        try await forwardee.download(path: path, range: range)
    }
    func export(path: String) async throws(DropboxError) -> ExportResult { try await forwardee.export(path: path) }
    func getThumbnailBatch(_ entries: [ThumbnailArg]) async throws(DropboxError) -> [Result<[UInt8], ThumbnailFailure>] {
        try await forwardee.getThumbnailBatch(entries)
    }
    func listRevisions(_ arg: ListRevisionsArg) async throws(DropboxError) -> ListRevisionsResult {
        try await forwardee.listRevisions(arg)
    }
    func getCurrentAccount() async throws(DropboxError) -> FullAccount { try await forwardee.getCurrentAccount() }
    func getSpaceUsage() async throws(DropboxError) -> SpaceUsage { try await forwardee.getSpaceUsage() }
}
