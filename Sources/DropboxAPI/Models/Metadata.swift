// Typed Dropbox metadata (docs/DROPBOX-API.md, "Metadata"): the fields a filesystem uses, decoded
// from the ".tag"-discriminated JSON union. Unknown fields are ignored and optional fields may be
// absent or null, as the Stone serializer allows ("Decoding rules").

/// One entry of a listing or a metadata reply.
public enum Metadata: Sendable, Equatable {
    case file(FileMetadata)
    case folder(FolderMetadata)
    case deleted(DeletedMetadata)

    public var name: String {
        switch self {
        case .file(let f): return f.name
        case .folder(let f): return f.name
        case .deleted(let d): return d.name
        }
    }

    public var pathLower: String? {
        switch self {
        case .file(let f): return f.pathLower
        case .folder(let f): return f.pathLower
        case .deleted(let d): return d.pathLower
        }
    }

    public var pathDisplay: String? {
        switch self {
        case .file(let f): return f.pathDisplay
        case .folder(let f): return f.pathDisplay
        case .deleted(let d): return d.pathDisplay
        }
    }
}

public struct FileMetadata: Sendable, Equatable {
    public var name: String
    public var id: String
    public var pathLower: String?
    public var pathDisplay: String?
    public var clientModified: DropboxTimestamp
    public var serverModified: DropboxTimestamp
    public var rev: String
    public var size: UInt64
    public var contentHash: ContentHash?
    public var isDownloadable: Bool
    /// Set when the entry is a symlink (`symlink_info.target`).
    public var symlinkTarget: String?
    /// `export_info.export_as` for files that can only be exported (Paper, Google docs).
    public var exportAs: String?
    /// `sharing_info.read_only`, when the file lives in a shared folder.
    public var sharedReadOnly: Bool?
    /// `sharing_info.modified_by`: the account id of who stored this revision, when Dropbox says
    /// (files in shared folders). Decoded from list_revisions only (Revisions.swift), never from
    /// listings, whose entries the tree keeps without it.
    public var modifiedBy: String?

    public init(
        name: String, id: String, pathLower: String?, pathDisplay: String?,
        clientModified: DropboxTimestamp, serverModified: DropboxTimestamp, rev: String, size: UInt64,
        contentHash: ContentHash? = nil, isDownloadable: Bool = true, symlinkTarget: String? = nil,
        exportAs: String? = nil, sharedReadOnly: Bool? = nil, modifiedBy: String? = nil
    ) {
        self.name = name
        self.id = id
        self.pathLower = pathLower
        self.pathDisplay = pathDisplay
        self.clientModified = clientModified
        self.serverModified = serverModified
        self.rev = rev
        self.size = size
        self.contentHash = contentHash
        self.isDownloadable = isDownloadable
        self.symlinkTarget = symlinkTarget
        self.exportAs = exportAs
        self.sharedReadOnly = sharedReadOnly
        self.modifiedBy = modifiedBy
    }
}

public struct FolderMetadata: Sendable, Equatable {
    public var name: String
    public var id: String
    public var pathLower: String?
    public var pathDisplay: String?
    public var sharedFolderId: String?
    /// `sharing_info.read_only`, `traverse_only`, `no_access` for shared folders.
    public var sharedReadOnly: Bool?
    public var traverseOnly: Bool
    public var noAccess: Bool

    public init(
        name: String, id: String, pathLower: String?, pathDisplay: String?, sharedFolderId: String? = nil,
        sharedReadOnly: Bool? = nil, traverseOnly: Bool = false, noAccess: Bool = false
    ) {
        self.name = name
        self.id = id
        self.pathLower = pathLower
        self.pathDisplay = pathDisplay
        self.sharedFolderId = sharedFolderId
        self.sharedReadOnly = sharedReadOnly
        self.traverseOnly = traverseOnly
        self.noAccess = noAccess
    }
}

/// A deletion: carries no `id`, only paths and the name.
public struct DeletedMetadata: Sendable, Equatable {
    public var name: String
    public var pathLower: String?
    public var pathDisplay: String?

    public init(name: String, pathLower: String?, pathDisplay: String?) {
        self.name = name
        self.pathLower = pathLower
        self.pathDisplay = pathDisplay
    }
}

