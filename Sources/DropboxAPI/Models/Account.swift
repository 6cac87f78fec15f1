// users/get_current_account and users/get_space_usage results (docs/DROPBOX-API.md, "Account and
// space usage").

public struct FullAccount: Sendable, Equatable {
    public var accountId: String
    public var displayName: String
    public var email: String
    public var accountType: String
    public var rootInfo: RootInfo

    public init(accountId: String, displayName: String, email: String, accountType: String, rootInfo: RootInfo) {
        self.accountId = accountId
        self.displayName = displayName
        self.email = email
        self.accountType = accountType
        self.rootInfo = rootInfo
    }
}

public struct RootInfo: Sendable, Equatable {
    /// "user" or "team".
    public var tag: String
    public var rootNamespaceId: String
    public var homeNamespaceId: String
    public var homePath: String?

    public init(tag: String, rootNamespaceId: String, homeNamespaceId: String, homePath: String? = nil) {
        self.tag = tag
        self.rootNamespaceId = rootNamespaceId
        self.homeNamespaceId = homeNamespaceId
        self.homePath = homePath
    }
}

extension FullAccount: Decodable {
    private enum Keys: String, CodingKey {
        case accountId = "account_id"
        case name, email
        case accountType = "account_type"
        case rootInfo = "root_info"
    }

    private struct Name: Decodable {
        var displayName: String
        enum CodingKeys: String, CodingKey { case displayName = "display_name" }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        accountId = try c.decode(String.self, forKey: .accountId)
        displayName = try c.decode(Name.self, forKey: .name).displayName
        email = try c.decode(String.self, forKey: .email)
        // Only shown to the user: `{".tag": "pro"}` or the bare "pro"; absent is "basic", and a
        // shape not understood is "unknown" rather than a failed mount.
        do {
            accountType = try c.decodeIfPresent(UnionTag.self, forKey: .accountType)?.tag ?? "basic"
        } catch {
            accountType = "unknown"
        }
        rootInfo = try c.decode(RootInfo.self, forKey: .rootInfo)
    }
}

extension RootInfo: Decodable {
    private enum Keys: String, CodingKey {
        case tag = ".tag"
        case rootNamespaceId = "root_namespace_id"
        case homeNamespaceId = "home_namespace_id"
        case homePath = "home_path"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        tag = try c.decode(String.self, forKey: .tag)
        rootNamespaceId = try c.decode(String.self, forKey: .rootNamespaceId)
        homeNamespaceId = try c.decode(String.self, forKey: .homeNamespaceId)
        homePath = try c.decodeIfPresent(String.self, forKey: .homePath)
    }
}

public struct SpaceUsage: Sendable, Equatable {
    public enum Allocation: Sendable, Equatable {
        case individual(allocated: UInt64)
        /// `userLimit` is `user_within_team_space_allocated`; 0 means no per-user limit.
        case team(used: UInt64, allocated: UInt64, userLimit: UInt64)
        case other(String)
    }

    public var used: UInt64
    public var allocation: Allocation

    public init(used: UInt64, allocation: Allocation) {
        self.used = used
        self.allocation = allocation
    }

    /// Bytes this user may use in total, or nil when the server gives no bound.
    public var effectiveLimit: UInt64? {
        switch allocation {
        case .individual(let allocated): return allocated
        case .team(_, let allocated, let userLimit): return userLimit > 0 ? userLimit : allocated
        case .other: return nil
        }
    }

    /// Bytes counted against `effectiveLimit`.
    public var effectiveUsed: UInt64 {
        switch allocation {
        case .team(let teamUsed, _, let userLimit): return userLimit > 0 ? used : teamUsed
        default: return used
        }
    }
}

extension SpaceUsage: Decodable {
    private enum Keys: String, CodingKey { case used, allocation }
    private enum AllocationKeys: String, CodingKey {
        case tag = ".tag"
        case allocated, used
        case userAllocated = "user_within_team_space_allocated"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        used = try c.decode(UInt64.self, forKey: .used)
        let a = try c.nestedContainer(keyedBy: AllocationKeys.self, forKey: .allocation)
        let tag = try a.decode(String.self, forKey: .tag)
        switch tag {
        case "individual":
            allocation = .individual(allocated: try a.decode(UInt64.self, forKey: .allocated))
        case "team":
            allocation = .team(
                used: try a.decode(UInt64.self, forKey: .used),
                allocated: try a.decode(UInt64.self, forKey: .allocated),
                userLimit: try a.decodeIfPresent(UInt64.self, forKey: .userAllocated) ?? 0)
        default:
            allocation = .other(tag)
        }
    }
}
