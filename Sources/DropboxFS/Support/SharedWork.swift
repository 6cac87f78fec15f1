// Work that several requests may wait for: a folder listing, or a part of a file being downloaded.
// It runs once, in a task of its own, and every waiter gets its outcome. A waiter whose own task is
// cancelled (its FUSE request was interrupted) stops waiting at once with `.interrupted`; the other
// waiters go on waiting and the work goes on for them. Only when the last waiter left that way is
// the work cancelled, since nobody needs it any more; it is then *abandoned*, and whoever comes upon
// it later starts the work afresh instead of joining it (`value()` answers nil). Work that nobody
// waited for in the first place (a read-ahead) is never abandoned: it runs to its end.
//
// Locking: `state` guards the outcome, the waiters, the abandoned flag and the task. Only
// bookkeeping runs under it: continuations are resumed and the task cancelled after it is released.

import Synchronization

final class SharedWork<Value: Sendable>: Sendable {
    private enum Outcome: Sendable {
        case finished(Result<Value, FilesystemError>)
        case abandoned
    }

    private struct State {
        var outcome: Result<Value, FilesystemError>?
        var waiters: [UInt64: CheckedContinuation<Outcome, Never>] = [:]
        var nextWaiter: UInt64 = 0
        var abandoned = false
        var task: Task<Void, Never>?
    }

    private let state = Mutex(State())

    /// Starts `operation` in a task of its own. It receives the work it runs for, so it can tell
    /// whether a map still holds this work or a newer one.
    init(_ operation: @escaping @Sendable (SharedWork<Value>) async -> Result<Value, FilesystemError>) {
        let task = Task { [self] in
            let result = await operation(self)
            finish(result)
        }
        state.withLock { s in
            if s.outcome == nil { s.task = task }
        }
    }

    /// True once every waiter left by cancellation before the work ended: it was cancelled, and a
    /// new caller must start the work again rather than wait for it.
    var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// True when the work has ended (successfully or not).
    var isFinished: Bool { state.withLock { $0.outcome != nil } }

    /// Callers waiting for the outcome now.
    var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// Waits for the outcome: the value, or nil when the work was abandoned (start it again).
    /// Throws the work's error, or `.interrupted` as soon as the calling task is cancelled.
    func value() async throws(FilesystemError) -> Value? {
        let id = state.withLock { s in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let now = state.withLock { s -> Outcome? in
                    if s.abandoned { return .abandoned }
                    if let outcome = s.outcome { return .finished(outcome) }
                    if Task.isCancelled { return .finished(.failure(.interrupted)) }
                    s.waiters[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            leave(id)
        }
        switch outcome {
        case .finished(let result): return try result.get()
        case .abandoned: return nil
        }
    }

    /// Cancels the work whoever waits for it (its waiters get its outcome, usually `.interrupted`).
    func cancel() {
        state.withLock { $0.task }?.cancel()
    }

    /// A waiter's task was cancelled: it stops waiting; the last one to leave cancels the work.
    private func leave(_ id: UInt64) {
        let (waiter, abandonedTask) = state.withLock { s -> (CheckedContinuation<Outcome, Never>?, Task<Void, Never>?) in
            guard let waiter = s.waiters.removeValue(forKey: id) else { return (nil, nil) }
            guard s.waiters.isEmpty, s.outcome == nil else { return (waiter, nil) }
            s.abandoned = true
            return (waiter, s.task)
        }
        waiter?.resume(returning: .finished(.failure(.interrupted)))
        abandonedTask?.cancel()
    }

    private func finish(_ result: Result<Value, FilesystemError>) {
        let waiters = state.withLock { s -> [CheckedContinuation<Outcome, Never>] in
            s.outcome = result
            s.task = nil
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: .finished(result)) }
    }
}
