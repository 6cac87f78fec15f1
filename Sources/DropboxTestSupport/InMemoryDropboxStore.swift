// The state of the in-memory Dropbox account: entries keyed by path_lower with a children index,
// ids, every file revision ever stored, the change journal that list_folder/continue replays, and
// the adversarial modes with their seed and path folding. It is a plain value; InMemoryDropbox keeps
// it in a Mutex and calls its mutating methods. All lookups are dictionary lookups, so a tree of
// 100,000 entries lists in linear time.

import DropboxAPI

/// One live entry.
struct StoredEntry: Sendable {
    /// `.file` or `.folder`, with the current paths.
    var metadata: Metadata
    /// Files only.
    var content: FileContent?

    var isFolder: Bool {
        if case .folder = metadata { return true }
        return false
    }

    var file: FileMetadata? {
        if case .file(let file) = metadata { return file }
        return nil
    }
}

/// A list_folder listing of several pages, served page by page by continue.
struct ListingSnapshot: Sendable {
    /// The entries in the order served, repeats included.
    var entries: [Metadata]
    /// Where each page starts in `entries` when pages are irregular (adversarial modes); the
    /// cursor's offset is then a page number. nil: every page but the last holds `limit` entries
    /// and the cursor's offset is an entry offset.
    var pageStarts: [Int]?

    init(entries: [Metadata], pageStarts: [Int]? = nil) {
        self.entries = entries
        self.pageStarts = pageStarts
    }
}

/// One stored revision of a file; old revisions stay downloadable with "rev:...".
struct StoredRevision: Sendable {
    var metadata: FileMetadata
    var content: FileContent
}

struct InMemoryDropboxStore: Sendable {
    /// Live entries by path_lower. The root ("") is implicit and never stored here.
    var entries: [String: StoredEntry] = [:]
    /// Child keys by folder key; the root's children are under "".
    var children: [String: Set<String>] = ["": []]
    /// path_lower by id.
    var idIndex: [String: String] = [:]
    var revisions: [String: StoredRevision] = [:]
    /// Revisions whose downloads answer restricted_content (InMemoryDropboxAccess.swift).
    var restrictedRevisions: Set<String> = []
    /// Sum of the sizes of live files (users/get_space_usage).
    var usedBytes: UInt64 = 0
    /// What list_folder with include_deleted reports: a `deleted` entry for every path that held an
    /// entry and holds none now.
    var tombstones: [String: DeletedMetadata] = [:]
    /// When a file at each path_lower was last deleted (or moved away): list_revisions'
    /// `server_deleted`.
    var deletedAt: [String: DropboxTimestamp] = [:]

    /// Every change gets the next sequence number; `journal` holds the changes a cursor may still
    /// ask for: the last `journal.count` of them, ending at `headSeq`.
    var headSeq = 0
    var journal: [Metadata] = []
    /// Until a cursor exists no one can ask for changes, so building a large tree keeps no journal.
    var cursorIssued = false
    /// Bumped by resetCursors(); a cursor from an older epoch gets `reset`.
    var epoch = 0
    /// Listing snapshots by id: the entries of a list_folder call of several pages, served page by
    /// page; only the last `keptSnapshots` are kept.
    var snapshots: [Int: ListingSnapshot] = [:]
    var nextSnapshot = 0

    /// Whether deleting a folder also journals a `deleted` entry for each descendant.
    var reportsDeletedChildren = false
    /// The adversarial modes on; every random choice they make derives from `adversarialSeed`.
    var adversarial: AdversarialModes = []
    var adversarialSeed: UInt64 = 1
    /// How display paths fold into keys: the client's folding, or another with the `fold` mode.
    var folding: PathFolding = .client
    /// The account's root and home namespace ids, which "ns:" paths may name.
    var namespaceIds: Set<String> = []
    /// The account id stamped on cursors when this account is one of several
    /// (InMemoryDropboxAccounts); a cursor with another stamp is `reset`. Nil alone.
    var cursorAccount: String?
    /// Shared links by URL (InMemoryDropboxLinks.swift).
    var links: [String: StoredLink] = [:]
    /// Folders shared with the account, in the order shared (InMemoryDropboxSharedFolders.swift).
    var sharedFolders: [StoredSharedFolder] = []

