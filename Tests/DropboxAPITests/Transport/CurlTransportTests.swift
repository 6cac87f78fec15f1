// CurlTransport over real sockets against the fake server: statuses and headers, bodies of every
// size, connection failures and their kinds, the stall and total timeouts, cancellation, the body
// cap, many transfers at once, and HTTPS with a private CA.

import DropboxTestSupport
import Foundation
import Testing

@testable import DropboxAPI

@Suite struct CurlTransportTests {
    static func spaceUsage(_ fake: FakeDropboxServer, body: [UInt8] = Array("null".utf8), json: Bool = true)
        -> HTTPRequest
    {
        var headers = HTTPHeaders()
        headers.add("Authorization", "Bearer \(fake.token)")
        if json { headers.add("Content-Type", "application/json") }
        return HTTPRequest(
            method: .post, url: fake.baseURL + "/2/users/get_space_usage", headers: headers, body: body,
            timeouts: HTTPTimeouts(connect: .seconds(5), total: .seconds(20), stall: .seconds(10)))
    }

    static func kind(of error: any Error) -> TransportError.Kind? {
        if case .transport(let t) = error as? DropboxError { return t.kind }
        return nil
    }

    @Test func statusHeadersAndBody() async throws {
        let fake = try await FakeDropboxServer.start()
        let response = try await fake.transport.send(Self.spaceUsage(fake))
        #expect(response.status == 200)
        #expect(response.headers["content-type"] == "application/json")
        let id = try #require(response.headers["x-dropbox-request-id"])
        #expect(!id.isEmpty && !id.contains("\r") && !id.contains(" "))
        #expect(String(decoding: response.body, as: UTF8.self).contains("\"used\""))
    }

    @Test func zeroLengthPostWithoutContentType() async throws {
        let fake = try await FakeDropboxServer.start()
        let response = try await fake.transport.send(Self.spaceUsage(fake, body: [], json: false))
        #expect(response.status == 200)
    }

    @Test func errorStatusesAreReplies() async throws {
        let fake = try await FakeDropboxServer.start()
        var request = Self.spaceUsage(fake)
        request.headers = ["Authorization": "Bearer wrong", "Content-Type": "application/json"]
        let response = try await fake.transport.send(request)
        #expect(response.status == 401)
        request.url = fake.baseURL + "/2/no/such/route"
        #expect(try await fake.transport.send(request).status == 404)
    }