extension Metadata: Decodable {
    fileprivate enum Keys: String, CodingKey {
        case tag = ".tag"
        case name, id, rev, size
        case pathLower = "path_lower"
        case pathDisplay = "path_display"
        case clientModified = "client_modified"
        case serverModified = "server_modified"
        case contentHash = "content_hash"
        case isDownloadable = "is_downloadable"
        case symlinkInfo = "symlink_info"
        case exportInfo = "export_info"
        case sharingInfo = "sharing_info"
    }

    fileprivate struct SymlinkInfo: Decodable {
        var target: String
    }

    fileprivate struct ExportInfo: Decodable {
        var exportAs: String?
        enum CodingKeys: String, CodingKey { case exportAs = "export_as" }
    }

    fileprivate struct SharingInfo: Decodable {
        var readOnly: Bool?
        var sharedFolderId: String?
        var traverseOnly: Bool?
        var noAccess: Bool?
        enum CodingKeys: String, CodingKey {
            case readOnly = "read_only"
            case sharedFolderId = "shared_folder_id"
            case traverseOnly = "traverse_only"
            case noAccess = "no_access"
        }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        let tag = try c.decode(String.self, forKey: .tag)
        let name = try c.decode(String.self, forKey: .name)
        let pathLower = try c.decodeIfPresent(String.self, forKey: .pathLower)
        let pathDisplay = try c.decodeIfPresent(String.self, forKey: .pathDisplay)
        switch tag {
        case "file":
            self = .file(try FileMetadata(from: decoder))
        case "folder":
            let sharing = try c.decodeIfPresent(SharingInfo.self, forKey: .sharingInfo)
            self = .folder(
                FolderMetadata(
                    name: name,
                    id: try c.decode(String.self, forKey: .id),
                    pathLower: pathLower,
                    pathDisplay: pathDisplay,
                    sharedFolderId: sharing?.sharedFolderId,
                    sharedReadOnly: sharing?.readOnly,
                    traverseOnly: sharing?.traverseOnly ?? false,
                    noAccess: sharing?.noAccess ?? false))
        case "deleted":
            self = .deleted(DeletedMetadata(name: name, pathLower: pathLower, pathDisplay: pathDisplay))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .tag, in: c, debugDescription: "unknown metadata tag \(tag)")
        }
    }
}

/// A FileMetadata struct on its own, as in `Dropbox-API-Result` of files/download: the `.tag` may
/// be absent there, since the result type is the struct rather than the Metadata union.
extension FileMetadata: Decodable {
    public init(from decoder: any Decoder) throws {
        typealias Keys = Metadata.Keys
        let c = try decoder.container(keyedBy: Keys.self)
        let sharing = try c.decodeIfPresent(Metadata.SharingInfo.self, forKey: .sharingInfo)
        let size = try c.decode(UInt64.self, forKey: .size)
        guard size <= ServerLimits.maxFileSize else {
            throw DecodingError.dataCorruptedError(
                forKey: .size, in: c, debugDescription: "size \(size) is above \(ServerLimits.maxFileSize)")
        }
        self.init(
            name: try c.decode(String.self, forKey: .name),
            id: try c.decode(String.self, forKey: .id),
            pathLower: try c.decodeIfPresent(String.self, forKey: .pathLower),
            pathDisplay: try c.decodeIfPresent(String.self, forKey: .pathDisplay),
            clientModified: try c.decode(DropboxTimestamp.self, forKey: .clientModified),
            serverModified: try c.decode(DropboxTimestamp.self, forKey: .serverModified),
            rev: try c.decode(String.self, forKey: .rev),
            size: size,
            contentHash: try c.decodeIfPresent(ContentHash.self, forKey: .contentHash),
            isDownloadable: try c.decodeIfPresent(Bool.self, forKey: .isDownloadable) ?? true,
            symlinkTarget: try c.decodeIfPresent(Metadata.SymlinkInfo.self, forKey: .symlinkInfo)?.target,
            exportAs: try c.decodeIfPresent(Metadata.ExportInfo.self, forKey: .exportInfo)?.exportAs,
            sharedReadOnly: sharing?.readOnly)
    }
}
