// The shared-link routes over HTTP (SharedLinkRoutes.swift): get_shared_link_metadata as an RPC,
// get_shared_link_file as a ranged content download whose Dropbox-API-Result is a
// FileLinkMetadata. These routes take no path root: a link is not in any namespace of the reader.

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