    @Test func largeBodiesArriveWhole() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFile("/big.bin", size: 3_000_000, seed: 5)
        let expected = try await fake.content("/big.bin")
        #expect(expected.count == 3_000_000)
        let response = try await fake.transport.send(
            HTTPRequest(method: .get, url: fake.baseURL + "/_control/content?path=/big.bin"))
        #expect(response.body == expected)
    }

    @Test func bodyCap() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFile("/f.bin", size: 5000)
        let small = CurlTransport(configuration: .init(maxBodyBytes: 1000))
        await #expect {
            _ = try await small.send(HTTPRequest(method: .get, url: fake.baseURL + "/_control/content?path=/f.bin"))
        } throws: { error in
            guard case .transport(let t) = error as? DropboxError else { return false }
            return t.kind == .other && t.message.contains("1000")
        }
    }

    @Test func refusedConnection() async throws {
        let fake = try await FakeDropboxServer.start()
        let url = fake.baseURL + "/_control/stats"
        fake.stop()
        do {
            _ = try await CurlTransport().send(HTTPRequest(method: .get, url: url))
            Issue.record("a stopped server answered")
        } catch {
            #expect(Self.kind(of: error) == .couldNotConnect)
        }
    }

    @Test func stallTimeout() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFault(FakeFault(route: "users/get_space_usage", kind: .stall, stallSeconds: 120))
        var request = Self.spaceUsage(fake)
        request.timeouts = HTTPTimeouts(connect: .seconds(5), total: nil, stall: .seconds(1))
        let start = ContinuousClock.now
        do {
            _ = try await fake.transport.send(request)
            Issue.record("a stalled request succeeded")
        } catch {
            #expect(Self.kind(of: error) == .timeout)
        }
        // Well before the 120 s stall ends: only the 1 s stall timeout can end it that soon (a tight
        // bound would measure the machine's load).
        #expect(ContinuousClock.now - start < .seconds(60))
    }

    /// A host that accepts and never answers is given up on after the answer bound, though the
    /// stall limit is longer, and the failure says nothing was heard (what marks it unreachable).
    @Test func answerBoundEndsASilentRequest() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFault(FakeFault(route: "users/get_space_usage", kind: .stall, stallSeconds: 120))
        var request = Self.spaceUsage(fake)
        request.timeouts = HTTPTimeouts(connect: .seconds(5), total: nil, stall: .seconds(100), answer: .seconds(1))
        let start = ContinuousClock.now
        do {
            _ = try await fake.transport.send(request)
            Issue.record("a silent request succeeded")
        } catch {
            guard case .transport(let failure) = error as? DropboxError else {
                Issue.record("not a transport error: \(error)")
                return
            }
            #expect(failure.kind == .timeout)
            #expect(failure.silent && failure.meansUnreachable)
        }
        // Well before the 100 s stall limit: only the 1 s answer bound can end it that soon.
        #expect(ContinuousClock.now - start < .seconds(50))
    }

    /// A reply that began and then stopped is not silent: the host answered.
    @Test func aStallAfterTheReplyBeganIsNotSilent() async throws {
        let listener = ResettingListener(reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc".utf8))
        defer { listener.stop() }
        let request = HTTPRequest(
            method: .post, url: "http://127.0.0.1:\(listener.port)/2/users/get_space_usage", body: Array("null".utf8),
            timeouts: HTTPTimeouts(connect: .seconds(5), total: .seconds(20), stall: .seconds(10)))
        do {
            _ = try await CurlTransport().send(request)
            Issue.record("a cut reply succeeded")
        } catch {
            guard case .transport(let failure) = error as? DropboxError else {
                Issue.record("not a transport error: \(error)")
                return
            }
            #expect(!failure.silent && !failure.meansUnreachable, "\(failure.kind) \(failure.message)")
        }
    }

    @Test func refusedConnectionMeansUnreachable() async throws {
        let listener = ResettingListener()
        let port = listener.port
        listener.stop()
        let request = HTTPRequest(
            method: .post, url: "http://127.0.0.1:\(port)/2/users/get_space_usage", body: Array("null".utf8),
            timeouts: HTTPTimeouts(connect: .seconds(5), total: .seconds(20), stall: .seconds(10)))
        do {
            _ = try await CurlTransport().send(request)
            Issue.record("a refused connection succeeded")
        } catch {
            guard case .transport(let failure) = error as? DropboxError else {
                Issue.record("not a transport error: \(error)")
                return
            }
            #expect(failure.kind == .couldNotConnect && failure.meansUnreachable)
        }
    }

    @Test func totalTimeout() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFault(FakeFault(route: "users/get_space_usage", kind: .stall, stallSeconds: 120))
        var request = Self.spaceUsage(fake)
        request.timeouts = HTTPTimeouts(connect: .seconds(5), total: .milliseconds(700), stall: nil)
        let start = ContinuousClock.now
        do {
            _ = try await fake.transport.send(request)
            Issue.record("a stalled request succeeded")
        } catch {
            #expect(Self.kind(of: error) == .timeout)
        }
        #expect(ContinuousClock.now - start < .seconds(60), "well before the 120 s stall ends")
    }

    @Test func cancellationRemovesTheTransfer() async throws {
        let fake = try await FakeDropboxServer.start()
        // The server holds the request for 120 s: an end well before that can only be the cancel
        // (a tight bound here would measure the machine's load, not the transport).
        try await fake.addFault(FakeFault(route: "users/get_space_usage", kind: .stall, stallSeconds: 120))
        let transport = fake.transport
        let request = Self.spaceUsage(fake)
        let task = Task { () throws(DropboxError) -> HTTPResponse in try await transport.send(request) }
        try await Task.sleep(for: .milliseconds(200))
        let start = ContinuousClock.now
        task.cancel()
        let result = await task.result
        #expect(ContinuousClock.now - start < .seconds(60))
        guard case .failure(let error) = result else {
            Issue.record("a cancelled request succeeded")
            return
        }
        #expect(Self.kind(of: error) == .cancelled)
        // The transport goes on working.
        #expect(try await transport.send(Self.spaceUsage(fake)).status == 200)
    }

    @Test func alreadyCancelledTaskSendsNothing() async throws {
        let fake = try await FakeDropboxServer.start()
        let transport = fake.transport
        let request = Self.spaceUsage(fake)
        let task = Task { () throws(DropboxError) -> HTTPResponse in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await transport.send(request)
        }
        guard case .failure(let error) = await task.result else {
            Issue.record("a cancelled request succeeded")
            return
        }
        #expect(Self.kind(of: error) == .cancelled)
        #expect(try await fake.stats().total == 0)
    }

    @Test func connectionResetAndTruncation() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFault(FakeFault(route: "users/get_space_usage", kind: .reset))
        do {
            // A fresh transport: on a reused connection libcurl itself retries once after a reset.
            _ = try await CurlTransport().send(Self.spaceUsage(fake))
            Issue.record("a reset connection answered")
        } catch {
            #expect(Self.kind(of: error) == .connectionLost)
        }
        try await fake.addFault(FakeFault(route: "users/get_space_usage", kind: .truncate, truncateAt: 5))
        do {
            _ = try await fake.transport.send(Self.spaceUsage(fake))
            Issue.record("a truncated body was accepted")
        } catch {
            #expect(Self.kind(of: error) == .connectionLost)
        }
    }

    /// A connection closed in the middle of the reply's header block (no blank line ending it, no
    /// body) is a lost connection, not a reply: libcurl reports it as a complete 200, and the
    /// client then fails it as a malformed reply without retrying.
    @Test func aReplyCutInsideItsHeadersIsRetried() async throws {
        let listener = ResettingListener(reply: Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Le".utf8))
        defer { listener.stop() }
        let client = DropboxHTTPClient(
            endpoints: DropboxEndpoints(all: "http://127.0.0.1:\(listener.port)"),
            tokens: StaticTokenProvider(token: "t"), transport: CurlTransport(),
            pacer: Pacer(policy: RetryPolicy(baseDelay: .milliseconds(10), maxDelay: .milliseconds(20), maxAttempts: 3)))
        do {
            _ = try await client.getSpaceUsage()
            Issue.record("a cut reply succeeded")
        } catch {
            if case .transport(let failure) = error {
                #expect(failure.kind == .connectionLost)
            } else {
                Issue.record("not a transport error: \(error)")
            }
        }
        #expect(listener.connections == 3, "attempts: \(listener.connections)")
    }

    /// A reset during the TLS handshake (curl: "Recv failure: Connection reset by peer",
    /// CURLE_SSL_CONNECT_ERROR) is a lost connection like any other: it must be retried.
    @Test func aResetDuringTheTLSHandshakeIsRetried() async throws {
        let listener = ResettingListener()
        defer { listener.stop() }
        let transport = CurlTransport()
        let request = HTTPRequest(
            method: .post, url: "https://127.0.0.1:\(listener.port)/2/users/get_space_usage",
            body: Array("null".utf8), timeouts: HTTPTimeouts(connect: .seconds(5), total: .seconds(10)))
        do {
            _ = try await transport.send(request)
            Issue.record("the reset connection gave a reply")
        } catch {
            guard case .transport(let failure) = error else {
                Issue.record("not a transport error: \(error)")
                return
            }
            #expect(failure.isTransient, "kind \(failure.kind): \(failure.message)")
        }
        // Through the client: the pacer should try again (3 attempts with this policy).
        let client = DropboxHTTPClient(
            endpoints: DropboxEndpoints(all: "https://127.0.0.1:\(listener.port)"),
            tokens: StaticTokenProvider(token: "t"), transport: transport,
            pacer: Pacer(policy: RetryPolicy(baseDelay: .milliseconds(10), maxDelay: .milliseconds(20), maxAttempts: 3)))
        let before = listener.connections
        await #expect(throws: DropboxError.self) { try await client.getSpaceUsage() }
        #expect(listener.connections - before == 3, "attempts: \(listener.connections - before)")
    }

    @Test func manyTransfersAtOnce() async throws {
        let fake = try await FakeDropboxServer.start()
        // Each of the first 8 requests is held for 8 s: 64 s if the transport ran them in turn, and
        // a bound of 40 s leaves room for a loaded machine.
        try await fake.addFault(FakeFault(route: "users/get_space_usage", kind: .stall, count: 8, stallSeconds: 8))
        let transport = fake.transport
        let request = Self.spaceUsage(fake)
        let start = ContinuousClock.now
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask { try await transport.send(request).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 8))
        #expect(ContinuousClock.now - start < .seconds(40), "in turn they would take 64 s")
    }

    @Test func httpsWithPrivateCA() async throws {
        let certs = FileManager.default.temporaryDirectory.appendingPathComponent("dbx-certs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: certs) }
        let fake = try await FakeDropboxServer.start(arguments: ["--make-certs", certs.path])
        #expect(fake.baseURL.hasPrefix("https://"))
        let url = fake.baseURL + "/_control/stats"
        #expect(try await fake.transport.send(HTTPRequest(method: .get, url: url)).status == 200)
        #expect(try await liveClient(fake).getSpaceUsage().used >= 0)
        do {
            _ = try await CurlTransport().send(HTTPRequest(method: .get, url: url))
            Issue.record("an unknown CA was trusted")
        } catch {
            #expect(Self.kind(of: error) == .tls)
        }
    }
}
