// The routes that read a shared link, beside the DropboxClient protocol: a client that can also
// read links. The link's listings are `listFolder` with `ListFolderArg.sharedLink` set (and
// `listFolderContinue`); these add the link's metadata and its files' bytes. Implemented by the live
// client (DropboxHTTPClient+SharedLinks.swift) and the in-memory fake.

public protocol SharedLinkRoutes: DropboxClient {
    /// sharing/get_shared_link_metadata of the link, or (with `path`, relative to the link's root,
    /// "/a/b") of an entry inside it.
    func getSharedLinkMetadata(_ link: SharedLinkArg, path: String?) async throws(DropboxError) -> SharedLinkMetadata
    /// sharing/get_shared_link_file: the bytes of the file at `path` in the link (nil: the link is to
    /// the file itself), or of `range` of them. The result's metadata has no paths and, as Dropbox
    /// sends none there, no content_hash.
    func getSharedLinkFile(
        _ link: SharedLinkArg, path: String?, range: ByteRange?, freshConnection: Bool
    ) async throws(DropboxError) -> DownloadResult
    /// files/get_thumbnail_v2 of a file in the link (a PathOrLink `link` resource): `arg.path` is
    /// the file's path in the link ("" for a link to the file itself). A file Dropbox makes no
    /// thumbnail of is a failure of its own; a refusal of the link is thrown (`.sharedLink`).
    func getSharedLinkThumbnail(_ link: SharedLinkArg, _ arg: ThumbnailArg) async throws(DropboxError)
        -> Result<[UInt8], ThumbnailFailure>
}
