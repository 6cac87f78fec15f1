// Offline: whether Dropbox is reachable, as the last requests found. A request that cannot even
// connect (connection refused, no route, name not resolved) makes the mount offline; while offline,
// requests on behalf of users (reads not in the disk cache, listings, space usage) fail at once with
// ENETUNREACH instead of waiting through minutes of retries, and the tree keeps being served from
// memory. The change watcher keeps trying Dropbox itself (its client does not block) and brings the
// mount back online when a request succeeds; without a watcher (--no-watch), one user request per
// `retryInterval` is let through as the probe (docs/SEMANTICS.md, "Offline").
//
// `state` (a Mutex) guards the offline time and the last probe; no lock is held across a request.

import DropboxAPI
import Log
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

public final class Connectivity: Sendable {
    private struct State {
        /// Seconds since the epoch when Dropbox was found unreachable, nil while online.
        var offlineSince: Int64?
        /// When a blocked request was last let through as a probe (monotonic seconds).
        var lastProbe: Double = -.infinity
        /// Whether user requests probe at all (not when the change watcher does).
        var userProbes = true
    }
    private let state = Mutex(State())
    private let retryInterval: Double
    private let now: @Sendable () -> Double

    /// `offline`: the mount starts offline (it could not reach Dropbox). `retryInterval`: how often
    /// a blocked request is let through to find out whether Dropbox is back.
    public init(
        offline: Bool = false, retryInterval: Double = 10,
        now: @escaping @Sendable () -> Double = Filesystem.monotonicSeconds
    ) {
        self.retryInterval = retryInterval
        self.now = now
        let t = now()
        if offline {
            state.withLock {
                $0.offlineSince = Int64(time(nil))
                $0.lastProbe = t
            }
        }
    }

    /// Leaves finding Dropbox again to the change watcher: blocked user requests then never probe
    /// (a probe waits through the client's retries, which a user should not).
    func leaveProbesToWatcher() {
        state.withLock { $0.userProbes = false }
    }

    public var since: Int64? { state.withLock { $0.offlineSince } }

    public var isOffline: Bool { since != nil }

    /// Whether a user request may go to Dropbox: always while online; while offline, one every
    /// `retryInterval` (the one that finds Dropbox back).
    func mayTry() -> Bool {
        let t = now()
        return state.withLock { s in
            guard s.offlineSince != nil else { return true }
            guard s.userProbes, t - s.lastProbe >= retryInterval else { return false }
            s.lastProbe = t
            return true
        }
    }

    /// Notes a request's failure; only a failure to connect at all means offline.
    func noteFailure(_ error: DropboxError) {
        guard case .transport(let failure) = error, failure.kind == .couldNotConnect else { return }
        let t = now()
        let changed = state.withLock { s -> Bool in
            defer {
                if s.offlineSince == nil {
                    s.offlineSince = Int64(time(nil))
                    s.lastProbe = t
                }
            }
            return s.offlineSince == nil
        }
        if changed { Log.warning("Dropbox cannot be reached (\(failure.message)): offline, serving the known tree") }
    }

    /// Notes that a request got an answer.
    func noteSuccess() {
        let was = state.withLock { s -> Int64? in
            defer { s.offlineSince = nil }
            return s.offlineSince
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
        guard !blocksWhileOffline || connectivity.mayTry() else { throw connectivity.offlineError }
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

    func export(path: String) async throws(DropboxError) -> ExportResult {
        try await pass { () async throws(DropboxError) in try await client.export(path: path) }
    }

    func getThumbnailBatch(_ entries: [ThumbnailArg]) async throws(DropboxError) -> [Result<[UInt8], ThumbnailFailure>] {
        try await pass { () async throws(DropboxError) in try await client.getThumbnailBatch(entries) }
    }

    func getCurrentAccount() async throws(DropboxError) -> FullAccount {
        try await pass { () async throws(DropboxError) in try await client.getCurrentAccount() }
    }

    func getSpaceUsage() async throws(DropboxError) -> SpaceUsage {
        try await pass { () async throws(DropboxError) in try await client.getSpaceUsage() }
    }
}
