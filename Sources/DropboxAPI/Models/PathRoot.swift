// Which namespace paths are relative to (the `Dropbox-API-Path-Root` header, docs/DROPBOX-API.md,
// "Path root"): without it, a team-space member sees only their own folder; with the team's root
// namespace they see the team space, where their folder sits at `root_info.home_path` beside the
// team folders. A folder shared with the member but not added to their Dropbox is read with its
// own namespace as the root (`namespace_id`): "" is then the shared folder itself.

public enum PathRoot: Sendable, Equatable {
    /// The member's own folder (the default; no header is sent).
    case home
    /// The namespace given, which must be the user's current root (else 422 `invalid_root`).
    case root(namespaceId: String)
    /// Any namespace the user may read, such as a shared folder not added (else 422
    /// `no_permission`).
    case namespace(String)

    /// The header value, or nil when none is sent.
    var headerValue: String? {
        switch self {
        case .home: return nil
        case .root(let namespace): return try? ArgEncoding.headerJSON(RootArg(root: namespace))
        case .namespace(let namespace): return try? ArgEncoding.headerJSON(NamespaceArg(namespaceId: namespace))
        }
    }

    private struct NamespaceArg: Encodable {
        let tag = "namespace_id"
        let namespaceId: String
        enum CodingKeys: String, CodingKey {
            case tag = ".tag"
            case namespaceId = "namespace_id"
        }
    }

    private struct RootArg: Encodable {
        let tag = "root"
        let root: String
        enum CodingKeys: String, CodingKey {
            case tag = ".tag"
            case root
        }
    }

    /// The root a mount shows for an account: the team space when the account has one (its root
    /// namespace differs from the home namespace), unless only the home folder is wanted.
    public static func forAccount(_ rootInfo: RootInfo, homeOnly: Bool) -> PathRoot {
        guard !homeOnly, rootInfo.rootNamespaceId != rootInfo.homeNamespaceId else { return .home }
        return .root(namespaceId: rootInfo.rootNamespaceId)
    }
}
