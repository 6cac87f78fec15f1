// A DropboxClient wrapper that injects scripted faults into another client, so tests can check how
// the filesystem core handles errors, short reads and slow calls without a network: fail the next
// calls of a method, fail its k-th call, shorten the next download, delay a method, or hold its
// calls (all, or the thumbnail batches a test picks) until released (a stalled server; a held call
// whose task is cancelled ends at once, as the live transport's does).

import DropboxAPI
import Synchronization

public final class FaultInjectingClient<Base: DropboxClient>: DropboxClient, Sendable {
    public let base: Base
    /// Guards the call counts and every scripted fault.
    private let plan: Mutex<FaultPlan>

    private struct FaultPlan {
        var calls = CallLog()
        /// Errors for the next calls of each method, used in order.
        var nextFailures: [DropboxMethod: [DropboxError]] = [:]
        /// Errors for particular call numbers (1-based, counted since creation or resetCalls()).
        var numberedFailures: [DropboxMethod: [Int: DropboxError]] = [:]
        /// Byte counts to cut the next download replies to, used in order.
        var truncations: [UInt64] = []
        var delays: [DropboxMethod: Duration] = [:]
        /// Methods whose calls wait in `waiting` until released.
        var held: Set<DropboxMethod> = []
        /// Which get_thumbnail_batch calls are held, by their entries, until released.
        var heldThumbnails: (@Sendable ([ThumbnailArg]) -> Bool)?
        var waiting: [DropboxMethod: [UInt64: CheckedContinuation<Bool, Never>]] = [:]
        var nextWaiter: UInt64 = 0
        /// Held calls that ended because their task was cancelled.
        var cancelledWhileHeld: [DropboxMethod: Int] = [:]
        /// The priorities of the tasks that made each method's calls (raw values).
        var priorities: [DropboxMethod: Set<UInt8>] = [:]
    }

    /// What to do with one call, decided when it starts.
    private struct Admission {
        var delay: Duration
        var failure: DropboxError?
        var truncation: UInt64?
    }

    public init(_ base: Base) {
        self.base = base
        self.plan = Mutex(FaultPlan())
    }

    // MARK: Scripting faults

    /// Makes the next `count` calls of `method` fail with `error` without reaching the base client.
    public func failNext(_ method: DropboxMethod, with error: DropboxError, count: Int = 1) {
        plan.withLock { $0.nextFailures[method, default: []] += Array(repeating: error, count: count) }
    }

    /// Makes call number `k` of `method` (1-based, counted since creation or resetCalls()) fail.
    /// A numbered failure takes precedence over `failNext` for that call.
    public func failCall(number k: Int, of method: DropboxMethod, with error: DropboxError) {
        plan.withLock { $0.numberedFailures[method, default: [:]][k] = error }
    }

    /// Makes the next download call return at most `bytes` bytes of what the base client returned.
    /// Consumed by that call even if it fails.
    public func truncateNextDownload(to bytes: UInt64) {
        plan.withLock { $0.truncations.append(bytes) }
    }

    /// Delays every later call of `method` by `duration` before it runs (`.zero` removes the delay).
    public func delay(method: DropboxMethod, by duration: Duration) {
        plan.withLock { $0.delays[method] = duration > .zero ? duration : nil }
    }

    /// Holds every later call of `method` until `release(method)`; a held call whose task is
    /// cancelled fails with a cancelled transport error.
    public func hold(_ method: DropboxMethod) {
        plan.withLock { _ = $0.held.insert(method) }
    }

    /// Holds the get_thumbnail_batch calls whose entries `which` picks (e.g. one size) until
    /// `release(.getThumbnailBatch)`; the others go on.
    public func holdThumbnailBatches(where which: @escaping @Sendable ([ThumbnailArg]) -> Bool) {
        plan.withLock { $0.heldThumbnails = which }
    }

