// A fixed access token (DROPBOXFS_ACCESS_TOKEN, --access-token-file, tests). It cannot be renewed:
// once Dropbox says it expired, every request fails with that.

public struct StaticTokenProvider: AccessTokenProvider {
    private let token: String

    public init(token: String) {
        self.token = token
    }

    public func accessToken() async throws(DropboxError) -> String { token }

    public func refreshAfterRejection(of token: String) async throws(DropboxError) -> String {
        throw .authentication(.expiredAccessToken)
    }
}
