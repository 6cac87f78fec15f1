// statfs from users/get_space_usage, cached for a while so `df` does not cost a request each time.
// An interrupted `df` stops waiting (its request is cancelled with its task).

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

    /// Space numbers of the account; on failure the last known answer (or zeros) so `df` never fails.
    /// Throws only `.interrupted`, when the calling task is cancelled (its request was interrupted).
    public func statistics() async throws(FilesystemError) -> FilesystemStats {
        let now = options.monotonicNow()
        var usage: SpaceUsage? = spaceUsage.withLock { cached in
            guard let cached, now - cached.at < options.spaceUsageTTL else { return nil }
            return cached.value
        }
        if usage == nil {
            do {
                let fresh = try await client.getSpaceUsage()
                spaceUsage.withLock { $0 = (fresh, now) }
                usage = fresh
            } catch {
                if Task.isCancelled { throw .interrupted }
                // While offline the failure is the rule, already logged once (Connectivity).
                if !connectivity.isOffline { Log.warning("space usage unavailable: \(error)") }
                usage = spaceUsage.withLock { $0?.value }
            }
        }
        let bs = Self.statfsBlockSize
        let limit = usage?.effectiveLimit ?? 0
        let used = usage?.effectiveUsed ?? 0
        let free = limit > used ? limit - used : 0
        return FilesystemStats(
            blockSize: bs, totalBlocks: limit / bs, freeBlocks: free / bs,
            files: UInt64(entryCount), maxNameLength: UInt64(NodeName.maxBytes))
    }
}
