// Tokens: refresh-and-retry once after expired_access_token, one refresh however many callers
// need it, refresh ahead of expiry, the OAuth requests and their error mapping, and PKCE.

import Foundation
import Synchronization
import Testing

@testable import DropboxAPI

/// A scripted token endpoint issuing "fresh-1", "fresh-2", ... after a short delay.
func tokenEndpoint(delay: Duration = .milliseconds(50), expiresIn: Int = 14400) -> ScriptedTransport {
    ScriptedTransport { request, index throws(DropboxError) in
        try? await Task.sleep(for: delay)
        return .json(#"{"access_token":"fresh-\#(index + 1)","token_type":"bearer","expires_in":\#(expiresIn)}"#)
    }
}

func formFields(_ body: [UInt8]) -> [String: String] {
    var fields: [String: String] = [:]
    for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
        let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
        fields[parts[0]] = parts.count > 1 ? parts[1] : ""
    }
    return fields
}

@Suite struct AuthTests {
    static let endpoints = DropboxEndpoints(all: "http://fake.test")
    static let expired = HTTPResponse.json(
        #"{"error_summary":"expired_access_token/..","error":{".tag":"expired_access_token"}}"#, status: 401)

    func oauth(_ transport: ScriptedTransport) -> OAuthClient {
        OAuthClient(
            appKey: "key", endpoints: Self.endpoints, transport: transport, pacer: Pacer(sleeper: ManualSleeper()))
    }

    @Test func staticTokenCannotBeRefreshed() async {
        let transport = ScriptedTransport(replies: [Self.expired])
        await #expect(throws: DropboxError.authentication(.expiredAccessToken)) {
            try await makeClient(transport).getSpaceUsage()
        }
        #expect(transport.requests.count == 1)
    }

    @Test func expiredTokenIsRefreshedOnceAndTheRequestRetried() async throws {
        let api = ScriptedTransport { request, _ throws(DropboxError) in
            request.headers["Authorization"] == "Bearer old" ? Self.expired : .json(#"{"cursor":"c"}"#)
        }
        let tokens = RefreshingTokenProvider(
            refreshToken: "rt", oauth: oauth(tokenEndpoint()), initialAccessToken: "old", expiresIn: .seconds(3600))
        let client = makeClient(api, tokens: tokens)
        #expect(try await client.listFolderGetLatestCursor(ListFolderArg(path: "")) == "c")
        #expect(api.requests.map { $0.headers["Authorization"] } == ["Bearer old", "Bearer fresh-1"])
        #expect(tokens.refreshCount == 1)
    }

    @Test func aTokenRejectedTwiceIsNotRefreshedTwice() async {
        let api = ScriptedTransport(replies: [Self.expired])
        let endpoint = tokenEndpoint()
        let tokens = RefreshingTokenProvider(refreshToken: "rt", oauth: oauth(endpoint), initialAccessToken: "old")
        await #expect(throws: DropboxError.authentication(.expiredAccessToken)) {
            try await makeClient(api, tokens: tokens).getSpaceUsage()
        }
        #expect(api.requests.count == 2)
        #expect(endpoint.requests.count == 1)
    }

