// The fake server's /_control/ API as typed calls (tools/fakedropbox/README.md): mutate the tree,
// read contents and the tree, inject faults, change settings and tokens, read request statistics,
// and approve an OAuth authorize URL the way a user would.

import DropboxAPI
import Foundation

/// A fault rule for `POST /_control/faults`.
public struct FakeFault: Sendable, Encodable {
    public enum Kind: String, Sendable, Encodable {
        case rateLimitJSON = "429json"
        case rateLimitText = "429text"
        case internalError = "500"
        case unavailable = "503"
        case reset
        case stall
        case truncate
        case malformedJSON = "malformed_json"
        case expiredToken = "expired_token"
    }

    public var route: String
    public var kind: Kind
    public var count: Int
    public var after: Int
    public var retryAfter: Double?
    public var stallSeconds: Double?
    public var truncateAt: Int?

    /// Lets `after` matching requests through, then fails the next `count` (0: all of them).
    public init(
        route: String, kind: Kind, count: Int = 1, after: Int = 0, retryAfter: Double? = nil,
        stallSeconds: Double? = nil, truncateAt: Int? = nil
    ) {
        self.route = route
        self.kind = kind
        self.count = count
        self.after = after
        self.retryAfter = retryAfter
        self.stallSeconds = stallSeconds
        self.truncateAt = truncateAt
    }

    enum CodingKeys: String, CodingKey {
        case route, kind, count, after
        case retryAfter = "retry_after"
        case stallSeconds = "stall_seconds"
        case truncateAt = "truncate_at"
    }
}

/// `GET /_control/stats`: API requests counted per route (without the leading "/2/").
public struct FakeStats: Sendable, Decodable {
    public var total: Int
    public var routes: [String: Int]
    public var bytesSent: Int

    enum CodingKeys: String, CodingKey {
        case total, routes
        case bytesSent = "bytes_sent"
    }
}

/// One entry of `GET /_control/tree`.
public struct FakeTreeEntry: Sendable, Decodable, Equatable {
    public var tag: String
    public var pathDisplay: String
    public var pathLower: String
    public var name: String
    public var id: String
    public var size: UInt64?
    public var rev: String?
    public var contentHash: String?

    enum CodingKeys: String, CodingKey {
        case tag, name, id, size, rev
        case pathDisplay = "path_display"
        case pathLower = "path_lower"
        case contentHash = "content_hash"
    }
}

extension FakeDropboxServer {
    /// Adds or replaces a file with these bytes.
    @discardableResult
    public func addFile(_ path: String, content: [UInt8]) async throws -> Metadata {
        try await control(
            .post, "files", json: ["path": path, "content_b64": Data(content).base64EncodedString()])
    }

    /// Adds or replaces a file of `size` pseudo-random bytes derived from `seed`.
    @discardableResult
    public func addFile(_ path: String, size: Int, seed: Int = 0) async throws -> Metadata {
        try await control(.post, "files", json: ["path": path, "size": size, "seed": seed])
    }

    @discardableResult
    public func addFolder(_ path: String) async throws -> Metadata {
        try await control(.post, "folders", json: ["path": path])
    }

    /// Adds a folder with an access level, "traverse_only" or "no_access" (a no_access folder
    /// holds nothing).
    @discardableResult
    public func addFolder(_ path: String, access: String) async throws -> Metadata {
        try await control(.post, "folders", json: ["path": path, "access": access])
    }

    /// Adds a file whose content Dropbox blocks: listed, but downloads answer restricted_content.
    @discardableResult
    public func addRestrictedFile(_ path: String, content: [UInt8]) async throws -> Metadata {
        try await control(
            .post, "files", json: ["path": path, "content_b64": Data(content).base64EncodedString(), "restricted": true])
    }

    public func delete(_ path: String) async throws {
        _ = try await controlRaw(.post, "delete", json: ["path": path])
    }

    public func move(from: String, to: String) async throws {
        _ = try await controlRaw(.post, "move", json: ["from": from, "to": to])
    }

    /// Makes every existing cursor stale: the next `continue` gets 409 reset.
    public func resetCursors() async throws {
        _ = try await controlRaw(.post, "reset_cursors", json: [:])
    }

