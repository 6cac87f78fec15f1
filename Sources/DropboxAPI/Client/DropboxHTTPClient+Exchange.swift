// The plumbing under every route: the three request styles (RPC, content download, notify;
// docs/DROPBOX-API.md, "Hosts and request styles"), the bearer token with one refresh-and-retry
// after expired_access_token, and the pacer around each exchange. Replies are checked and decoded
// inside the paced operation, so a body cut short is retried like any other lost connection.

import Foundation
import Log

extension DropboxHTTPClient {
    /// Where an RPC route is served: the API host, or the content host (get_thumbnail_batch is an
    /// RPC-style route on the content host).
    enum RPCHost {
        case api, content
    }

    /// An RPC route taking `arg` as its JSON body.
    func rpc<Result: Decodable>(
        _ route: String, _ arg: some Encodable, host: RPCHost = .api
    ) async throws(DropboxError) -> Result {
        try await rpc(route, arg, host: host) { (body, route) throws(DropboxError) in
            try Self.decode(Result.self, from: body, route: route)
        }
    }

    /// An RPC route taking `arg` as its JSON body, its reply decoded by `decode`.
    func rpc<Result>(
        _ route: String, _ arg: some Encodable, host: RPCHost = .api,
        decode: ([UInt8], String) throws(DropboxError) -> Result
    ) async throws(DropboxError) -> Result {
        let body = try Self.json(arg)
        return try await authorized(route) { token throws(DropboxError) in
            let response = try await self.exchange(self.rpcRequest(route, body: body, token: token, host: host))
            return try decode(response.body, route)
        }
    }

    /// An RPC route without an argument: the body is `null`.
    func rpc<Result: Decodable>(_ route: String) async throws(DropboxError) -> Result {
        try await authorized(route) { token throws(DropboxError) in
            let response = try await self.exchange(self.rpcRequest(route, body: Self.null, token: token))
            return try Self.decode(Result.self, from: response.body, route: route)
        }
    }

    /// An RPC route without argument or result (`null` both ways).
    func rpcWithoutResult(_ route: String) async throws(DropboxError) {
        try await authorized(route) { token throws(DropboxError) in
            _ = try await self.exchange(self.rpcRequest(route, body: Self.null, token: token))
        }
    }

    /// A notify route: RPC-shaped, on the notify host, without Authorization, bounded by `total`
    /// instead of a stall limit (the server holds it open on purpose). Outside the concurrency cap.
    func notify<Result: Decodable>(
        _ route: String, _ arg: some Encodable, total: Duration
    ) async throws(DropboxError) -> Result {
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/json")
        var timeouts = configuration.timeouts
        timeouts.total = total
        timeouts.stall = nil
        timeouts.answer = nil
        timeouts.lowSpeed = nil  // the server stays silent on purpose
        let request = HTTPRequest(
            method: .post, url: endpoints.notifyRoute(route), headers: headers, body: try Self.json(arg),
            timeouts: timeouts)
        return try await pacer.run(route, limited: false) { () throws(DropboxError) -> Result in
            let response = try await exchange(request)
            return try Self.decode(Result.self, from: response.body, route: route)
        }
    }

    /// A content-download route: the argument in `Dropbox-API-Arg`, the result in
    /// `Dropbox-API-Result`, the bytes in the body.
    func contentDownload(
        _ route: String, _ arg: some Encodable, range: ByteRange?, freshConnection: Bool = false,
        result decodeResult: (@Sendable ([UInt8]) throws(DropboxError) -> FileMetadata)? = nil
    ) async throws(DropboxError) -> DownloadResult {
        let argHeader = try ArgEncoding.headerJSON(arg)
        return try await authorized(route) { token throws(DropboxError) in
            var headers = self.contentHeaders(token: token, arg: argHeader)
            if let range { headers.add("Range", range.headerValue) }
            // A part never holds more than it asked for (plus room for an error body): a 200 with
            // the whole file to a ranged request must not take memory outside the reader's cap.
            let cap = range.map { Int(min($0.length, UInt64(Int.max / 2))) + Self.downloadBodySlack }
            var request = HTTPRequest(
                method: .post, url: self.endpoints.contentRoute(route), headers: headers, body: [],
                timeouts: self.configuration.downloadTimeouts(length: range?.length), maxBodyBytes: cap)
            request.freshConnection = freshConnection
            let response = try await self.exchange(request, success: [200, 206])
            guard let resultHeader = response.headers["Dropbox-API-Result"] else {
                throw .malformedResponse("\(route): the reply has no Dropbox-API-Result header")
            }
            // The result's shape is the route's: files/download's FileMetadata unless told.
            let metadata: FileMetadata
            if let decodeResult {
                metadata = try decodeResult(Array(resultHeader.utf8))
            } else {
                metadata = try Self.decode(FileMetadata.self, from: Array(resultHeader.utf8), route: route)
            }
            let data = try Self.downloadedBytes(response, range: range, metadata: metadata, route: route)
            return DownloadResult(metadata: metadata, data: data)
        }
    }

