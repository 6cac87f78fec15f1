// list_folder, list_folder/continue, get_latest_cursor and the longpoll check of the in-memory
// Dropbox (docs/DROPBOX-API.md, "list_folder", "Delta semantics"). A list_folder call snapshots its
// entries (a folder always before its children; a recursive listing of a non-root folder starts
// with the folder itself; with include_deleted, `deleted` entries for what was deleted there after
// the live ones) and serves them page by page; once has_more is false, continue replays the journal
// from the cursor's position, filtered to the cursor's folder (direct children only when not
// recursive). With adversarial modes on, the listing and the change pages are laid out unkindly
// instead (InMemoryDropboxAdversarial*.swift); with none, nothing here changes.

import DropboxAPI

extension InMemoryDropboxStore {
    /// The page size when ListFolderArg.limit is nil (the real default is undocumented).
    static let defaultLimit = 500
    /// How many paged listings can be continued at once; continuing an older one gets `reset`.
    static let keptSnapshots = 256

    mutating func listFolder(_ arg: ListFolderArg) -> Result<ListFolderResult, DropboxError> {
        let start: ListingCursor
        switch newCursor(arg) {
        case .success(let cursor): start = cursor
        case .failure(let error): return .failure(error)
        }
        if let denied = accessFailure(listing: start.scope) { return .failure(denied) }
        let deleted = arg.includeDeleted ? tombstones(in: start) : []
        if !adversarial.isDisjoint(with: Self.listingModes) {
            return .success(adversarialListing(start, deleted: deleted))
        }
        var keys = start.recursive ? subtree(start.scope) : sortedChildren(of: start.scope)
        if start.recursive, start.scope.isEmpty { keys.removeFirst() }
        var listed = [Metadata]()
        listed.reserveCapacity(keys.count)
        for key in keys {
            guard let metadata = entries[key]?.metadata else { continue }
            if start.hidesNonDownloadable, Self.isNonDownloadable(metadata) { continue }
            listed.append(metadata)
        }
        listed += deleted
        var cursor = start
        if listed.count > cursor.limit {
            // Only a listing of several pages needs its snapshot kept for continue.
            let id = nextSnapshot
            nextSnapshot += 1
            snapshots[id] = ListingSnapshot(entries: listed)
            snapshots.removeValue(forKey: id - Self.keptSnapshots)
            cursor.snapshot = id
        }
        return .success(page(of: ListingSnapshot(entries: listed), at: cursor))
    }

    func listFolderContinue(cursor text: String) -> Result<ListFolderResult, DropboxError> {
        guard let cursor = ListingCursor(decoding: text) else {
            return .failure(.badRequest(message: "cursor: not a cursor this server issued"))
        }
        guard cursor.epoch == epoch, cursor.account == cursorAccount else { return .failure(.cursorReset) }
        if let snapshot = cursor.snapshot {
            guard let listed = snapshots[snapshot] else { return .failure(.cursorReset) }
            return .success(page(of: listed, at: cursor))
        }
        if !cursor.scope.isEmpty {
            guard let entry = entries[cursor.scope] else { return .failure(.lookup(.notFound)) }
            guard entry.isFolder else { return .failure(.lookup(.notFolder)) }
        }
        guard let changes = changes(after: cursor.seq) else { return .failure(.cursorReset) }
        if !adversarial.isDisjoint(with: Self.changePageModes) {
            return .success(adversarialChangePage(changes, cursor: cursor))
        }
        var out = [Metadata]()
        var hasMore = false
        // Entries outside the scope are passed over too, so the cursor moves past them.
        var examined = 0
        for change in changes {
            if Self.belongs(change, to: cursor) {
                if out.count == cursor.limit {
                    hasMore = true
                    break
                }
                out.append(change)
            }
            examined += 1
        }
        var next = cursor
        next.seq = cursor.seq + examined
        return .success(ListFolderResult(entries: out, cursor: next.encoded, hasMore: hasMore))
    }

    /// With `include_deleted`, the `deleted` entries for what used to exist in the listing's scope
    /// and does not now, after the live entries, sorted.
    func tombstones(in cursor: ListingCursor) -> [Metadata] {
        tombstones.filter { key, _ in
            cursor.recursive
                ? key != cursor.scope && DropboxPath.isWithin(key, cursor.scope)
                : DropboxPath.parent(of: key) == cursor.scope
        }
        .sorted { $0.key < $1.key }.map { .deleted($0.value) }
    }

