// statfs from users/get_space_usage, cached for a while so `df` does not cost a request each time.
// Once an answer is known, `df` never waits for Dropbox: an answer older than `spaceUsageTTL` is
// given at once and asked again in the background (one request at a time), because a `df` that
// hangs on a slow or dead network hangs every script and desktop applet that calls it. Only the
// first `df` of a mount waits, since there is nothing to show yet; an interrupted one stops
// waiting (its request is cancelled with its task).

import DropboxAPI
import Log

public struct FilesystemStats: Sendable, Equatable {
    public var blockSize: UInt64
    public var totalBlocks: UInt64
    public var freeBlocks: UInt64
    public var files: UInt64
    public var maxNameLength: UInt64
}

extension Filesystem {
    public static let statfsBlockSize: UInt64 = 4096

    /// Space numbers of the account, always answered later (the first `df` of a mount waits for
    /// Dropbox); on failure the last known answer (or zeros) so `df` never fails. Fails only with
    /// `.interrupted`, when its task is cancelled (its request was interrupted).
    public func statfs() -> Answer<FilesystemStats> {
        .later { [self] () async throws(FilesystemError) -> FilesystemStats in try await statistics() }
    }

    /// The later answer of `statfs`.
    func statistics() async throws(FilesystemError) -> FilesystemStats {
        let now = options.monotonicNow()
        let cached = spaceUsage.withLock { $0 }
        let usage: SpaceUsage?
        if let cached {
            usage = cached.value
            if now - cached.at >= options.spaceUsageTTL { refreshSpaceUsage() }
        } else {
            usage = try await fetchSpaceUsage()
        }
        let bs = Self.statfsBlockSize
        let limit = usage?.effectiveLimit ?? 0
        let used = usage?.effectiveUsed ?? 0
        let free = limit > used ? limit - used : 0
        return FilesystemStats(
            blockSize: bs, totalBlocks: limit / bs, freeBlocks: free / bs,
            files: UInt64(entryCount), maxNameLength: UInt64(NodeName.maxBytes))
    }

    /// Asks Dropbox for the space numbers and keeps the answer; on failure the last known answer
    /// (or nil). Throws only `.interrupted`.
    private func fetchSpaceUsage() async throws(FilesystemError) -> SpaceUsage? {
        do {
            let fresh = try await client.getSpaceUsage()
            let at = options.monotonicNow()
            spaceUsage.withLock { $0 = (fresh, at) }
            return fresh
        } catch {
            if Task.isCancelled { throw .interrupted }
            // While offline the failure is the rule, already logged once (Connectivity).
            if !connectivity.isOffline { Log.warning("space usage unavailable: \(error)") }
            return spaceUsage.withLock { $0?.value }
        }
    }

    /// Asks again in the background, unless a refresh is already under way.
    private func refreshSpaceUsage() {
        guard !spaceUsageRefreshing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Task(priority: TaskPriorities.background) { [self] in
            _ = try? await fetchSpaceUsage()
            spaceUsageRefreshing.store(false, ordering: .releasing)
        }
    }
}