    @Test func concurrentRejectionsShareOneRefresh() async throws {
        let endpoint = tokenEndpoint()
        let tokens = RefreshingTokenProvider(refreshToken: "rt", oauth: oauth(endpoint), initialAccessToken: "old")
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<16 {
                group.addTask { try await tokens.refreshAfterRejection(of: "old") }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(Set(results) == ["fresh-1"])
        #expect(endpoint.requests.count == 1)
        // A caller whose rejected token was already replaced gets the current one, no new refresh.
        #expect(try await tokens.refreshAfterRejection(of: "old") == "fresh-1")
        #expect(endpoint.requests.count == 1)
        #expect(try await tokens.accessToken() == "fresh-1")
    }

    /// A caller whose rejected token was replaced gets the current token only if that one has not
    /// been rejected too: while the refresh for a rejected "fresh-1" runs, a caller rejected with
    /// the older "old" must wait for it, not get "fresh-1" back (it would fail at once with 401).
    @Test func aCallerWithAnOlderRejectedTokenIsNotGivenARejectedOne() async throws {
        let endpoint = tokenEndpoint(delay: .seconds(1))
        let tokens = RefreshingTokenProvider(
            refreshToken: "rt", oauth: oauth(endpoint), initialAccessToken: "old", expiresIn: .seconds(3600))
        #expect(try await tokens.refreshAfterRejection(of: "old") == "fresh-1")
        let second = Task { try await tokens.refreshAfterRejection(of: "fresh-1") }
        while endpoint.requests.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
        // The refresh of the rejected "fresh-1" is running (for a second).
        #expect(try await tokens.refreshAfterRejection(of: "old") == "fresh-2")
        #expect(try await second.value == "fresh-2")
    }

    /// An interrupted request stops waiting for a stalled token endpoint at once; the refresh goes on
    /// for the callers still waiting, and is made once.
    @Test func aCancelledCallerStopsWaitingForTheRefresh() async throws {
        let endpoint = tokenEndpoint(delay: .seconds(2))
        let tokens = RefreshingTokenProvider(refreshToken: "rt", oauth: oauth(endpoint))
        let patient = Task { try await tokens.accessToken() }
        let interrupted = Task { try await tokens.accessToken() }
        try await Task.sleep(for: .milliseconds(200))
        interrupted.cancel()
        await #expect(throws: DropboxError.transport(TransportError(kind: .cancelled, message: "request cancelled"))) {
            try await interrupted.value
        }
        #expect(tokens.refreshCount == 0, "the cancelled caller returned before the refresh ended")
        #expect(try await patient.value == "fresh-1")
        #expect(endpoint.requests.count == 1)
        // The same for a caller whose token was rejected.
        let rejected = Task { try await tokens.refreshAfterRejection(of: "fresh-1") }
        try await Task.sleep(for: .milliseconds(200))
        rejected.cancel()
        await #expect(throws: DropboxError.self) { try await rejected.value }
        #expect(try await tokens.accessToken() == "fresh-2")
        #expect(endpoint.requests.count == 2)
    }

