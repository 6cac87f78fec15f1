// Faults injected by the fake server, through the whole client over real HTTP: rate limits as
// JSON and as text, 5xx, reset connections, truncated bodies, stalls, malformed JSON and expired
// tokens. Each must end in success after retries, or in the right error.

import DropboxAPI
import DropboxTestSupport
import Testing

@Suite struct LiveResilienceTests {
    static func ready(_ arguments: [String] = []) async throws -> (FakeDropboxServer, DropboxHTTPClient) {
        let fake = try await FakeDropboxServer.start(arguments: arguments)
        try await fake.addFile("/f.bin", size: 50_000, seed: 3)
        try await fake.resetStats()
        return (fake, liveClient(fake))
    }

    @Test func rateLimitJSONIsWaitedOut() async throws {
        let (fake, client) = try await Self.ready()
        try await fake.addFault(FakeFault(route: "files/get_metadata", kind: .rateLimitJSON, retryAfter: 1))
        let start = ContinuousClock.now
        #expect(try await client.getMetadata(path: "/f.bin").name == "f.bin")
        #expect(ContinuousClock.now - start >= .seconds(1))
        #expect(try await fake.stats().routes["files/get_metadata"] == 2)
    }

    @Test func rateLimitTextIsWaitedOutAndPausesOtherRequests() async throws {
        let (fake, client) = try await Self.ready()
        // A pause of 3 s, so that a loaded machine's scheduling cannot let it begin and end
        // between two looks at the pacer.
        try await fake.addFault(FakeFault(route: "files/download", kind: .rateLimitText, retryAfter: 3))
        let start = ContinuousClock.now
        async let download = client.download(path: "/f.bin", range: ByteRange(offset: 0, length: 10))
        while !client.pacer.isPaused {
            guard ContinuousClock.now - start < .seconds(30) else {
                Issue.record("the 429 never paused the client")
                break
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        // Starts while the pause runs: it must wait for the pause too.
        let usage = try await client.getSpaceUsage()
        let usageDone = ContinuousClock.now
        #expect(try await download.data.count == 10)
        #expect(usage.used > 0)
        #expect(usageDone - start >= .seconds(3))
    }

    @Test func serverErrorsAreRetried() async throws {
        let (fake, client) = try await Self.ready()
        try await fake.addFault(FakeFault(route: "files/list_folder", kind: .unavailable, count: 2))
        #expect(try await client.listFolder(ListFolderArg(path: "")).entries.count == 1)
        #expect(try await fake.stats().routes["files/list_folder"] == 3)
    }

    @Test func persistentServerErrorsGiveUp() async throws {
        let (fake, client) = try await Self.ready()
        try await fake.addFault(FakeFault(route: "files/list_folder", kind: .internalError, count: 0))
        await #expect(throws: DropboxError.serverError(status: 500)) {
            try await client.listFolder(ListFolderArg(path: ""))
        }
        #expect(try await fake.stats().routes["files/list_folder"] == fastPolicy.maxAttempts)
    }

    @Test func connectionResetIsRetried() async throws {
        let (fake, client) = try await Self.ready()
        // libcurl retries a reused connection once by itself; three resets need the pacer.
        try await fake.addFault(FakeFault(route: "files/download", kind: .reset, count: 3))
        let expected = try await fake.content("/f.bin")
        #expect(try await client.download(path: "/f.bin", range: nil).data == expected)
        #expect(try await fake.stats().routes["files/download"] == 4)
    }

    @Test func truncatedBodyIsRetried() async throws {
        let (fake, client) = try await Self.ready()
        try await fake.addFault(FakeFault(route: "files/download", kind: .truncate, count: 2, truncateAt: 1000))
        let expected = try await fake.content("/f.bin")
        let range = ByteRange(offset: 100, length: 20_000)
        #expect(try await client.download(path: "/f.bin", range: range).data == Array(expected[100..<20_100]))
        #expect(try await fake.stats().routes["files/download"] == 3)
    }

    @Test func stallEndsInATimeout() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFault(FakeFault(route: "users/get_space_usage", kind: .stall, count: 0, stallSeconds: 120))
        let client = liveClient(
            fake, policy: RetryPolicy(maxAttempts: 1), timeouts: HTTPTimeouts(connect: .seconds(5), stall: .seconds(1)))
        let start = ContinuousClock.now
        await #expect {
            _ = try await client.getSpaceUsage()
        } throws: { error in
            guard case .transport(let t) = error as? DropboxError else { return false }
            return t.kind == .timeout
        }
        let elapsed = ContinuousClock.now - start
        #expect(
            elapsed >= .seconds(1) && elapsed < .seconds(60), "the 1 s stall timeout, well before the 120 s stall ends")
    }

    /// Without a stall limit, the RPC deadline still ends every attempt (each retried), so the
    /// request fails within attempts × deadline instead of waiting for the server.
    @Test func anRPCAttemptEndsAtItsDeadline() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFault(FakeFault(route: "users/get_space_usage", kind: .stall, count: 0, stallSeconds: 120))
        let client = DropboxHTTPClient(
            endpoints: fake.endpoints, tokens: StaticTokenProvider(token: fake.token), transport: fake.transport,
            pacer: Pacer(policy: RetryPolicy(baseDelay: .milliseconds(20), maxDelay: .milliseconds(50), maxAttempts: 3)),
            configuration: DropboxHTTPClient.Configuration(
                timeouts: HTTPTimeouts(connect: .seconds(5), stall: nil, lowSpeed: nil), rpcDeadline: .seconds(1)))
        let start = ContinuousClock.now
        await #expect {
            _ = try await client.getSpaceUsage()
        } throws: { error in
            guard case .transport(let t) = error as? DropboxError else { return false }
            return t.kind == .timeout
        }
        let elapsed = ContinuousClock.now - start
        // Three attempts of 1 s each; without the deadline one attempt alone would take 120 s. The
        // upper bound leaves room for a loaded machine.
        #expect(elapsed >= .seconds(3) && elapsed < .seconds(60), "\(elapsed)")
        #expect(try await fake.stats().routes["users/get_space_usage"] == 3)
    }

    @Test func stallThenSuccessOnRetry() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFault(FakeFault(route: "users/get_space_usage", kind: .stall, stallSeconds: 10))
        let client = liveClient(fake, timeouts: HTTPTimeouts(connect: .seconds(5), stall: .milliseconds(500)))
        #expect(try await client.getSpaceUsage().used >= 0)
    }

    @Test func malformedJSON() async throws {
        let (fake, client) = try await Self.ready()
        try await fake.addFault(FakeFault(route: "files/list_folder", kind: .malformedJSON))
        try await fake.addFault(FakeFault(route: "files/download", kind: .malformedJSON))
        for attempt in [0, 1] {
            await #expect {
                if attempt == 0 {
                    _ = try await client.listFolder(ListFolderArg(path: ""))
                } else {
                    _ = try await client.download(path: "/f.bin", range: nil)
                }
            } throws: { error in
                if case .malformedResponse = error as? DropboxError { return true }
                return false
            }
        }
    }

    @Test func expiredStaticTokenSurfaces() async throws {
        let (fake, client) = try await Self.ready()
        try await fake.addFault(FakeFault(route: "files/list_folder", kind: .expiredToken))
        await #expect(throws: DropboxError.authentication(.expiredAccessToken)) {
            try await client.listFolder(ListFolderArg(path: ""))
        }
        let wrong = liveClient(fake, tokens: StaticTokenProvider(token: "not-a-token"))
        await #expect(throws: DropboxError.authentication(.invalidAccessToken)) { try await wrong.getSpaceUsage() }
    }

    @Test func missingScope() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addToken("meta-only", scopes: ["files.metadata.read"])
        let client = liveClient(fake, tokens: StaticTokenProvider(token: "meta-only"))
        _ = try await client.listFolder(ListFolderArg(path: ""))
        await #expect(throws: DropboxError.authentication(.missingScope("account_info.read"))) {
            try await client.getCurrentAccount()
        }
    }
}
