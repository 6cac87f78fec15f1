// The live DropboxClient: every route of the protocol over HTTP, in the endpoint style Dropbox
// gives it (docs/DROPBOX-API.md, "Routes used"). Plumbing shared by the routes (tokens, pacer, the
// three request styles) lives in DropboxHTTPClient+Exchange.swift; ranged download checks in
// +Download.swift.

public final class DropboxHTTPClient: DropboxClient {
    public struct Configuration: Sendable {
        /// Connect, stall and low-speed limits of every request; the total is set per request
        /// from the deadlines below.
        public var timeouts: HTTPTimeouts
        /// The longest one attempt of an RPC may take, start to last byte.
        public var rpcDeadline: Duration
        /// One attempt of a download may take `downloadDeadline` plus its length at
        /// `downloadMinimumRate` bytes per second (a 16 MiB part: 60 s + 256 s).
        public var downloadDeadline: Duration
        public var downloadMinimumRate: Int
        /// Added to a longpoll's `timeout`: Dropbox may answer up to 90 s late (jitter).
        public var longpollGrace: Duration
        /// The namespace RPC and download paths are relative to (sent as Dropbox-API-Path-Root).
        /// Longpolls carry none: their cursor already names its namespace.
        public var pathRoot: PathRoot

        public init(
            timeouts: HTTPTimeouts = HTTPTimeouts(), rpcDeadline: Duration = .seconds(120),
            downloadDeadline: Duration = .seconds(60), downloadMinimumRate: Int = 64 * 1024,
            longpollGrace: Duration = .seconds(90), pathRoot: PathRoot = .home
        ) {
            self.timeouts = timeouts
            self.rpcDeadline = rpcDeadline
            self.downloadDeadline = downloadDeadline
            self.downloadMinimumRate = max(1, downloadMinimumRate)
            self.longpollGrace = longpollGrace
            self.pathRoot = pathRoot
        }

        /// The timeouts of one RPC attempt (also used for the OAuth token endpoint).
        public var rpcTimeouts: HTTPTimeouts {
            var t = timeouts
            t.total = rpcDeadline
            return t
        }

        /// The timeouts of one download attempt of `length` bytes (nil: the whole file, whose size
        /// is not known here: no total, the stall and low-speed limits still hold).
        func downloadTimeouts(length: UInt64?) -> HTTPTimeouts {
            var t = timeouts
            guard let length else { return t }
            let seconds = Double(length) / Double(downloadMinimumRate)
            t.total = downloadDeadline + .milliseconds(Int64(min(seconds, 86_400) * 1000))
            return t
        }
    }

    public let endpoints: DropboxEndpoints
    let tokens: any AccessTokenProvider
    let transport: any HTTPTransport
    public let pacer: Pacer
    public let configuration: Configuration
    /// `Dropbox-API-Path-Root` of every RPC and download, encoded once (nil: none is sent).
    let pathRootHeader: String?

    public init(
        endpoints: DropboxEndpoints, tokens: any AccessTokenProvider, transport: any HTTPTransport = CurlTransport(),
        pacer: Pacer = Pacer(), configuration: Configuration = Configuration()
    ) {
        self.endpoints = endpoints
        self.tokens = tokens
        self.transport = transport
        self.pacer = pacer
        self.configuration = configuration
        self.pathRootHeader = configuration.pathRoot.headerValue
    }

    public func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
        try await rpc("files/list_folder", arg, decode: Self.decodeListing)
    }

    public func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
        try await rpc("files/list_folder/continue", CursorArg(cursor: cursor), decode: Self.decodeListing)
    }

    public func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String {
        let result: CursorResult = try await rpc("files/list_folder/get_latest_cursor", arg)
        return result.cursor
    }

    public func listFolderLongpoll(cursor: String, timeoutSeconds: Int) async throws(DropboxError) -> LongpollResult {
        try await notify(
            "files/list_folder/longpoll", LongpollArg(cursor: cursor, timeout: timeoutSeconds),
            total: .seconds(timeoutSeconds) + configuration.longpollGrace)
    }

    public func getMetadata(path: String) async throws(DropboxError) -> Metadata {
        try await rpc("files/get_metadata", GetMetadataArg(path: path))
    }

    public func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult {
        try await contentDownload("files/download", PathArg(path: path), range: range)
    }

    public func download(path: String, range: ByteRange?, freshConnection: Bool) async throws(DropboxError)
        -> DownloadResult
    {
        try await contentDownload("files/download", PathArg(path: path), range: range, freshConnection: freshConnection)
    }

    public func export(path: String) async throws(DropboxError) -> ExportResult {
        try await contentExport("files/export", PathArg(path: path))
    }

    /// An RPC on the content host (where Dropbox serves thumbnails).
    public func getThumbnailBatch(_ entries: [ThumbnailArg]) async throws(DropboxError)
        -> [Result<[UInt8], ThumbnailFailure>]
    {
        guard entries.count <= ThumbnailArg.batchLimit else {
            throw .badRequest(message: "at most \(ThumbnailArg.batchLimit) thumbnails per request, not \(entries.count)")
        }
        if entries.isEmpty { return [] }
        let route = "files/get_thumbnail_batch"
        let reply: ThumbnailBatchReply = try await rpc(route, ThumbnailBatchArg(entries: entries), host: .content)
        return try reply.results(expected: entries.count, route: route)
    }

    public func getCurrentAccount() async throws(DropboxError) -> FullAccount {
        try await rpc("users/get_current_account")
    }

    /// The same client (tokens, transport, pacer) with paths relative to `pathRoot`.
    public func with(pathRoot: PathRoot) -> DropboxHTTPClient {
        var configuration = configuration
        configuration.pathRoot = pathRoot
        return DropboxHTTPClient(
            endpoints: endpoints, tokens: tokens, transport: transport, pacer: pacer, configuration: configuration)
    }

    public func getSpaceUsage() async throws(DropboxError) -> SpaceUsage {
        try await rpc("users/get_space_usage")
    }

    /// Revokes the access token in use (auth/token/revoke); later requests with it get 401.
    public func revokeToken() async throws(DropboxError) {
        try await rpcWithoutResult("auth/token/revoke")
    }
}
