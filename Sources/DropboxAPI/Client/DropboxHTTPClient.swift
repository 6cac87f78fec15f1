// The live DropboxClient: every route of the protocol over HTTP, in the endpoint style Dropbox
// gives it (dropbox-api.md §1-2). Plumbing shared by the routes (tokens, pacer, the three request
// styles) lives in DropboxHTTPClient+Exchange.swift; ranged download checks in +Download.swift.

public final class DropboxHTTPClient: DropboxClient {
    public struct Configuration: Sendable {
        /// Connect and stall limits of ordinary requests (no total limit: big downloads take time).
        public var timeouts: HTTPTimeouts
        /// Added to a longpoll's `timeout`: Dropbox may answer up to 90 s late (jitter).
        public var longpollGrace: Duration
        /// The namespace RPC and download paths are relative to (sent as Dropbox-API-Path-Root).
        /// Longpolls carry none: their cursor already names its namespace.
        public var pathRoot: PathRoot

        public init(
            timeouts: HTTPTimeouts = HTTPTimeouts(), longpollGrace: Duration = .seconds(90), pathRoot: PathRoot = .home
        ) {
            self.timeouts = timeouts
            self.longpollGrace = longpollGrace
            self.pathRoot = pathRoot
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
