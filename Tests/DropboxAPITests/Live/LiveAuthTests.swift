// OAuth against the fake over real HTTP: the whole PKCE flow through /oauth2/authorize and
// /oauth2/token, refresh after expiry (exactly once, also under 16 concurrent requests),
// invalid_grant after the refresh tokens are revoked, and auth/token/revoke.

import DropboxAPI
import DropboxTestSupport
import Testing

@Suite struct LiveAuthTests {
    /// Signs in through the fake's pages; returns the grant and a counting transport for tokens.
    static func signIn(_ fake: FakeDropboxServer) async throws -> (TokenGrant, OAuthClient, CountingTransport) {
        let counting = CountingTransport(fake.transport)
        let oauth = OAuthClient(
            appKey: fake.appKey, endpoints: fake.endpoints, transport: counting, pacer: Pacer(policy: fastPolicy))
        let pkce = try PKCE()
        let code = try await fake.approve(authorizeURL: oauth.authorizeURL(pkce: pkce))
        let grant = try await oauth.exchange(code: code, pkce: pkce)
        return (grant, oauth, counting)
    }

    @Test func pkceFlow() async throws {
        let fake = try await FakeDropboxServer.start()
        let (grant, oauth, _) = try await Self.signIn(fake)
        #expect(grant.accessToken.hasPrefix("sl.") && grant.tokenType == "bearer")
        #expect(grant.expiresIn == 14400)
        #expect(grant.refreshToken != nil)
        #expect(grant.scope?.split(separator: " ").sorted() == OAuthClient.scopes.sorted().map { Substring($0) })
        let client = liveClient(fake, tokens: StaticTokenProvider(token: grant.accessToken))
        #expect(try await client.getCurrentAccount().accountId.count == 40)

        let refreshed = try await oauth.refresh(refreshToken: try #require(grant.refreshToken))
        #expect(refreshed.accessToken != grant.accessToken && refreshed.refreshToken == nil)

        // A code is single-use; a wrong verifier is refused.
        await #expect {
            _ = try await oauth.exchange(code: "made-up", pkce: try PKCE())
        } throws: { error in
            guard case .oauth(let code, _) = error as? DropboxError else { return false }
            return code == "invalid_grant"
        }
        let pkce = try PKCE()
        let code = try await fake.approve(authorizeURL: oauth.authorizeURL(pkce: pkce))
        await #expect(throws: DropboxError.oauth(error: "invalid_grant", description: "invalid code verifier")) {
            try await oauth.exchange(code: code, pkce: try PKCE())
        }
    }

    @Test func expiredTokenIsRefreshedExactlyOnce() async throws {
        let fake = try await FakeDropboxServer.start()
        let (grant, oauth, counting) = try await Self.signIn(fake)
        try await fake.addToken("short-lived", expiresIn: 1)
        // The provider believes the token lives long, so only Dropbox's 401 can tell it otherwise.
        let tokens = RefreshingTokenProvider(
            refreshToken: try #require(grant.refreshToken), oauth: oauth, initialAccessToken: "short-lived",
            expiresIn: .seconds(3600))
        let client = liveClient(fake, tokens: tokens)
        // No request before the token has surely expired: on a loaded machine (the whole suite runs
        // in parallel on 2 cores) a first request could itself come after the expiry and refresh.
        try await Task.sleep(for: .milliseconds(1200))
        try await fake.resetStats()
        let before = counting.count("/oauth2/token")

        let results = try await withThrowingTaskGroup(of: UInt64.self) { group in
            for _ in 0..<16 {
                group.addTask { try await client.getSpaceUsage().used }
            }
            return try await group.reduce(into: [UInt64]()) { $0.append($1) }
        }
        #expect(results.count == 16)
        #expect(counting.count("/oauth2/token") - before == 1)
        #expect(tokens.refreshCount == 1)
        // At most one 401 per request, then one success each.
        let usage = try await fake.stats().routes["users/get_space_usage"] ?? 0
        #expect(usage >= 17 && usage <= 32)
        _ = try await client.getSpaceUsage()
        #expect(tokens.refreshCount == 1)
    }

    @Test func revokedRefreshTokenMeansSignInAgain() async throws {
        let fake = try await FakeDropboxServer.start()
        let (grant, oauth, _) = try await Self.signIn(fake)
        try await fake.revokeRefreshTokens()
        let tokens = RefreshingTokenProvider(refreshToken: try #require(grant.refreshToken), oauth: oauth)
        await #expect {
            _ = try await liveClient(fake, tokens: tokens).getSpaceUsage()
        } throws: { error in
            guard case .authentication(.noCredentials(let why)) = error as? DropboxError else { return false }
            return why.contains("dropboxfs auth")
        }
    }

    @Test func revokeToken() async throws {
        let fake = try await FakeDropboxServer.start()
        let (grant, _, _) = try await Self.signIn(fake)
        let client = liveClient(fake, tokens: StaticTokenProvider(token: grant.accessToken))
        _ = try await client.getSpaceUsage()
        try await client.revokeToken()
        await #expect(throws: DropboxError.authentication(.invalidAccessToken)) { try await client.getSpaceUsage() }
    }
}
