// Waiting, from a task, for work that runs on the disk queue (FileReader.diskQueue): opening a disk
// cache entry or creating one may wait as long as the disk does (a cache folder on NFS whose server
// is gone waits forever), so it never runs on the FUSE thread nor on Swift's cooperative pool. The
// waiting task stops waiting when it is cancelled (an interrupted request, the session closing:
// `.interrupted`) or when `waitingAtMost` passes (nil: the caller goes on without the disk). The
// work itself goes on; a result nobody took is handed to `unclaimed` on the queue (a file it
// opened is closed when the result goes; a file it created must be deleted).
//
// A wait that ran out marks the queue stalled (`DiskStall`) until that work ends: meanwhile opens
// and reads do not wait for the disk at all and go without the cache, so a disk that stopped
// answering costs one wait, not one per request.
//
// Locking: each wait's `OneShot.state` guards its continuation and whether it was resumed;
// `DiskStall.overdue` the count of overdue works. Continuations are resumed after the lock is released.

import Dispatch
import Synchronization

enum DiskWork {
    /// The result of `work`, run on `queue`; nil when `timeout` seconds pass first; `.interrupted`
    /// when the calling task is cancelled first.
    static func run<T: Sendable>(
        on queue: DispatchQueue, stall: DiskStall, waitingAtMost timeout: Double,
        unclaimed: @escaping @Sendable (T) -> Void = { _ in }, _ work: @escaping @Sendable () -> T
    ) async throws(FilesystemError) -> T? {
        let waiter = OneShot<T>()
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<OneShot<T>.Outcome, Never>) in
                waiter.attach(continuation)
                if Task.isCancelled {
                    waiter.finish(.cancelled)
                    return
                }
                queue.async {
                    let result = work()
                    if !waiter.finish(.done(result)) { unclaimed(result) }
                    if waiter.wasOverdue { stall.ended() }
                }
                queue.asyncAfterOnTimer(seconds: timeout) {
                    if waiter.finish(.timedOut) { stall.began() }
                }
            }
        } onCancel: {
            waiter.finish(.cancelled)
        }
        switch outcome {
        case .done(let result): return result
        case .timedOut: return nil
        case .cancelled: throw .interrupted
        }
    }
}

/// Whether a wait for the disk queue ran out and its work has not ended yet.
final class DiskStall: Sendable {
    private let overdue = Mutex(0)

    var isStalled: Bool { overdue.withLock { $0 > 0 } }

    fileprivate func began() { overdue.withLock { $0 += 1 } }
    fileprivate func ended() { overdue.withLock { $0 -= 1 } }
}

extension DispatchQueue {
    /// Runs `body` after `seconds` on a global queue (not on `self`, which may be the stalled one).
    fileprivate func asyncAfterOnTimer(seconds: Double, _ body: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: body)
    }
}

/// One continuation, resumed once: with the work's result, or when cancelled or out of time first.
private final class OneShot<T: Sendable>: Sendable {
    enum Outcome: Sendable {
        case done(T)
        case timedOut
        case cancelled
    }

    private struct State {
        var continuation: CheckedContinuation<Outcome, Never>?
        /// The wait ended (an outcome was given).
        var ended = false
        /// An outcome that came before the continuation, until it is attached. Once handed over,
        /// an outcome is not kept here: this object lives on until the timeout's timer fires, and
        /// a result kept that long (an open cache file) would hold a descriptor per recent open.
        var early: Outcome?
        var timedOut = false
    }

    private let state = Mutex(State())

    /// Whether the wait ran out before the work ended (the stall it marked must be ended).
    var wasOverdue: Bool { state.withLock { $0.timedOut } }

    func attach(_ continuation: CheckedContinuation<Outcome, Never>) {
        let early = state.withLock { s -> Outcome? in
            guard let early = s.early else {
                s.continuation = continuation
                return nil
            }
            s.early = nil
            return early
        }
        if let early { continuation.resume(returning: early) }
    }

    /// Ends the wait with `outcome`; false when it had already ended.
    @discardableResult
    func finish(_ outcome: Outcome) -> Bool {
        let (taken, continuation) = state.withLock { s -> (Bool, CheckedContinuation<Outcome, Never>?) in
            guard !s.ended else { return (false, nil) }
            s.ended = true
            if case .timedOut = outcome { s.timedOut = true }
            guard let continuation = s.continuation else {
                s.early = outcome
                return (true, nil)
            }
            s.continuation = nil
            return (true, continuation)
        }
        continuation?.resume(returning: outcome)
        return taken
    }
}
