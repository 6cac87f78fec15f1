// Shared links of the in-memory Dropbox, as the HTTP fake serves them (tools/fakedropbox links.py)
// and Dropbox documents them (docs/DROPBOX-API.md, "Shared links"): a link names a folder or file
// by id, so it follows moves and dies with its target; listings through it are non-recursive and
// their entries carry no paths (a link to a file lists as that file); get_shared_link_file serves
// ranges; the errors are the SharedLinkError union (an expired link is `shared_link_not_found`,
// as the union has no tag for expiry; a wrong or missing password `shared_link_access_denied`).
// A listing of several pages is a snapshot served by a cursor of its own ("link:" + snapshot id +
// offset); continuing after the last page answers nothing new while the account is unchanged and
// `reset` once it changed (no per-link change feed, as on Dropbox, where clients poll). Links live
// in the store, under the store's lock.

import DropboxAPI

/// One shared link: its target's id ("" for the root), password, and whether it has expired or is
/// of a kind the API cannot read.
struct StoredLink: Sendable {
    var targetId: String
    var password: String?
    var expired: Bool
    var unsupported: Bool
}

extension InMemoryDropbox: SharedLinkRoutes {
    /// Makes a shared link to the folder or file at `path` ("" for the root) and returns its URL.
    @discardableResult
    public func share(_ path: String, password: String? = nil, expired: Bool = false, unsupported: Bool = false)
        -> String
    {
        store.withLock { s in
            let key = s.key(path)
            let id = key.isEmpty ? "" : (s.entries[key].flatMap { Self.id(of: $0.metadata) } ?? "")
            precondition(key.isEmpty || !id.isEmpty, "share: no entry at \(path)")
            let url = "https://www.dropbox.com/scl/fo/inmemory\(s.links.count)/link?rlkey=k\(s.links.count)&dl=0"
            s.links[url] = StoredLink(targetId: id, password: password, expired: expired, unsupported: unsupported)
            return url
        }
    }

    /// The link at `url` expires (or comes back).
    public func setLinkExpired(_ url: String, _ expired: Bool = true) {
        store.withLock { $0.links[url]?.expired = expired }
    }

    static func id(of metadata: Metadata) -> String? {
        switch metadata {
        case .file(let f): return f.id
        case .folder(let f): return f.id
        case .deleted: return nil
        }
    }

    public func getSharedLinkMetadata(_ link: SharedLinkArg, path: String?) async throws(DropboxError)
        -> SharedLinkMetadata
    {
        try await enter(.getSharedLinkMetadata)
        return try store.withLock { s -> Result<SharedLinkMetadata, DropboxError> in
            s.linkTarget(link, path: path ?? "").flatMap { key in
                guard let key else { return .failure(.sharedLink(.notFound)) }
                return .success(s.linkMetadata(key, link: link))
            }
        }.get()
    }

    public func getSharedLinkFile(
        _ link: SharedLinkArg, path: String?, range: ByteRange?, freshConnection: Bool
    ) async throws(DropboxError) -> DownloadResult {
        try await enter(.getSharedLinkFile)
        return try store.withLock { s -> Result<DownloadResult, DropboxError> in
            s.linkTarget(link, path: path ?? "").flatMap { key in
                guard let key, let entry = s.entries[key] else { return .failure(.sharedLink(.notFound)) }
                guard var file = entry.file, let content = entry.content else { return .failure(.sharedLink(.isDirectory)) }
                guard file.isDownloadable else { return .failure(.sharedLink(.unsupportedLinkType)) }
                // FileLinkMetadata: no paths, and no content_hash.
                (file.pathLower, file.pathDisplay, file.contentHash) = (nil, nil, nil)
                guard let range else { return .success(DownloadResult(metadata: file, data: content.allBytes)) }
                guard range.offset < content.size else { return .failure(.rangeNotSatisfiable) }
                return .success(DownloadResult(metadata: file, data: content.slice(offset: range.offset, length: range.length)))
            }
        }.get()
    }
}

extension InMemoryDropbox {
    public func getSharedLinkThumbnail(_ link: SharedLinkArg, _ arg: ThumbnailArg) async throws(DropboxError)
        -> Result<[UInt8], ThumbnailFailure>
    {
        try await enter(.getThumbnailBatch)
        return try store.withLock { s -> Result<Result<[UInt8], ThumbnailFailure>, DropboxError> in
            switch s.linkTarget(link, path: arg.path) {
            case .failure(.lookup(let failure)): return .success(.failure(.path(failure)))
            case .failure(let refusal): return .failure(refusal)
            case .success(nil): return .success(.failure(.path(.notFound)))
            case .success(let key?):
                guard let file = s.entries[key]?.file else { return .success(.failure(.path(.notFile))) }
                var byRevision = arg
                byRevision.path = "rev:" + file.rev
                return .success(s.thumbnail(byRevision))
            }
        }.get()
    }
}

