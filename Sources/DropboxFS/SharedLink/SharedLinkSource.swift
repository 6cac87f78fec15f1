// A shared link as the source of the mount's tree: a DropboxClient whose account is the link. The
// core is written against DropboxClient, so a link mount reuses the tree, the lazy folder listings,
// the reader and its content_hash check unchanged; this type only translates (docs/SEMANTICS.md,
// "Shared links"):
// - a folder listing of "" or "/a/b" (or "id:..." of a folder listed before) becomes list_folder
//   with `shared_link` and the path relative to the link's root. Entries of a link carry no paths;
//   the tree files them under the folder it asked for by their names (TreeUpdates.replaceChildren);
// - a download of "rev:R", as the reader asks for a pinned revision, becomes
//   get_shared_link_file of the path where a listing showed R (nil for a link to one file, which
//   lists as that file); the reader then checks the revision served and the content_hash;
// - no recursive listing and no change feed exist for a link: the mount runs without the
//   whole-tree fill and the watcher, and a folder is listed again when its listing is older than
//   the mount's folder listing lifetime (FilesystemOptions.folderListingTTL, `--dir-cache-time`).
//   A recursive listing, a cursor of changes or a longpoll is answered with badRequest.
// - a link to a file mounts as a folder holding that file: its root listing is the link's own;
// - thumbnails for file managers come one by one from get_thumbnail_v2 with the link as resource.
//
// `paths` (its own lock, never held across a request) maps what a listing showed to where it is in
// the link: folder ids and file revisions to paths, and listing cursors in flight to their folder.
// It grows with the entries listed (a removed file's revision stays, a few dozen bytes each).

import DropboxAPI
import Log
import Synchronization

public final class SharedLinkSource: DropboxClient {
    let routes: any SharedLinkRoutes
    public let link: SharedLinkArg
    /// What the link is to, from `open`.
    public let root: SharedLinkMetadata
    private let paths = Mutex(LinkPaths())

    struct LinkPaths {
        /// "id:..." of a folder -> its path in the link ("/a/b").
        var folders: [String: String] = [:]
        /// A file revision -> its path in the link.
        var revisions: [String: String] = [:]
        /// The cursor of a listing's next page -> the folder's path in the link.
        var cursors: [String: String] = [:]
    }

    init(routes: any SharedLinkRoutes, link: SharedLinkArg, root: SharedLinkMetadata) {
        self.routes = routes
        self.link = link
        self.root = root
    }

    /// Asks Dropbox what the link is (get_shared_link_metadata): every refusal of the link
    /// (`DropboxError.sharedLink`) surfaces here, before anything is mounted.
    public static func open(_ link: SharedLinkArg, routes: any SharedLinkRoutes) async throws(DropboxError)
        -> SharedLinkSource
    {
        let root = try await routes.getSharedLinkMetadata(link, path: nil)
        if case .other(let tag) = root.kind {
            // Not a file or folder (a collection, a paper or a similar link): nothing to list.
            Log.warning("shared link \(link) is a \(Log.quoted(tag)) link, which cannot be listed")
            throw .sharedLink(.unsupportedLinkType)
        }
        return SharedLinkSource(routes: routes, link: link, root: root)
    }

    public var isFileLink: Bool {
        if case .file = root.kind { return true }
        return false
    }

    /// The path in the link of a listing's `path`: "" or "/a/b" as given, "id:..." of a folder a
    /// listing showed.
    private func linkPath(ofFolder path: String) throws(DropboxError) -> String {
        if path.isEmpty || path.hasPrefix("/") { return path }
        if path.hasPrefix("id:"), let known = paths.withLock({ $0.folders[path] }) { return known }
        throw .lookup(.notFound)
    }

    /// Notes where each entry of a page of `folder`'s listing is, and (when the caller pages on
    /// with `listFolderContinue`) the cursor of its next page.
    private func record(_ page: ListFolderResult, in folder: String, keepingCursor: Bool = true) {
        paths.withLock { p in
            for entry in page.entries {
                let path = folder + "/" + entry.name
                switch entry {
                case .folder(let f): if !f.id.isEmpty { p.folders[f.id] = path }
                case .file(let f): p.revisions[f.rev] = path
                case .deleted: break
                }
            }
            if keepingCursor, page.hasMore { p.cursors[page.cursor] = folder }
        }
    }

