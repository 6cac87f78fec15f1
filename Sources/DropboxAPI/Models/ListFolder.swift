// Arguments and results of files/list_folder, list_folder/continue, get_latest_cursor and longpoll.

public struct ListFolderArg: Sendable, Equatable, Encodable {
    /// "" for the root, "/a/b", "id:..." or "ns:...". Never "/".
    public var path: String
    public var recursive: Bool
    /// Approximate page size, 1...2000.
    public var limit: UInt32?
    public var includeDeleted: Bool
    public var includeMountedFolders: Bool
    public var includeNonDownloadableFiles: Bool
    /// Lists inside this shared link: `path` is then relative to the link's root ("" or "/a/b"),
    /// and `recursive` must be false (Dropbox lists links one folder at a time).
    public var sharedLink: SharedLinkArg?

    public init(
        path: String, recursive: Bool = false, limit: UInt32? = 2000, includeDeleted: Bool = false,
        includeMountedFolders: Bool = true, includeNonDownloadableFiles: Bool = true, sharedLink: SharedLinkArg? = nil
    ) {
        self.sharedLink = sharedLink
        self.path = path
        self.recursive = recursive
        self.limit = limit
        self.includeDeleted = includeDeleted
        self.includeMountedFolders = includeMountedFolders
        self.includeNonDownloadableFiles = includeNonDownloadableFiles
    }

    enum CodingKeys: String, CodingKey {
        case path, recursive, limit
        case includeDeleted = "include_deleted"
        case includeMountedFolders = "include_mounted_folders"
        case includeNonDownloadableFiles = "include_non_downloadable_files"
        case sharedLink = "shared_link"
    }
}

public struct ListFolderResult: Sendable, Equatable {
    public var entries: [Metadata]
    public var cursor: String
    public var hasMore: Bool
    /// Entries the server sent that could not be decoded (unknown tag, missing field). They are
    /// dropped so one odd entry never fails a whole listing; the count lets callers log it.
    public var undecodableEntries: Int

    public init(entries: [Metadata], cursor: String, hasMore: Bool, undecodableEntries: Int = 0) {
        self.entries = entries
        self.cursor = cursor
        self.hasMore = hasMore
        self.undecodableEntries = undecodableEntries
    }
}

extension ListFolderResult: Decodable {
    enum CodingKeys: String, CodingKey {
        case entries, cursor
        case hasMore = "has_more"
    }

    /// Decodes one entry without failing the array.
    private struct LossyEntry: Decodable {
        var value: Metadata?
        init(from decoder: any Decoder) throws {
            value = try? Metadata(from: decoder)
        }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let lossy = try c.decode([LossyEntry].self, forKey: .entries)
        var entries = [Metadata]()
        entries.reserveCapacity(lossy.count)
        for item in lossy {
            if let value = item.value { entries.append(value) }
        }
        self.entries = entries
        self.undecodableEntries = lossy.count - entries.count
        self.cursor = try c.decode(String.self, forKey: .cursor)
        self.hasMore = try c.decode(Bool.self, forKey: .hasMore)
    }
}

public struct LongpollResult: Sendable, Equatable, Decodable {
    public var changes: Bool
    /// Seconds to wait before the next longpoll, when the server asks for it.
    public var backoff: Int?

    public init(changes: Bool, backoff: Int? = nil) {
        self.changes = changes
        self.backoff = backoff
    }

    private enum CodingKeys: String, CodingKey { case changes, backoff }

    /// `backoff` is bounded by ServerLimits.maxLongpollBackoff as it is decoded; one that is not an
    /// integer (a fraction, or past Int) counts as the maximum.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        changes = try c.decode(Bool.self, forKey: .changes)
        let absent = try !c.contains(.backoff) || c.decodeNil(forKey: .backoff)
        if absent {
            backoff = nil
        } else if let seconds = try? c.decode(Int.self, forKey: .backoff) {
            backoff = ServerLimits.longpollBackoff(seconds)
        } else {
            backoff = ServerLimits.longpollBackoff(Int.max)
        }
    }
}
