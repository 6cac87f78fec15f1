// Argument and result of files/list_revisions: a file's earlier versions, newest first
// (docs/DROPBOX-API.md, "History"). Path mode lists every revision that lived at the path, even
// across a delete and re-create, and pages with `before_rev`; id mode follows one file across
// moves and renames but cannot page. Old bytes are read with files/download of "rev:<rev>".

/// How list_revisions finds the revisions: by the path, or by the file id across moves.
public enum ListRevisionsMode: String, Sendable, Equatable {
    case path
    case id
}

public struct ListRevisionsArg: Sendable, Equatable, Encodable {
    /// Dropbox's bound on `limit`.
    public static let maxLimit = 100

    /// "/a/b" or "id:..." (a deleted file is still found by its path).
    public var path: String
    public var mode: ListRevisionsMode
    /// 1...100 revisions per call.
    public var limit: Int
    /// Path mode only: the revisions older than this one (the last of the previous page).
    public var beforeRev: String?

    public init(path: String, mode: ListRevisionsMode = .path, limit: Int = 10, beforeRev: String? = nil) {
        self.path = path
        self.mode = mode
        self.limit = min(max(limit, 1), Self.maxLimit)
        self.beforeRev = beforeRev
    }

    enum CodingKeys: String, CodingKey {
        case path, mode, limit
        case beforeRev = "before_rev"
    }

    private struct Tag: Encodable {
        var tag: String
        enum CodingKeys: String, CodingKey { case tag = ".tag" }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encode(Tag(tag: mode.rawValue), forKey: .mode)
        try c.encode(limit, forKey: .limit)
        try c.encodeIfPresent(beforeRev, forKey: .beforeRev)
    }
}

public struct ListRevisionsResult: Sendable, Equatable {
    /// No file lives at the path (path mode) or under the id (id mode) now.
    public var isDeleted: Bool
    /// When it was deleted, if it is.
    public var serverDeleted: DropboxTimestamp?
    /// Revisions newest first; Dropbox lists only those it still keeps.
    public var entries: [FileMetadata]
    /// More, older revisions follow (ask again with `beforeRev` = the last entry's rev).
    public var hasMore: Bool

    public init(isDeleted: Bool, serverDeleted: DropboxTimestamp?, entries: [FileMetadata], hasMore: Bool) {
        self.isDeleted = isDeleted
        self.serverDeleted = serverDeleted
        self.entries = entries
        self.hasMore = hasMore
    }
}

extension ListRevisionsResult: Decodable {
    enum CodingKeys: String, CodingKey {
        case entries
        case isDeleted = "is_deleted"
        case serverDeleted = "server_deleted"
        case hasMore = "has_more"
    }

    /// Who stored a revision: `sharing_info.modified_by`, when Dropbox says.
    private struct ModifiedBy: Decodable {
        struct Sharing: Decodable {
            var modifiedBy: String?
            enum CodingKeys: String, CodingKey { case modifiedBy = "modified_by" }
        }
        var sharing: Sharing?
        enum CodingKeys: String, CodingKey { case sharing = "sharing_info" }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var entries = try c.decode([FileMetadata].self, forKey: .entries)
        let who = (try? c.decode([ModifiedBy].self, forKey: .entries)) ?? []
        for (index, entry) in who.enumerated() where index < entries.count {
            entries[index].modifiedBy = entry.sharing?.modifiedBy
        }
        self.init(
            isDeleted: try c.decode(Bool.self, forKey: .isDeleted),
            serverDeleted: try c.decodeIfPresent(DropboxTimestamp.self, forKey: .serverDeleted),
            entries: entries, hasMore: try c.decodeIfPresent(Bool.self, forKey: .hasMore) ?? false)
    }
}