    mutating func latestCursor(_ arg: ListFolderArg) -> Result<String, DropboxError> {
        newCursor(arg).map(\.encoded)
    }

    /// Whether a longpoll on `text` should report changes: more pages, or a journal entry after the
    /// cursor that touches its folder, something inside it, or one of its ancestors.
    func hasChanges(cursor text: String) -> Result<Bool, DropboxError> {
        guard let cursor = ListingCursor(decoding: text) else {
            return .failure(.badRequest(message: "cursor: not a cursor this server issued"))
        }
        guard cursor.epoch == epoch, cursor.account == cursorAccount else { return .failure(.cursorReset) }
        if cursor.snapshot != nil { return .success(true) }
        guard let changes = changes(after: cursor.seq) else { return .failure(.cursorReset) }
        return .success(
            changes.contains { change in
                guard let key = change.pathLower else { return false }
                return Self.belongs(change, to: cursor) || DropboxPath.isWithin(cursor.scope, key)
            })
    }

    /// Validates a ListFolderArg and makes a cursor at the journal head for it.
    private mutating func newCursor(_ arg: ListFolderArg) -> Result<ListingCursor, DropboxError> {
        let limit: Int
        switch arg.limit {
        case nil: limit = Self.defaultLimit
        case .some(let value) where (1...2000).contains(value): limit = Int(value)
        case .some(let value): return .failure(.badRequest(message: "limit: \(value) is not in 1...2000"))
        }
        let scope: String
        switch resolveFolder(arg.path) {
        case .success(let key): scope = key
        case .failure(let error): return .failure(error)
        }
        cursorIssued = true
        var cursor = ListingCursor(
            epoch: epoch, scope: scope, recursive: arg.recursive, limit: limit,
            hidesNonDownloadable: !arg.includeNonDownloadableFiles, seq: headSeq)
        cursor.account = cursorAccount
        return .success(cursor)
    }

    /// The page of a snapshot at `cursor.offset`; the last page hands back a cursor at the
    /// snapshot's journal position, from which continue reports changes.
    func page(of snapshot: ListingSnapshot, at cursor: ListingCursor) -> ListFolderResult {
        let listed = snapshot.entries
        let start: Int
        let end: Int
        let hasMore: Bool
        var next = cursor
        if let starts = snapshot.pageStarts {
            let index = min(cursor.offset, starts.count - 1)
            hasMore = index + 1 < starts.count
            start = starts[index]
            end = hasMore ? starts[index + 1] : listed.count
            next.offset = index + 1
        } else {
            start = min(cursor.offset, listed.count)
            end = min(start + cursor.limit, listed.count)
            hasMore = end < listed.count
            next.offset = end
        }
        if !hasMore {
            next.snapshot = nil
            next.offset = 0
        }
        return ListFolderResult(entries: Array(listed[start..<end]), cursor: next.encoded, hasMore: hasMore)
    }

    /// Whether continue on `cursor` reports `change`.
    static func belongs(_ change: Metadata, to cursor: ListingCursor) -> Bool {
        guard let key = change.pathLower else { return false }
        if cursor.hidesNonDownloadable, isNonDownloadable(change) { return false }
        if cursor.recursive { return DropboxPath.isWithin(key, cursor.scope) }
        return DropboxPath.parent(of: key) == cursor.scope
    }

    static func isNonDownloadable(_ metadata: Metadata) -> Bool {
        if case .file(let file) = metadata { return !file.isDownloadable }
        return false
    }

    /// The key of the folder an API path names.
    func resolveFolder(_ path: String) -> Result<String, DropboxError> {
        switch DropboxPath.parse(path, folding: folding, namespaces: namespaceIds) {
        case .failure(let error): return .failure(error)
        case .success(.root): return .success("")
        case .success(.rev): return .failure(DropboxPath.patternMismatch(path))  // list paths take no revision
        case .success(.key(let key)): return folder(at: key)
        case .success(.id(let id, let rest)):
            guard let base = idIndex[id] else { return .failure(.lookup(.notFound)) }
            return folder(at: base + rest)
        }
    }

    private func folder(at key: String) -> Result<String, DropboxError> {
        guard let entry = entries[key] else { return .failure(.lookup(.notFound)) }
        return entry.isFolder ? .success(key) : .failure(.lookup(.notFolder))
    }
}
