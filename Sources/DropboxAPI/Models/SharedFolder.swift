// Shared folders (docs/DROPBOX-API.md, "Shared folders not added"): what `sharing/list_folders`
// says of each folder shared with the account. A folder the account has not added to its Dropbox
// has no `path_lower`; it is read through its own namespace (PathRoot.namespace), never mounted.

/// SharedFolderMetadata, the fields a mount reads (the rest, such as the policy, is ignored).
public struct SharedFolderMetadata: Sendable, Equatable, Decodable {
    public var name: String
    /// The folder's namespace id: its path root.
    public var sharedFolderId: String
    /// Where the account added the folder in its Dropbox; nil when it has not.
    public var pathLower: String?
    /// The account's AccessLevel tag (owner, editor, viewer, viewer_no_comment, traverse, ...).
    public var accessType: String
    public var isTeamFolder: Bool

    public init(name: String, sharedFolderId: String, pathLower: String?, accessType: String, isTeamFolder: Bool = false) {
        self.name = name
        self.sharedFolderId = sharedFolderId
        self.pathLower = pathLower
        self.accessType = accessType
        self.isTeamFolder = isTeamFolder
    }

    enum CodingKeys: String, CodingKey {
        case name
        case sharedFolderId = "shared_folder_id"
        case pathLower = "path_lower"
        case accessType = "access_type"
        case isTeamFolder = "is_team_folder"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        sharedFolderId = try c.decode(String.self, forKey: .sharedFolderId)
        pathLower = try c.decodeIfPresent(String.self, forKey: .pathLower)
        accessType = try c.decode(UnionTag.self, forKey: .accessType).tag
        isTeamFolder = try c.decodeIfPresent(Bool.self, forKey: .isTeamFolder) ?? false
    }

    /// Whether the account has added the folder to its Dropbox (it is then in the account's tree).
    public var isAdded: Bool { pathLower != nil }
}

/// A page of `sharing/list_folders` (or its `continue`): more follow while `cursor` is set.
public struct ListSharedFoldersResult: Sendable, Equatable, Decodable {
    public var entries: [SharedFolderMetadata]
    public var cursor: String?

    public init(entries: [SharedFolderMetadata], cursor: String?) {
        self.entries = entries
        self.cursor = cursor
    }
}

/// The arguments of `sharing/list_folders`.
struct ListSharedFoldersArg: Encodable {
    var limit: Int
}

/// ListFoldersArgs.limit: 1 to 1000.
public enum SharedFolderListing {
    public static let maxLimit = 1000
}
