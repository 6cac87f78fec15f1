// The seam between the filesystem core and Dropbox. The core is written against this protocol only;
// implementations are the live HTTP client (DropboxHTTPClient), the in-memory fake and the
// fault-injecting wrapper (DropboxTestSupport). Every method throws DropboxError.

/// A byte range of a file: `length` bytes starting at `offset`. Never empty.
public struct ByteRange: Sendable, Equatable, Hashable {
    public var offset: UInt64
    public var length: UInt64

    public init(offset: UInt64, length: UInt64) {
        precondition(length > 0, "an empty range cannot be requested")
        self.offset = offset
        self.length = length
    }

    /// The `Range` header value, `bytes=first-last` (inclusive).
    public var headerValue: String { "bytes=\(offset)-\(offset + length - 1)" }
}

public struct DownloadResult: Sendable, Equatable {
    /// The metadata of the revision served (from `Dropbox-API-Result`).
    public var metadata: FileMetadata
    /// The bytes: the whole file, or exactly the requested range (shorter only at end of file).
    public var data: [UInt8]

    public init(metadata: FileMetadata, data: [UInt8]) {
        self.metadata = metadata
        self.data = data
    }
}

/// What files/export returns: the document converted to its export format.
public struct ExportResult: Sendable, Equatable {
    /// The exported file's name (with the format's extension) and size.
    public var name: String
    public var size: UInt64
    /// The revision exported, when the server says (`file_metadata`).
    public var rev: String?
    public var data: [UInt8]

    public init(name: String, size: UInt64, rev: String?, data: [UInt8]) {
        self.name = name
        self.size = size
        self.rev = rev
        self.data = data
    }
}

public protocol DropboxClient: Sendable {
    func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult
    func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult
    /// A whole listing: list_folder, then list_folder/continue until `has_more` is false, each page
    /// handed to `each` in order while the next one is already on its way. Returns the last page's
    /// cursor, or nil when `each` returned false (the listing stops there). A default
    /// implementation over the two calls above is in DropboxClient+Listing.swift.
    func listFolderAll(
        _ arg: ListFolderArg, each: (ListFolderResult) -> Bool
    ) async throws(DropboxError) -> String?
    func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String
    /// Uses the notify host and no Authorization header. `timeoutSeconds` is 30...480 against Dropbox.
    func listFolderLongpoll(cursor: String, timeoutSeconds: Int) async throws(DropboxError) -> LongpollResult
    /// `path` is "/a/b", "id:..." or "rev:..."; the root is not allowed.
    func getMetadata(path: String) async throws(DropboxError) -> Metadata
    /// `path` is "/a/b", "id:..." or "rev:...". A nil range downloads the whole file.
    func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult
    /// The same, over a connection of its own when `freshConnection` (never one a damaged download
    /// came over: the reader asks for this when it downloads a file again after a content_hash
    /// mismatch). Clients without connections just download.
    func download(path: String, range: ByteRange?, freshConnection: Bool) async throws(DropboxError) -> DownloadResult
    /// files/export of an export-only document (Paper, Google Docs) in its default export format.
    /// `path` is "/a/b" or "id:...".
    func export(path: String) async throws(DropboxError) -> ExportResult
    /// files/get_thumbnail_batch: at most `ThumbnailArg.batchLimit` images, one result per entry in
    /// order (an entry Dropbox cannot thumbnail fails alone); a failure of the whole request throws.
    func getThumbnailBatch(_ entries: [ThumbnailArg]) async throws(DropboxError) -> [Result<[UInt8], ThumbnailFailure>]
    /// files/list_revisions: one page of a file's revisions, newest first (Models/Revisions.swift).
    func listRevisions(_ arg: ListRevisionsArg) async throws(DropboxError) -> ListRevisionsResult
    func getCurrentAccount() async throws(DropboxError) -> FullAccount
    func getSpaceUsage() async throws(DropboxError) -> SpaceUsage
}

extension DropboxClient {
    public func download(path: String, range: ByteRange?, freshConnection: Bool) async throws(DropboxError)
        -> DownloadResult
    {
        try await download(path: path, range: range)
    }
}
