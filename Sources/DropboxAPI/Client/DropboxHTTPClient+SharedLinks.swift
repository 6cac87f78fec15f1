// The shared-link routes over HTTP (SharedLinkRoutes.swift): get_shared_link_metadata as an RPC,
// get_shared_link_file as a ranged content download whose Dropbox-API-Result is a
// FileLinkMetadata, and get_thumbnail_v2 of a file in the link (download style; its result header,
// a PreviewResult, is not needed). A link is not in any namespace of the reader.

extension DropboxHTTPClient: SharedLinkRoutes {
    public func getSharedLinkMetadata(_ link: SharedLinkArg, path: String?) async throws(DropboxError)
        -> SharedLinkMetadata
    {
        try await rpc("sharing/get_shared_link_metadata", SharedLinkRouteArg(link, path: path))
    }

    public func getSharedLinkFile(
        _ link: SharedLinkArg, path: String?, range: ByteRange?, freshConnection: Bool
    ) async throws(DropboxError) -> DownloadResult {
        let route = "sharing/get_shared_link_file"
        return try await contentDownload(
            route, SharedLinkRouteArg(link, path: path), range: range, freshConnection: freshConnection
        ) { bytes throws(DropboxError) in
            let metadata = try Self.decode(SharedLinkMetadata.self, from: bytes, route: route)
            guard case .file(let file) = metadata.kind else {
                throw .malformedResponse("\(route): the result is not a file's metadata")
            }
            return file
        }
    }
}

extension DropboxHTTPClient {
    /// The most bytes one thumbnail may take (Dropbox's biggest, 2048x1536, is far smaller).
    static let thumbnailBodyLimit = 16 << 20

    public func getSharedLinkThumbnail(_ link: SharedLinkArg, _ arg: ThumbnailArg) async throws(DropboxError)
        -> Result<[UInt8], ThumbnailFailure>
    {
        let route = "files/get_thumbnail_v2"
        let header = try ArgEncoding.headerJSON(LinkThumbnailArg(link: link, arg: arg))
        do {
            return .success(
                try await authorized(route) { token throws(DropboxError) in
                    let request = HTTPRequest(
                        method: .post, url: self.endpoints.contentRoute(route),
                        headers: self.contentHeaders(token: token, arg: header), body: [],
                        timeouts: self.configuration.downloadTimeouts(length: nil), maxBodyBytes: Self.thumbnailBodyLimit)
                    return try await self.exchange(request).body
                })
        } catch .lookup(let failure) {
            return .failure(.path(failure))
        } catch .routeError(let summary) {
            // ThumbnailV2Error: the image's own failures, or the link's refusal.
            let tag = String(summary.prefix { $0 != "/" })
            switch tag {
            case "access_denied": throw .sharedLink(.accessDenied)
            case "not_found": throw .sharedLink(.notFound)
            default: return .failure(ThumbnailFailure(tag: tag, pathTag: nil))
            }
        }
    }
}

/// The argument of get_thumbnail_v2 with a `link` resource; unions in their tagged form.
struct LinkThumbnailArg: Encodable {
    var link: SharedLinkArg
    var arg: ThumbnailArg

    private struct Tag: Encodable {
        var tag: String
        enum CodingKeys: String, CodingKey { case tag = ".tag" }
    }

    private struct Resource: Encodable {
        var tag = "link"
        var url: String
        var path: String?
        var password: String?
        enum CodingKeys: String, CodingKey {
            case tag = ".tag"
            case url, path, password
        }
    }

    enum CodingKeys: String, CodingKey { case resource, format, size, mode }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(
            Resource(url: link.url, path: arg.path.isEmpty ? nil : arg.path, password: link.password), forKey: .resource)
        try container.encode(Tag(tag: arg.format.rawValue), forKey: .format)
        try container.encode(Tag(tag: arg.size.rawValue), forKey: .size)
        try container.encode(Tag(tag: arg.mode.rawValue), forKey: .mode)
    }
}

/// `{url, path?, link_password?}`, the argument of both sharing routes.
struct SharedLinkRouteArg: Encodable {
    var url: String
    var path: String?
    var linkPassword: String?

    init(_ link: SharedLinkArg, path: String?) {
        url = link.url
        self.path = path
        linkPassword = link.password
    }

    enum CodingKeys: String, CodingKey {
        case url, path
        case linkPassword = "link_password"
    }
}
