// Which namespace paths are relative to (the `Dropbox-API-Path-Root` header, docs/DROPBOX-API.md,
// "Path root"): without it, a team-space member sees only their own folder; with the team's root
// namespace they see the team space, where their folder sits at `root_info.home_path` beside the
// team folders.

public enum PathRoot: Sendable, Equatable {
    /// The member's own folder (the default; no header is sent).
    case home
    /// The namespace given, which must be the user's current root (else 422 `invalid_root`).
    case root(namespaceId: String)

    /// The header value, or nil when none is sent.
    var headerValue: String? {
        switch self {
        case .home: return nil
        case .root(let namespace): return try? ArgEncoding.headerJSON(RootArg(root: namespace))
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
