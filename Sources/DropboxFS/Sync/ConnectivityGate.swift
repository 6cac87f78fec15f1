// The client wrapper that tells Connectivity what each request found, for the host the request
// goes to. With `blocksWhileOffline` (the client of user-driven requests) a request fails at once
// while its host is unreachable (but for the probe Connectivity lets through), and runs failing
// fast (FailFast.swift): a silent host costs one attempt, not five. Without (the sync engine's
// client, whose requests also find Dropbox again), it always tries, with the pacer's retries while
// the host is thought reachable and failing fast while it is known not to be.

import DropboxAPI

struct ConnectivityGate: DropboxClient {
    let client: any DropboxClient
    let connectivity: Connectivity
    let blocksWhileOffline: Bool

    private func pass<T>(
        _ host: DropboxHost, _ call: () async throws(DropboxError) -> T
    ) async throws(DropboxError) -> T {
        if blocksWhileOffline {
            guard connectivity.mayTry(host) else { throw connectivity.offlineError(host) }
            let result = await FailFast.$enabled.withValue(true) { () async -> Result<T, DropboxError> in
                await outcome(host, call)
            }
            return try result.get()
        }
        // A host already known to be unreachable is not asked five times: one attempt finds out
        // whether it is back (the watcher retries on its own schedule).
        guard connectivity.unreachableSince(host) != nil else { return try await outcome(host, call).get() }
        let result = await FailFast.$enabled.withValue(true) { () async -> Result<T, DropboxError> in
            await outcome(host, call)
        }
        return try result.get()
    }

    private func outcome<T>(
        _ host: DropboxHost, _ call: () async throws(DropboxError) -> T
    ) async -> Result<T, DropboxError> {
        do {
            let result = try await call()
            connectivity.note(host, nil)
            return .success(result)
        } catch {
            connectivity.note(host, error)
            return .failure(error)
        }
    }

    func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
        try await pass(.api) { () async throws(DropboxError) in try await client.listFolder(arg) }
    }

    func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
        try await pass(.api) { () async throws(DropboxError) in try await client.listFolderContinue(cursor: cursor) }
    }

    func listFolderAll(_ arg: ListFolderArg, each: (ListFolderResult) -> Bool) async throws(DropboxError) -> String? {
        try await pass(.api) { () async throws(DropboxError) in try await client.listFolderAll(arg, each: each) }
    }

    func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String {
        try await pass(.api) { () async throws(DropboxError) in try await client.listFolderGetLatestCursor(arg) }
    }

    func listFolderLongpoll(cursor: String, timeoutSeconds: Int) async throws(DropboxError) -> LongpollResult {
        try await pass(.notify) { () async throws(DropboxError) in
            try await client.listFolderLongpoll(cursor: cursor, timeoutSeconds: timeoutSeconds)
        }
    }

    func getMetadata(path: String) async throws(DropboxError) -> Metadata {
        try await pass(.api) { () async throws(DropboxError) in try await client.getMetadata(path: path) }
    }

    func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult {
        try await pass(.content) { () async throws(DropboxError) in
            try await client.download(path: path, range: range)
        }
    }

    func download(path: String, range: ByteRange?, freshConnection: Bool) async throws(DropboxError) -> DownloadResult {
        try await pass(.content) { () async throws(DropboxError) in
            try await client.download(path: path, range: range, freshConnection: freshConnection)
        }
    }

    func export(path: String) async throws(DropboxError) -> ExportResult {
        try await pass(.content) { () async throws(DropboxError) in try await client.export(path: path) }
    }

    func getThumbnailBatch(_ entries: [ThumbnailArg]) async throws(DropboxError)
        -> [Result<[UInt8], ThumbnailFailure>]
    {
        try await pass(.content) { () async throws(DropboxError) in try await client.getThumbnailBatch(entries) }
    }

    func listRevisions(_ arg: ListRevisionsArg) async throws(DropboxError) -> ListRevisionsResult {
        try await pass(.api) { () async throws(DropboxError) in try await client.listRevisions(arg) }
    }

    func getCurrentAccount() async throws(DropboxError) -> FullAccount {
        try await pass(.api) { () async throws(DropboxError) in try await client.getCurrentAccount() }
    }

    func getSpaceUsage() async throws(DropboxError) -> SpaceUsage {
        try await pass(.api) { () async throws(DropboxError) in try await client.getSpaceUsage() }
    }
}