    /// files/export: the whole exported document, its name and size from `Dropbox-API-Result`
    /// (`export_metadata`, and `file_metadata` for the revision).
    func contentExport(_ route: String, _ arg: some Encodable) async throws(DropboxError) -> ExportResult {
        let argHeader = try ArgEncoding.headerJSON(arg)
        return try await authorized(route) { token throws(DropboxError) in
            let headers = self.contentHeaders(token: token, arg: argHeader)
            // Dropbox converts the document before the reply begins, which may take longer than
            // the answer bound: only the stall limit applies.
            var timeouts = self.configuration.downloadTimeouts(length: nil)
            timeouts.answer = nil
            let request = HTTPRequest(
                method: .post, url: self.endpoints.contentRoute(route), headers: headers, body: [],
                timeouts: timeouts, maxBodyBytes: Self.exportBodyLimit)
            let response = try await self.exchange(request)
            guard let resultHeader = response.headers["Dropbox-API-Result"] else {
                throw .malformedResponse("\(route): the reply has no Dropbox-API-Result header")
            }
            let result = try Self.decode(ExportReply.self, from: Array(resultHeader.utf8), route: route)
            guard UInt64(response.body.count) == result.exportMetadata.size ?? UInt64(response.body.count) else {
                throw .transport(
                    TransportError(
                        kind: .connectionLost,
                        message: "\(route): got \(response.body.count) of \(result.exportMetadata.size ?? 0) bytes"))
            }
            return ExportResult(
                name: result.exportMetadata.name, size: UInt64(response.body.count), rev: result.fileMetadata?.rev,
                data: response.body)
        }
    }

    /// The headers of a content-host call whose argument travels in `Dropbox-API-Arg`.
    func contentHeaders(token: String, arg: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add("Authorization", "Bearer \(token)")
        headers.add("Dropbox-API-Arg", arg)
        headers.add("Content-Type", "application/octet-stream")
        if let pathRoot = pathRootHeader { headers.add("Dropbox-API-Path-Root", pathRoot) }
        return headers
    }

    /// The largest export accepted (exports are held in memory while a handle is open).
    static let exportBodyLimit = 256 << 20

    /// Reply bytes a ranged download may hold beyond its length (an error body, a server that
    /// sends the whole of a small file).
    static let downloadBodySlack = 64 * 1024

    // MARK: tokens and pacing

    /// Runs `attempt` through the pacer with a token; after 401 expired_access_token, asks the
    /// provider for a new token once and runs it once more.
    func authorized<T>(
        _ route: String, _ attempt: (String) async throws(DropboxError) -> T
    ) async throws(DropboxError) -> T {
        let token = try await tokens.accessToken()
        do {
            return try await pacer.run(route) { () throws(DropboxError) -> T in try await attempt(token) }
        } catch .authentication(.expiredAccessToken) {
            Log.info("\(route): the access token has expired; refreshing it")
            let fresh = try await tokens.refreshAfterRejection(of: token)
            return try await pacer.run(route) { () throws(DropboxError) -> T in try await attempt(fresh) }
        }
    }

    /// Sends one request; a status outside `success` becomes the DropboxError it stands for.
    /// A silent host fails a request at once when the task fails fast (FailFast.swift).
    func exchange(_ request: HTTPRequest, success: Set<Int> = [200]) async throws(DropboxError) -> HTTPResponse {
        let response: HTTPResponse
        do {
            response = try await transport.send(request)
        } catch {
            throw FailFast.adjust(error)
        }
        guard success.contains(response.status) else {
            throw DropboxError.fromReply(status: response.status, headers: response.headers, body: response.body)
        }
        return response
    }

    func rpcRequest(_ route: String, body: [UInt8], token: String, host: RPCHost = .api) -> HTTPRequest {
        var headers = HTTPHeaders()
        headers.add("Authorization", "Bearer \(token)")
        headers.add("Content-Type", "application/json")
        if let pathRoot = pathRootHeader { headers.add("Dropbox-API-Path-Root", pathRoot) }
        return HTTPRequest(
            method: .post, url: host == .api ? endpoints.rpc(route) : endpoints.contentRoute(route), headers: headers,
            body: body, timeouts: configuration.rpcTimeouts)
    }

    // MARK: JSON

    static let null = Array("null".utf8)

    static func json(_ value: some Encodable) throws(DropboxError) -> [UInt8] {
        do {
            return Array(try JSONEncoder().encode(value))
        } catch {
            throw .malformedResponse("could not encode the request argument: \(error)")
        }
    }

    /// A list_folder or continue reply, with the byte-level decoder (ListFolderDecoding.swift).
    static func decodeListing(_ bytes: [UInt8], route: String) throws(DropboxError) -> ListFolderResult {
        do {
            return try ListFolderResult.decode(json: bytes)
        } catch {
            throw .malformedResponse("\(route): \(error.description)")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8], route: String) throws(DropboxError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw .malformedResponse("\(route): \(Self.describe(error))")
        } catch {
            throw .malformedResponse("\(route): \(error)")
        }
    }

    /// A one-line account of a decoding failure: where it failed and why, never the payload.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "missing \(key.stringValue) at '\(path(context))'"
        case .typeMismatch(_, let context): return "wrong type at '\(path(context))'"
        case .valueNotFound(_, let context): return "null at '\(path(context))'"
        case .dataCorrupted(let context):
            return path(context).isEmpty ? "not valid JSON" : "bad value at '\(path(context))'"
        @unknown default: return "undecodable reply"
        }
    }
}
