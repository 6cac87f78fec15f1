// Helpers for tests that run the real client over HTTP against the fake server: a client wired
// to a fake with a fast retry policy, and a transport wrapper that counts requests per route.

import DropboxAPI
import DropboxTestSupport
import Synchronization

/// Retries quickly so that fault tests stay short; the real policy is covered by table tests.
let fastPolicy = RetryPolicy(
    baseDelay: .milliseconds(20), maxDelay: .milliseconds(200), rateLimitJitter: .milliseconds(20))

func liveClient(
    _ fake: FakeDropboxServer, tokens: (any AccessTokenProvider)? = nil, transport: (any HTTPTransport)? = nil,
    policy: RetryPolicy = fastPolicy, timeouts: HTTPTimeouts = HTTPTimeouts(connect: .seconds(5), stall: .seconds(10))
) -> DropboxHTTPClient {
    DropboxHTTPClient(
        endpoints: fake.endpoints, tokens: tokens ?? StaticTokenProvider(token: fake.token),
        transport: transport ?? fake.transport, pacer: Pacer(policy: policy),
        configuration: DropboxHTTPClient.Configuration(timeouts: timeouts))
}

/// Passes requests on and counts them by URL path.
final class CountingTransport: HTTPTransport {
    private let inner: any HTTPTransport
    /// Requests per route, guarded by the mutex.
    private let counts = Mutex<[String: Int]>([:])

    init(_ inner: any HTTPTransport) {
        self.inner = inner
    }

    func count(_ route: String) -> Int { counts.withLock { $0[route] ?? 0 } }

    func send(_ request: HTTPRequest) async throws(DropboxError) -> HTTPResponse {
        counts.withLock { $0[request.route, default: 0] += 1 }
        return try await inner.send(request)
    }
}

/// Every name in a listing, with the entry kind, for comparisons.
func names(_ entries: [Metadata]) -> [String] {
    entries.map { entry in
        switch entry {
        case .file(let f): return "file:\(f.pathLower ?? f.name)"
        case .folder(let f): return "folder:\(f.pathLower ?? f.name)"
        case .deleted(let d): return "deleted:\(d.pathLower ?? d.name)"
        }
    }
}

/// list_folder and continue until has_more is false.
func listAll(_ client: DropboxHTTPClient, _ arg: ListFolderArg) async throws -> (
    entries: [Metadata], cursor: String, pages: Int
) {
    var result = try await client.listFolder(arg)
    var entries = result.entries
    var pages = 1
    while result.hasMore {
        result = try await client.listFolderContinue(cursor: result.cursor)
        entries += result.entries
        pages += 1
    }
    return (entries, result.cursor, pages)
}

/// All changes since `cursor`.
func changes(_ client: DropboxHTTPClient, since cursor: String) async throws -> (entries: [Metadata], cursor: String) {
    var entries: [Metadata] = []
    var cursor = cursor
    while true {
        let page = try await client.listFolderContinue(cursor: cursor)
        entries += page.entries
        cursor = page.cursor
        if !page.hasMore { return (entries, cursor) }
    }
}
