// Where the client gets the bearer token for each request, and a new one after Dropbox rejects it
// as expired. Implementations: StaticTokenProvider (a fixed token) and RefreshingTokenProvider
// (OAuth refresh token). A token never appears in an error or a log line.

public protocol AccessTokenProvider: Sendable {
    /// A token to send now.
    func accessToken() async throws(DropboxError) -> String
    /// A token to use instead of `token`, which Dropbox answered with 401 expired_access_token.
    func refreshAfterRejection(of token: String) async throws(DropboxError) -> String
}
