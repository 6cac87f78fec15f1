// The reply of the OAuth token endpoint (docs/DROPBOX-API.md, "OAuth 2 with PKCE"), for the code
// exchange and refreshes.

public struct TokenGrant: Sendable, Equatable, Decodable {
    public var accessToken: String
    public var tokenType: String
    /// Seconds the access token lives; nil for long-lived tokens.
    public var expiresIn: Int?
    /// Only in the code exchange with `token_access_type=offline`; refreshes keep the old one.
    public var refreshToken: String?
    public var scope: String?
    public var accountId: String?
    public var uid: String?

    public init(
        accessToken: String, tokenType: String = "bearer", expiresIn: Int? = nil, refreshToken: String? = nil,
        scope: String? = nil, accountId: String? = nil, uid: String? = nil
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.scope = scope
        self.accountId = accountId
        self.uid = uid
    }

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case refreshToken = "refresh_token"
        case scope
        case accountId = "account_id"
        case uid
    }
}