    private func linkArg(_ arg: ListFolderArg) throws(DropboxError) -> (ListFolderArg, String) {
        guard !arg.recursive else { throw .badRequest(message: "a shared link is listed one folder at a time") }
        var linked = arg
        linked.path = try linkPath(ofFolder: arg.path)
        linked.sharedLink = link
        linked.includeDeleted = false
        return (linked, linked.path)
    }

    public func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
        let (linked, folder) = try linkArg(arg)
        let page = try await routes.listFolder(linked)
        record(page, in: folder)
        return page
    }

    public func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
        guard let folder = paths.withLock({ $0.cursors.removeValue(forKey: cursor) }) else {
            throw .badRequest(message: "a shared link has no cursor of changes")
        }
        let page = try await routes.listFolderContinue(cursor: cursor)
        record(page, in: folder)
        return page
    }

    public func listFolderAll(_ arg: ListFolderArg, each: (ListFolderResult) -> Bool) async throws(DropboxError)
        -> String?
    {
        let (linked, folder) = try linkArg(arg)
        // The routes page on by themselves: no cursor is kept for listFolderContinue.
        return try await routes.listFolderAll(linked) { page in
            self.record(page, in: folder, keepingCursor: false)
            return each(page)
        }
    }

    public func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String {
        throw .badRequest(message: "a shared link has no cursor of changes")
    }

    public func listFolderLongpoll(cursor: String, timeoutSeconds: Int) async throws(DropboxError) -> LongpollResult {
        throw .badRequest(message: "a shared link has no change feed")
    }

    public func getMetadata(path: String) async throws(DropboxError) -> Metadata {
        let metadata = try await routes.getSharedLinkMetadata(link, path: isFileLink ? nil : try filePath(path))
        switch metadata.kind {
        case .file(let file): return .file(file)
        case .folder: return .folder(FolderMetadata(name: metadata.name, id: metadata.id ?? "", pathLower: nil, pathDisplay: nil))
        case .other: throw .sharedLink(.unsupportedLinkType)
        }
    }

    /// The path in the link of a download's `path`: "rev:R" where a listing showed R.
    private func filePath(_ path: String) throws(DropboxError) -> String {
        if path.hasPrefix("/") { return path }
        if path.hasPrefix("rev:"), let known = paths.withLock({ $0.revisions[String(path.dropFirst(4))] }) {
            return known
        }
        if path.hasPrefix("id:"), let known = paths.withLock({ $0.folders[path] }) { return known }
        throw .lookup(.notFound)
    }

    public func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult {
        try await download(path: path, range: range, freshConnection: false)
    }

    public func download(path: String, range: ByteRange?, freshConnection: Bool) async throws(DropboxError)
        -> DownloadResult
    {
        let inLink = try filePath(path)
        return try await routes.getSharedLinkFile(
            link, path: isFileLink ? nil : inLink, range: range, freshConnection: freshConnection)
    }

    public func export(path: String) async throws(DropboxError) -> ExportResult {
        throw .unsupportedFile
    }

    /// Each entry ("rev:R", as the thumbnail writer asks) through get_thumbnail_v2 with the link as
    /// resource, one request each (Dropbox has no batch of link thumbnails); an entry whose
    /// revision no listing showed, or that the link refuses, fails alone.
    public func getThumbnailBatch(_ entries: [ThumbnailArg]) async throws(DropboxError)
        -> [Result<[UInt8], ThumbnailFailure>]
    {
        var results: [Result<[UInt8], ThumbnailFailure>] = []
        results.reserveCapacity(entries.count)
        for entry in entries {
            guard let inLink = try? filePath(entry.path) else {
                results.append(.failure(.path(.notFound)))
                continue
            }
            var arg = entry
            arg.path = isFileLink ? "" : inLink
            do {
                results.append(try await routes.getSharedLinkThumbnail(link, arg))
            } catch .transport(let failure) where failure.kind == .cancelled {
                throw .transport(failure)
            } catch {
                results.append(.failure(.other(error.description)))
            }
        }
        return results
    }

    public func getCurrentAccount() async throws(DropboxError) -> FullAccount {
        try await routes.getCurrentAccount()
    }

    /// A link has no quota of its own: `df` shows no space rather than the reader's account.
    public func getSpaceUsage() async throws(DropboxError) -> SpaceUsage {
        SpaceUsage(used: 0, allocation: .individual(allocated: 0))
    }
}