    /// Lets the held calls of `method` go on, and stops holding new ones.
    public func release(_ method: DropboxMethod) {
        let waiters = plan.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.held.remove(method)
            if method == .getThumbnailBatch { state.heldThumbnails = nil }
            defer { state.waiting[method] = nil }
            return Array((state.waiting[method] ?? [:]).values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Calls of `method` waiting in a hold now.
    public func heldCalls(_ method: DropboxMethod) -> Int {
        plan.withLock { $0.waiting[method]?.count ?? 0 }
    }

    /// Held calls of `method` that ended because their task was cancelled.
    public func cancelledCalls(_ method: DropboxMethod) -> Int {
        plan.withLock { $0.cancelledWhileHeld[method] ?? 0 }
    }

    /// Removes every scripted fault that has not fired yet, and all delays.
    public func clearFaults() {
        plan.withLock { state in
            state.nextFailures = [:]
            state.numberedFailures = [:]
            state.truncations = []
            state.delays = [:]
        }
    }

    // MARK: Call records

    /// Calls per method, by route name, including calls that failed by injection.
    public var calls: [String: Int] {
        plan.withLock { $0.calls.byRoute }
    }

    public func callCount(_ method: DropboxMethod) -> Int {
        plan.withLock { $0.calls.count(method) }
    }

    public func resetCalls() {
        plan.withLock { state in
            state.calls = CallLog()
            state.priorities = [:]
        }
    }

    /// The priorities of the tasks that called `method` since creation or resetCalls(), lowest
    /// first.
    public func priorities(_ method: DropboxMethod) -> [TaskPriority] {
        plan.withLock { $0.priorities[method] ?? [] }.sorted().map { TaskPriority(rawValue: $0) }
    }

    // MARK: DropboxClient

    public func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
        try await admit(.listFolder)
        return try await base.listFolder(arg)
    }

    public func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
        try await admit(.listFolderContinue)
        return try await base.listFolderContinue(cursor: cursor)
    }

    public func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String {
        try await admit(.listFolderGetLatestCursor)
        return try await base.listFolderGetLatestCursor(arg)
    }

    public func listFolderLongpoll(cursor: String, timeoutSeconds: Int) async throws(DropboxError) -> LongpollResult {
        try await admit(.listFolderLongpoll)
        return try await base.listFolderLongpoll(cursor: cursor, timeoutSeconds: timeoutSeconds)
    }

    public func getMetadata(path: String) async throws(DropboxError) -> Metadata {
        try await admit(.getMetadata)
        return try await base.getMetadata(path: path)
    }

    public func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult {
        let truncation = try await admit(.download)
        var result = try await base.download(path: path, range: range)
        if let truncation, UInt64(result.data.count) > truncation {
            result.data.removeLast(result.data.count - Int(truncation))
        }
        return result
    }

    public func export(path: String) async throws(DropboxError) -> ExportResult {
        try await admit(.export)
        return try await base.export(path: path)
    }

    public func getThumbnailBatch(_ entries: [ThumbnailArg]) async throws(DropboxError)
        -> [Result<[UInt8], ThumbnailFailure>]
    {
        try await admit(.getThumbnailBatch, holding: plan.withLock { $0.heldThumbnails?(entries) ?? false })
        return try await base.getThumbnailBatch(entries)
    }

    public func listRevisions(_ arg: ListRevisionsArg) async throws(DropboxError) -> ListRevisionsResult {
        try await admit(.listRevisions)
        return try await base.listRevisions(arg)
    }

    public func getCurrentAccount() async throws(DropboxError) -> FullAccount {
        try await admit(.getCurrentAccount)
        return try await base.getCurrentAccount()
    }

    public func getSpaceUsage() async throws(DropboxError) -> SpaceUsage {
        try await admit(.getSpaceUsage)
        return try await base.getSpaceUsage()
    }

    /// Counts the call and applies its delay and failure; returns the download truncation, if any.
    @discardableResult
    func admit(_ method: DropboxMethod, holding: Bool = false) async throws(DropboxError) -> UInt64? {
        let admission = plan.withLock { state in
            let number = state.calls.record(method)
            state.priorities[method, default: []].insert(Task.currentPriority.rawValue)
            var failure = state.numberedFailures[method]?.removeValue(forKey: number)
            if failure == nil, var queue = state.nextFailures[method], !queue.isEmpty {
                failure = queue.removeFirst()
                state.nextFailures[method] = queue
            }
            var truncation: UInt64?
            if method == .download, !state.truncations.isEmpty {
                truncation = state.truncations.removeFirst()
            }
            return Admission(delay: state.delays[method] ?? .zero, failure: failure, truncation: truncation)
        }
        try await sleepUnlessCancelled(admission.delay)
        try await waitWhileHeld(method, holding: holding)
        if let failure = admission.failure { throw failure }
        return admission.truncation
    }

    /// Waits while `method` is held, or (`holding`) until it is released.
    private func waitWhileHeld(_ method: DropboxMethod, holding: Bool) async throws(DropboxError) {
        let id = plan.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let released = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = plan.withLock { state -> Bool? in
                    let held = state.held.contains(method) || (holding && state.heldThumbnails != nil)
                    guard held else { return true }
                    if Task.isCancelled {
                        state.cancelledWhileHeld[method, default: 0] += 1
                        return false
                    }
                    state.waiting[method, default: [:]][id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = plan.withLock { state -> CheckedContinuation<Bool, Never>? in
                guard let waiter = state.waiting[method]?.removeValue(forKey: id) else { return nil }
                state.cancelledWhileHeld[method, default: 0] += 1
                return waiter
            }
            waiter?.resume(returning: false)
        }
        if !released { throw .transport(TransportError(kind: .cancelled, message: "the request was cancelled")) }
    }
}
