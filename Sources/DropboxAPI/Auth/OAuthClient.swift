// The OAuth 2 code flow with PKCE and no client secret (docs/DROPBOX-API.md, "OAuth 2 with PKCE"):
// the authorize URL the user opens, the exchange of the pasted code, and refresh grants. Request
// bodies here carry codes and refresh tokens, so nothing of them is ever logged (the transport logs
// route and status only).

import Foundation

public struct OAuthClient: Sendable {
    /// The read-only scopes dropboxfs asks for.
    public static let scopes = ["account_info.read", "files.metadata.read", "files.content.read"]

    public let appKey: String
    public let endpoints: DropboxEndpoints
    private let transport: any HTTPTransport
    private let pacer: Pacer
    private let timeouts: HTTPTimeouts

    public init(
        appKey: String, endpoints: DropboxEndpoints, transport: any HTTPTransport = CurlTransport(),
        pacer: Pacer = Pacer(), timeouts: HTTPTimeouts = HTTPTimeouts(total: .seconds(60))
    ) {
        self.appKey = appKey
        self.endpoints = endpoints
        self.transport = transport
        self.pacer = pacer
        self.timeouts = timeouts
    }

    /// The page where the user approves access; it then shows a code to paste (no redirect URI).
    public func authorizeURL(pkce: PKCE, state: String? = nil) -> String {
        var query: [(String, String)] = [
            ("client_id", appKey),
            ("response_type", "code"),
            ("token_access_type", "offline"),
            ("code_challenge", pkce.challenge),
            ("code_challenge_method", "S256"),
            ("scope", Self.scopes.joined(separator: " ")),
        ]
        if let state { query.append(("state", state)) }
        return endpoints.authorizeURL + "?" + FormEncoding.encode(query)
    }

    /// Exchanges the code shown to the user for tokens (a refresh token included).
    public func exchange(code: String, pkce: PKCE) async throws(DropboxError) -> TokenGrant {
        try await requestToken(
            isRefresh: false,
            [
                ("grant_type", "authorization_code"),
                ("code", code.trimmingSpaces),
                ("client_id", appKey),
                ("code_verifier", pkce.verifier),
            ])
    }

    /// A new access token for `refreshToken`. A revoked refresh token gives
    /// `.authentication(.noCredentials(...))`, telling the user to sign in again.
    public func refresh(refreshToken: String) async throws(DropboxError) -> TokenGrant {
        try await requestToken(
            isRefresh: true,
            [
                ("grant_type", "refresh_token"),
                ("refresh_token", refreshToken),
                ("client_id", appKey),
            ])
    }

    private func requestToken(isRefresh: Bool, _ form: [(String, String)]) async throws(DropboxError) -> TokenGrant {
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/x-www-form-urlencoded")
        let request = HTTPRequest(
            method: .post, url: endpoints.tokenURL, headers: headers, body: Array(FormEncoding.encode(form).utf8),
            timeouts: timeouts)
        let transport = self.transport
        return try await pacer.run("oauth2/token") { () throws(DropboxError) -> TokenGrant in
            let response = try await transport.send(request)
            guard response.status == 200 else {
                throw Self.error(
                    status: response.status, headers: response.headers, body: response.body, isRefresh: isRefresh)
            }
            let grant = try DropboxHTTPClient.decode(TokenGrant.self, from: response.body, route: "oauth2/token")
            guard !grant.accessToken.isEmpty else { throw .malformedResponse("oauth2/token: empty access_token") }
            return grant
        }
    }

    /// The error of a failed token request: OAuth's `{"error","error_description"}` where present,
    /// else the ordinary reply mapping (429, 5xx, ...). A refresh refused with invalid_grant means
    /// the stored sign-in is dead; a code exchange refused so means a wrong or stale code.
    static func error(status: Int, headers: HTTPHeaders, body: [UInt8], isRefresh: Bool) -> DropboxError {
        guard (400..<500).contains(status), status != 429,
            let json = JSONValue.parse(body), let code = json["error"]?.string
        else {
            return DropboxError.fromReply(status: status, headers: headers, body: body)
        }
        let description = json["error_description"]?.string ?? ""
        if code == "invalid_grant", isRefresh {
            return .authentication(
                .noCredentials(
                    "the Dropbox sign-in is no longer valid (\(description.isEmpty ? code : description)): "
                        + "run `dropboxfs auth` again"))
        }
        return .oauth(error: code, description: description)
    }
}

/// application/x-www-form-urlencoded, also used for URL queries.
enum FormEncoding {
    private static let unreserved = Set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&")
    }

    /// Percent-escapes every byte outside the RFC 3986 unreserved set (a space becomes %20).
    static func escape(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        for byte in text.utf8 {
            if unreserved.contains(byte) {
                out.append(byte)
            } else {
                out.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
