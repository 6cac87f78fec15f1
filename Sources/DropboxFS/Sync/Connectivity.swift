// Offline: whether Dropbox is reachable, as the last requests found. A request that cannot even
// connect (connection refused, no route, name not resolved) makes the mount offline; while offline,
// requests on behalf of users (reads not in the disk cache, listings, space usage) fail at once with
// ENETUNREACH instead of waiting through minutes of retries, and the tree keeps being served from
// memory. The change watcher keeps trying Dropbox itself (it talks to the client directly, not
// through the gate) and brings the mount back online when a request succeeds (docs/SEMANTICS.md,
// "Offline").
//
// `state` (a Mutex) guards the offline time only; no lock is held across a request.

import DropboxAPI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

public final class Connectivity: Sendable {
    /// Seconds since the epoch when Dropbox was last found unreachable, nil while online.
    private let offlineSince = Mutex<Int64?>(nil)

    public init(offline: Bool = false) {
        if offline { offlineSince.withLock { $0 = Int64(time(nil)) } }
    }

    public var since: Int64? { offlineSince.withLock { $0 } }

    public var isOffline: Bool { since != nil }

    /// Notes a request's failure; only a failure to connect at all means offline.
    func noteFailure(_ error: DropboxError) {
        guard case .transport(let failure) = error, failure.kind == .couldNotConnect else { return }
        let changed = offlineSince.withLock { s -> Bool in
            defer { if s == nil { s = Int64(time(nil)) } }
            return s == nil
        }
        if changed { Log.warning("Dropbox cannot be reached (\(failure.message)): offline, serving the known tree") }
    }

    /// Notes that a request got an answer.
    func noteSuccess() {
        let was = offlineSince.withLock { s -> Int64? in
            defer { s = nil }
            return s
        }
        if let was { Log.info("Dropbox is reachable again (offline for \(Int64(time(nil)) - was) s)") }
    }

    /// The error a request gets while offline.
    var offlineError: DropboxError {
        .transport(TransportError(kind: .offline, message: "offline: Dropbox has been unreachable since \(Self.timestamp(since ?? 0))"))
    }

    /// "2026-12-01T17:04:05Z".
    public static func timestamp(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}

/// A client that tells `connectivity` what each request found. With `blocksWhileOffline` (the
/// client of user-driven requests) it fails at once while offline; without (the sync engine's
/// client, whose requests are the probes that find Dropbox again) it always tries.
struct ConnectivityGate: DropboxClient {
    let client: any DropboxClient
    let connectivity: Connectivity
    let blocksWhileOffline: Bool

    private func pass<T>(_ call: () async throws(DropboxError) -> T) async throws(DropboxError) -> T {
        guard !(blocksWhileOffline && connectivity.isOffline) else { throw connectivity.offlineError }
        do {
            let result = try await call()
            connectivity.noteSuccess()
            return result
        } catch {
            connectivity.noteFailure(error)
            throw error
        }
    }

    func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
        try await pass { () async throws(DropboxError) in try await client.listFolder(arg) }
    }

    func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
        try await pass { () async throws(DropboxError) in try await client.listFolderContinue(cursor: cursor) }
    }

    func listFolderAll(_ arg: ListFolderArg, each: (ListFolderResult) -> Bool) async throws(DropboxError) -> String? {
        try await pass { () async throws(DropboxError) in try await client.listFolderAll(arg, each: each) }
    }

    func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String {
        try await pass { () async throws(DropboxError) in try await client.listFolderGetLatestCursor(arg) }
    }

    func listFolderLongpoll(cursor: String, timeoutSeconds: Int) async throws(DropboxError) -> LongpollResult {
        try await pass { () async throws(DropboxError) in
            try await client.listFolderLongpoll(cursor: cursor, timeoutSeconds: timeoutSeconds)
        }
    }

    func getMetadata(path: String) async throws(DropboxError) -> Metadata {
        try await pass { () async throws(DropboxError) in try await client.getMetadata(path: path) }
    }

    func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult {
        try await pass { () async throws(DropboxError) in try await client.download(path: path, range: range) }
    }

    func download(path: String, range: ByteRange?, freshConnection: Bool) async throws(DropboxError) -> DownloadResult {
        try await pass { () async throws(DropboxError) in
            try await client.download(path: path, range: range, freshConnection: freshConnection)
        }
    }

    func getCurrentAccount() async throws(DropboxError) -> FullAccount {
        try await pass { () async throws(DropboxError) in try await client.getCurrentAccount() }
    }

    func getSpaceUsage() async throws(DropboxError) -> SpaceUsage {
        try await pass { () async throws(DropboxError) in try await client.getSpaceUsage() }
    }
}