    private var nextId = 0
    /// The last revision number made (a shared folder's namespace starts its own far above).
    var nextRev = 0
    /// server_modified of the next change; starts in the past (clients distrust future times).
    private var clock: Int64 = 1_700_000_000

    mutating func makeId() -> String {
        nextId += 1
        let digits = String(nextId)
        return "id:fake" + String(repeating: "0", count: max(0, 15 - digits.count)) + digits
    }

    /// A new revision name: 12 lowercase hex digits, unique for the lifetime of the account.
    mutating func makeRev() -> String {
        nextRev += 1
        let digits = String(nextRev, radix: 16)
        return "5" + String(repeating: "0", count: max(0, 11 - digits.count)) + digits
    }

    /// The time of the latest change, without advancing the clock.
    var now: DropboxTimestamp { DropboxTimestamp(secondsSinceEpoch: clock) }

    mutating func tick() -> DropboxTimestamp {
        clock += 1
        return DropboxTimestamp(secondsSinceEpoch: clock)
    }

    mutating func record(_ change: Metadata) {
        headSeq += 1
        if cursorIssued { journal.append(change) }
    }

    /// The changes after `seq`, or nil when the journal no longer reaches back that far.
    func changes(after seq: Int) -> ArraySlice<Metadata>? {
        let firstSeq = headSeq - journal.count + 1
        guard seq + 1 >= firstSeq, seq <= headSeq else { return nil }
        return journal[(seq + 1 - firstSeq)...]
    }

    /// The key (path_lower) of a display path, in the store's folding.
    func key(_ path: String) -> String {
        folding.key(path)
    }

    func displayPath(of key: String) -> String {
        key.isEmpty ? "" : entries[key]?.metadata.pathDisplay ?? key
    }

    /// Keys of `key`'s children, sorted so listings are deterministic.
    func sortedChildren(of key: String) -> [String] {
        (children[key] ?? []).sorted()
    }

    /// `key` and everything below it, each folder before its children.
    func subtree(_ key: String) -> [String] {
        var out = [String]()
        var stack = [key]
        while let next = stack.popLast() {
            out.append(next)
            stack.append(contentsOf: sortedChildren(of: next).reversed())
        }
        return out
    }

    /// Stores an entry under its parent (which must exist) and indexes it.
    mutating func insert(_ entry: StoredEntry, at key: String, id: String) {
        entries[key] = entry
        tombstones[key] = nil
        children[DropboxPath.parent(of: key), default: []].insert(key)
        if entry.isFolder, children[key] == nil { children[key] = [] }
        idIndex[id] = key
        usedBytes += entry.file?.size ?? 0
    }

    /// Removes `key` and its subtree from the live tree (revisions stay). Returns what was removed,
    /// parents first.
    @discardableResult
    mutating func removeSubtree(_ key: String) -> [StoredEntry] {
        guard entries[key] != nil else { return [] }
        let keys = subtree(key)
        var removed = [StoredEntry]()
        removed.reserveCapacity(keys.count)
        for k in keys {
            guard let entry = entries.removeValue(forKey: k) else { continue }
            children.removeValue(forKey: k)
            switch entry.metadata {
            case .file(let f): idIndex.removeValue(forKey: f.id)
            case .folder(let f): idIndex.removeValue(forKey: f.id)
            case .deleted: break
            }
            usedBytes -= entry.file?.size ?? 0
            tombstones[k] = DeletedMetadata(
                name: entry.metadata.name, pathLower: k, pathDisplay: entry.metadata.pathDisplay)
            if entry.file != nil { deletedAt[k] = now }
            removed.append(entry)
        }
        children[DropboxPath.parent(of: key)]?.remove(key)
        return removed
    }
}