extension InMemoryDropboxStore {
    static let linkCursorPrefix = "link:"

    static func isLinkCursor(_ cursor: String) -> Bool { cursor.hasPrefix(linkCursorPrefix) }

    /// The key of `path` ("" or "/a/b") inside the link, nil when nothing is there; or the
    /// link's refusal. Passwords are checked unless `checkPassword` is false (a cursor already
    /// granted the listing).
    func linkTarget(_ link: SharedLinkArg, path: String, checkPassword: Bool = true) -> Result<String?, DropboxError> {
        guard let stored = links[link.url], !stored.expired else { return .failure(.sharedLink(.notFound)) }
        if stored.unsupported { return .failure(.sharedLink(.unsupportedLinkType)) }
        if checkPassword, let password = stored.password, link.password != password {
            return .failure(.sharedLink(.accessDenied))
        }
        let base: String
        if stored.targetId.isEmpty {
            base = ""
        } else {
            guard let found = idIndex[stored.targetId] else { return .failure(.sharedLink(.notFound)) }
            base = found
        }
        if path.isEmpty || path == "/" { return .success(base) }
        guard path.hasPrefix("/") else { return .failure(.lookup(.malformedPath)) }
        guard base.isEmpty || entries[base]?.isFolder == true else { return .success(nil) }
        let key = base + self.key(path)
        return .success(entries[key] == nil ? nil : key)
    }

    func linkMetadata(_ key: String, link: SharedLinkArg) -> SharedLinkMetadata {
        let name = key.isEmpty ? "root" : entries[key]?.metadata.name ?? ""
        let id = key.isEmpty ? "id:root" : entries[key].flatMap { InMemoryDropbox.id(of: $0.metadata) }
        if var file = entries[key]?.file {
            (file.pathLower, file.pathDisplay, file.contentHash) = (nil, nil, nil)
            return SharedLinkMetadata(kind: .file(file), name: name, id: id, expires: nil)
        }
        return SharedLinkMetadata(kind: .folder, name: name, id: id, expires: nil)
    }

    /// list_folder with `shared_link`.
    mutating func listLink(_ link: SharedLinkArg, _ arg: ListFolderArg) -> Result<ListFolderResult, DropboxError> {
        guard !arg.recursive else {
            return .failure(.badRequest(message: "shared_link: Only non-recursive mode is supported for shared link."))
        }
        let key: String
        switch linkTarget(link, path: arg.path) {
        case .failure(let error): return .failure(error)
        case .success(nil): return .failure(.lookup(.notFound))
        case .success(let found?): key = found
        }
        let keys = !key.isEmpty && entries[key]?.isFolder != true ? [key] : sortedChildren(of: key)
        let listed = keys.compactMap { entries[$0].map { Self.withoutPaths($0.metadata) } }
        let id = nextSnapshot
        nextSnapshot += 1
        snapshots[id] = ListingSnapshot(entries: listed)
        snapshots.removeValue(forKey: id - Self.keptSnapshots)
        return .success(linkPage(snapshot: id, offset: 0, limit: Int(arg.limit ?? UInt32(Self.defaultLimit))))
    }

    mutating func continueLinkListing(_ cursor: String) -> Result<ListFolderResult, DropboxError> {
        let parts = cursor.dropFirst(Self.linkCursorPrefix.count).split(separator: ":")
        guard parts.count == 4, let id = Int(parts[0]), let offset = Int(parts[1]), let limit = Int(parts[2]),
            let seq = Int(parts[3]), limit > 0
        else {
            return .failure(.badRequest(message: "cursor: not a cursor this server issued"))
        }
        if offset < 0 {
            // After the last page: nothing new while nothing changed.
            guard seq == headSeq else { return .failure(.cursorReset) }
            return .success(ListFolderResult(entries: [], cursor: cursor, hasMore: false))
        }
        guard snapshots[id] != nil else { return .failure(.cursorReset) }
        return .success(linkPage(snapshot: id, offset: offset, limit: limit))
    }

    private func linkPage(snapshot id: Int, offset: Int, limit: Int) -> ListFolderResult {
        let listed = snapshots[id]?.entries ?? []
        let end = min(listed.count, offset + limit)
        let more = end < listed.count
        let cursor = Self.linkCursorPrefix + "\(id):\(more ? end : -1):\(limit):\(headSeq)"
        return ListFolderResult(entries: Array(listed[min(offset, end)..<end]), cursor: cursor, hasMore: more)
    }

    static func withoutPaths(_ metadata: Metadata) -> Metadata {
        switch metadata {
        case .file(var f):
            (f.pathLower, f.pathDisplay) = (nil, nil)
            return .file(f)
        case .folder(var f):
            (f.pathLower, f.pathDisplay, f.sharedFolderId, f.sharedReadOnly) = (nil, nil, nil, nil)
            return .folder(f)
        case .deleted: return metadata
        }
    }
}