    @Test func refreshRequestShape() async throws {
        let endpoint = tokenEndpoint(delay: .zero)
        let tokens = RefreshingTokenProvider(refreshToken: "the-refresh-token", oauth: oauth(endpoint))
        #expect(try await tokens.accessToken() == "fresh-1")
        let request = try #require(endpoint.requests.first)
        #expect(request.url == "http://fake.test/oauth2/token")
        #expect(request.method == .post)
        #expect(request.headers["Content-Type"] == "application/x-www-form-urlencoded")
        #expect(request.headers["Authorization"] == nil)
        #expect(
            formFields(request.body) == [
                "grant_type": "refresh_token", "refresh_token": "the-refresh-token", "client_id": "key",
            ])
    }

    @Test func refreshesAheadOfExpiry() async throws {
        let clock = ManualSleeper()
        let endpoint = tokenEndpoint(delay: .zero, expiresIn: 14400)
        let tokens = RefreshingTokenProvider(
            refreshToken: "rt", oauth: oauth(endpoint), initialAccessToken: "first", expiresIn: .seconds(600),
            clock: clock)
        #expect(try await tokens.accessToken() == "first")
        clock.advance(.seconds(299))
        #expect(try await tokens.accessToken() == "first")
        clock.advance(.seconds(2))  // 299 s left: inside the 5-minute margin
        // Still valid: handed out at once while the renewal runs in the background.
        #expect(try await tokens.accessToken() == "first")
        for _ in 0..<200 where tokens.refreshCount == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(try await tokens.accessToken() == "fresh-1")
        clock.advance(.seconds(3600))
        #expect(try await tokens.accessToken() == "fresh-1")
        #expect(endpoint.requests.count == 1)
    }

    @Test func revokedRefreshTokenAsksToSignInAgain() async {
        let endpoint = ScriptedTransport(replies: [
            .json(#"{"error":"invalid_grant","error_description":"refresh token is invalid or revoked"}"#, status: 400)
        ])
        let tokens = RefreshingTokenProvider(refreshToken: "rt", oauth: oauth(endpoint))
        await #expect {
            _ = try await tokens.accessToken()
        } throws: { error in
            guard case .authentication(.noCredentials(let why)) = error as? DropboxError else { return false }
            return why.contains("dropboxfs auth") && why.contains("revoked")
        }
    }

    @Test(arguments: [
        (
            400, #"{"error":"invalid_grant","error_description":"code doesn't exist"}"#, false,
            DropboxError.oauth(error: "invalid_grant", description: "code doesn't exist")
        ),
        (
            400, #"{"error":"invalid_client","error_description":"Invalid client_id"}"#, true,
            .oauth(error: "invalid_client", description: "Invalid client_id")
        ),
        (400, #"{"error":"unsupported_grant_type"}"#, true, .oauth(error: "unsupported_grant_type", description: "")),
        (400, "Bad HTTP Content-Type header", true, .badRequest(message: "Bad HTTP Content-Type header")),
        (503, "Service Unavailable", true, .serverError(status: 503)),
        (429, #"{"error":{"retry_after":2}}"#, true, .rateLimited(retryAfter: 2)),
    ])
    func tokenEndpointErrors(status: Int, body: String, isRefresh: Bool, expected: DropboxError) {
        var headers = HTTPHeaders()
        headers.add("Content-Type", body.hasPrefix("{") ? "application/json" : "text/plain")
        #expect(
            OAuthClient.error(status: status, headers: headers, body: Array(body.utf8), isRefresh: isRefresh)
                == expected)
    }

    @Test func authorizeURLAndCodeExchange() async throws {
        let pkce = PKCE(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        let endpoint = ScriptedTransport(replies: [
            .json(
                #"{"access_token":"sl.a","token_type":"bearer","expires_in":14400,"refresh_token":"rt","scope":"x","account_id":"dbid:x","uid":"1"}"#
            )
        ])
        let client = oauth(endpoint)
        let url = client.authorizeURL(pkce: pkce)
        #expect(
            url == "http://fake.test/oauth2/authorize?client_id=key&response_type=code&token_access_type=offline"
                + "&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256"
                + "&scope=account_info.read%20files.metadata.read%20files.content.read")
        #expect(client.authorizeURL(pkce: pkce, state: "a b").hasSuffix("&state=a%20b"))
        let grant = try await client.exchange(code: " the-code \n", pkce: pkce)
        #expect(grant.refreshToken == "rt" && grant.expiresIn == 14400)
        #expect(
            formFields(endpoint.requests[0].body) == [
                "grant_type": "authorization_code", "code": "the-code", "client_id": "key",
                "code_verifier": "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
            ])
    }

    @Test func pkceVectorAndRandomVerifiers() throws {
        // RFC 7636 appendix B (checked with `openssl dgst -sha256 -binary | base64`).
        #expect(
            PKCE.challenge(for: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
                == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        let a = try PKCE()
        let b = try PKCE()
        #expect(a.verifier.count == 128 && a.verifier.allSatisfy { allowed.contains($0) })
        #expect(a.verifier != b.verifier)
        #expect(a.challenge.count == 43)
        #expect(!a.challenge.contains { "+/=".contains($0) })
    }

    /// A token is renewed this long before it expires: the 5-minute margin, or half its lifetime
    /// when that is shorter (else short-lived tokens would be renewed on every request).
    @Test(arguments: [
        (nil, 300), (14_400, 300), (600, 300), (599, 299.5), (8, 4), (0, 0),
    ] as [(Int?, Double)])
    func renewalStartsWithinHalfTheLifetime(lifetime: Int?, seconds: Double) {
        let renew = RefreshingTokenProvider.renewBefore(lifetime.map { .seconds($0) }, margin: .seconds(300))
        #expect(renew == .milliseconds(Int64(seconds * 1000)))
    }
}
