// files/list_revisions for the in-memory Dropbox (docs/DROPBOX-API.md, "History"), over the
// revisions the store already keeps (every add, modify and move stores one; a delete keeps them):
// path mode lists every revision stored at the path_lower, id mode every revision of one file id;
// newest first (revs are fixed-width hex and grow, so their order is the order of changes);
// `before_rev` pages in path mode only. `is_deleted` when no file lives there (path mode) or
// under the id (id mode), with `server_deleted` from `deletedAt`.

import DropboxAPI

extension InMemoryDropboxStore {
    func listRevisions(_ arg: ListRevisionsArg) -> Result<ListRevisionsResult, DropboxError> {
        guard (1...ListRevisionsArg.maxLimit).contains(arg.limit) else {
            return .failure(.badRequest(message: "limit: \(arg.limit) is not within range [1, 100]"))
        }
        if arg.beforeRev != nil, arg.mode == .id {
            return .failure(.routeError(summary: "before_rev_not_supported/"))
        }
        let found: (revisions: [FileMetadata], live: Bool, deletedKey: String?)
        switch target(arg.path, mode: arg.mode) {
        case .success(let value): found = value
        case .failure(let error): return .failure(error)
        }
        var newestFirst = found.revisions.sorted { $0.rev > $1.rev }
        if let before = arg.beforeRev {
            guard let index = newestFirst.firstIndex(where: { $0.rev == before }) else {
                return .failure(.routeError(summary: "invalid_before_rev/"))
            }
            newestFirst.removeFirst(index + 1)
        }
        let page = Array(newestFirst.prefix(arg.limit)).map { file -> FileMetadata in
            var file = file
            file.symlinkTarget = nil
            return file
        }
        return .success(
            ListRevisionsResult(
                isDeleted: !found.live, serverDeleted: found.live ? nil : found.deletedKey.flatMap { deletedAt[$0] },
                entries: page, hasMore: newestFirst.count > arg.limit))
    }

    /// The revisions `path` names in `mode`, whether a file lives there now, and the key it was
    /// deleted at when not.
    private func target(_ path: String, mode: ListRevisionsMode)
        -> Result<(revisions: [FileMetadata], live: Bool, deletedKey: String?), DropboxError>
    {
        let key: String
        switch DropboxPath.parse(path, folding: folding, namespaces: namespaceIds) {
        case .failure(let error): return .failure(error)
        case .success(.root): return .failure(.badRequest(message: "path: The root folder is unsupported."))
        case .success(.rev): return .failure(.badRequest(message: "path: a rev: path is not allowed here"))
        case .success(.key(let found)): key = found
        case .success(.id(let id, let rest)):
            if let base = idIndex[id] {
                key = base + rest
            } else if rest.isEmpty, let last = revisions.values.filter({ $0.metadata.id == id })
                .max(by: { $0.metadata.rev < $1.metadata.rev }), let lastKey = last.metadata.pathLower
            {
                key = lastKey  // a deleted file, still found by its id
            } else {
                return .failure(.lookup(.notFound))
            }
        }
        if let entry = entries[key], entry.isFolder { return .failure(.lookup(.notFile)) }
        let liveFile = entries[key]?.file
        switch mode {
        case .path:
            let atPath = revisions.values.map(\.metadata).filter { $0.pathLower == key }
            guard !atPath.isEmpty else { return .failure(.lookup(.notFound)) }
            return .success((atPath, liveFile != nil, key))
        case .id:
            let id: String
            if let liveFile {
                id = liveFile.id
            } else if let last = revisions.values.map(\.metadata).filter({ $0.pathLower == key }).max(by: { $0.rev < $1.rev }) {
                id = last.id
            } else {
                return .failure(.lookup(.notFound))
            }
            let ofId = revisions.values.map(\.metadata).filter { $0.id == id }
            let lastKey = ofId.max(by: { $0.rev < $1.rev })?.pathLower
            return .success((ofId, idIndex[id] != nil, lastKey))
        }
    }

    mutating func expireRevision(_ rev: String) -> Bool {
        guard let stored = revisions[rev], let key = stored.metadata.pathLower else { return false }
        if entries[key]?.file?.rev == rev { return false }
        revisions.removeValue(forKey: rev)
        return true
    }
}
