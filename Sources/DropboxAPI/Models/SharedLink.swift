// Shared links (docs/DROPBOX-API.md, "Shared links"): the link a request names (`SharedLinkArg`),
// what Dropbox says of a link or of an entry inside it (`SharedLinkMetadata`), and the errors of the
// SharedLinkError union (`SharedLinkFailure`). A link is read without being in the reader's Dropbox,
// so its entries carry no paths: callers address them by paths relative to the link's root.

/// The link of a request: its URL and, for a link with a password, the password. Never logged:
/// `description` shows neither the password nor the URL's key.
public struct SharedLinkArg: Sendable, Equatable, Encodable, CustomStringConvertible {
    public var url: String
    public var password: String?

    public init(url: String, password: String? = nil) {
        self.url = url
        self.password = password
    }

    /// The URL without its query (the `rlkey` there grants access as the URL does), for the log.
    public var description: String {
        String(url.prefix { $0 != "?" })
    }
}

/// `sharing/get_shared_link_metadata` and the `Dropbox-API-Result` of `get_shared_link_file`:
/// FileLinkMetadata or FolderLinkMetadata (another tag, such as a link to a collection, is `other`).
public struct SharedLinkMetadata: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case file(FileMetadata)
        case folder
        case other(String)
    }

    public var kind: Kind
    public var name: String
    public var id: String?
    /// When the link stops working, when it has an expiry.
    public var expires: DropboxTimestamp?

    public init(kind: Kind, name: String, id: String?, expires: DropboxTimestamp?) {
        self.kind = kind
        self.name = name
        self.id = id
        self.expires = expires
    }
}

extension SharedLinkMetadata: Decodable {
    enum Keys: String, CodingKey {
        case tag = ".tag"
        case name, id, rev, size, expires
        case clientModified = "client_modified"
        case serverModified = "server_modified"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        let tag = try c.decode(String.self, forKey: .tag)
        name = try c.decode(String.self, forKey: .name)
        id = try c.decodeIfPresent(String.self, forKey: .id)
        expires = try c.decodeIfPresent(DropboxTimestamp.self, forKey: .expires)
        switch tag {
        case "file":
            let size = try c.decode(UInt64.self, forKey: .size)
            guard size <= ServerLimits.maxFileSize else {
                throw DecodingError.dataCorruptedError(
                    forKey: .size, in: c, debugDescription: "size \(size) is above \(ServerLimits.maxFileSize)")
            }
            kind = .file(
                FileMetadata(
                    name: name, id: id ?? "", pathLower: nil, pathDisplay: nil,
                    clientModified: try c.decode(DropboxTimestamp.self, forKey: .clientModified),
                    serverModified: try c.decode(DropboxTimestamp.self, forKey: .serverModified),
                    rev: try c.decode(String.self, forKey: .rev), size: size))
        case "folder":
            kind = .folder
        default:
            kind = .other(tag)
        }
    }
}

/// The SharedLinkError union (and GetSharedLinkFileError's `shared_link_is_directory`).
public enum SharedLinkFailure: Sendable, Equatable, CustomStringConvertible {
    /// No such link, or it expired or was removed, or its target is gone: Dropbox answers all of
    /// these alike.
    case notFound
    /// The link needs a password and none or a wrong one was given, or it is not open to this
    /// account.
    case accessDenied
    /// A kind of link the API does not read (Dropbox names files/export instead).
    case unsupportedLinkType
    /// get_shared_link_file of a folder.
    case isDirectory

    init?(tag: String) {
        switch tag {
        case "shared_link_not_found": self = .notFound
        case "shared_link_access_denied": self = .accessDenied
        case "unsupported_link_type": self = .unsupportedLinkType
        case "shared_link_is_directory": self = .isDirectory
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .notFound: return "the shared link was not found (it expired, was removed, or the URL is wrong)"
        case .accessDenied: return "the shared link refused access (wrong or missing password, or not open to this account)"
        case .unsupportedLinkType: return "this kind of shared link cannot be read through the Dropbox API"
        case .isDirectory: return "the shared link's entry is a folder"
        }
    }
}