    /// The bytes of a file (a path, `id:` or `rev:`), read directly from the fake.
    public func content(_ path: String) async throws -> [UInt8] {
        let query = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? path
        return try await controlRaw(.get, "content?path=\(query)", json: nil)
    }

    public func tree() async throws -> [FakeTreeEntry] {
        struct Tree: Decodable { var entries: [FakeTreeEntry] }
        let tree: Tree = try await control(.get, "tree", json: nil)
        return tree.entries
    }

    public func addFault(_ fault: FakeFault) async throws {
        let body = try JSONEncoder().encode(fault)
        _ = try await send(.post, "faults", body: Array(body))
    }

    public func clearFaults() async throws {
        _ = try await controlRaw(.delete, "faults", json: nil)
    }

    /// Changes runtime settings; nil leaves one unchanged.
    public func configure(latencyMs: Double? = nil, bandwidth: Int? = nil, accessTokenTTL: Double? = nil) async throws {
        var settings: [String: Any] = [:]
        if let latencyMs { settings["latency_ms"] = latencyMs }
        if let bandwidth { settings["bandwidth"] = bandwidth }
        if let accessTokenTTL { settings["access_token_ttl"] = accessTokenTTL }
        _ = try await controlRaw(.post, "config", json: settings)
    }

    /// Makes the fake accept `token`, expiring after `expiresIn` seconds, limited to `scopes`.
    public func addToken(_ token: String, expiresIn: Double? = nil, scopes: [String]? = nil) async throws {
        var body: [String: Any] = ["token": token]
        if let expiresIn { body["expires_in"] = expiresIn }
        if let scopes { body["scopes"] = scopes }
        _ = try await controlRaw(.post, "tokens", json: body)
    }

    public func revokeRefreshTokens() async throws {
        _ = try await controlRaw(.post, "revoke_refresh_tokens", json: [:])
    }

    public func stats() async throws -> FakeStats {
        try await control(.get, "stats", json: nil)
    }

    public func resetStats() async throws {
        _ = try await controlRaw(.post, "stats/reset", json: [:])
    }

    /// The raw JSON of `GET /_control/log` (recent API requests).
    public func requestLog() async throws -> [UInt8] {
        try await controlRaw(.get, "log", json: nil)
    }

    /// Opens `authorizeURL` as the user's browser would and returns the code the page shows.
    public func approve(authorizeURL: String) async throws -> String {
        let response = try await transport.send(HTTPRequest(method: .get, url: authorizeURL))
        let page = String(decoding: response.body, as: UTF8.self)
        guard response.status == 200, let start = page.range(of: "<code id=\"auth-code\">"),
            let end = page.range(of: "</code>", range: start.upperBound..<page.endIndex)
        else {
            throw FakeDropboxServerError("the authorize page showed no code (HTTP \(response.status)): \(page)")
        }
        return String(page[start.upperBound..<end.lowerBound])
    }

    // MARK: plumbing

    /// A control call whose JSON reply decodes as `T`.
    public func control<T: Decodable>(_ method: HTTPMethod, _ path: String, json: [String: Any]?) async throws -> T {
        let body = try await controlRaw(method, path, json: json)
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch {
            throw FakeDropboxServerError("/_control/\(path): unexpected reply \(String(decoding: body, as: UTF8.self))")
        }
    }

    /// A control call; returns the reply body of a 200, throws on anything else.
    public func controlRaw(_ method: HTTPMethod, _ path: String, json: [String: Any]?) async throws -> [UInt8] {
        let body = try json.map { Array(try JSONSerialization.data(withJSONObject: $0)) } ?? []
        return try await send(method, path, body: body)
    }

    private func send(_ method: HTTPMethod, _ path: String, body: [UInt8]) async throws -> [UInt8] {
        var headers = HTTPHeaders()
        if method != .get { headers.add("Content-Type", "application/json") }
        let request = HTTPRequest(
            method: method, url: baseURL + "/_control/" + path, headers: headers, body: body,
            timeouts: HTTPTimeouts(connect: .seconds(5), total: .seconds(60), stall: nil, answer: nil))
        let response = try await transport.send(request)
        guard response.status == 200 else {
            throw FakeDropboxServerError(
                "/_control/\(path) answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
        return response.body
    }
}
