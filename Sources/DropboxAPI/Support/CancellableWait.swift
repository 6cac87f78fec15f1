// Waiting for work that others share, without being held by it. A Task's `value` cannot be
// interrupted: a caller whose own task is cancelled (its FUSE request was interrupted) would still
// wait for the shared work to end. `waitCancellably` returns `cancelled` at once instead, and the
// work goes on for whoever else waits for it (the token refresh every request shares is the case
// that needs it: a stalled token endpoint must not hold a Ctrl-C'd `ls`).
//
// Locking: `state` guards the continuation and the outcome, whichever arrives first; the
// continuation is resumed after the lock is released.

import Synchronization

/// The shared work's outcome, or `cancelled` as soon as the calling task is cancelled.
func waitCancellably<T: Sendable>(for work: Task<T, Never>, cancelled: T) async -> T {
    let wait = OneTimeWait<T>()
    return await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            wait.install(continuation)
            Task { wait.finish(await work.value) }
        }
    } onCancel: {
        wait.finish(cancelled)
    }
}

/// One continuation resumed once, with whichever outcome comes first, whether it comes before or
/// after the continuation is installed.
private final class OneTimeWait<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, Never>?
        var outcome: T?
        var resumed = false
    }

    private let state = Mutex(State())

    func install(_ continuation: CheckedContinuation<T, Never>) {
        let ready = state.withLock { s -> T? in
            guard let outcome = s.outcome else {
                s.continuation = continuation
                return nil
            }
            s.resumed = true
            return outcome
        }
        if let ready { continuation.resume(returning: ready) }
    }

    func finish(_ outcome: T) {
        let waiting = state.withLock { s -> CheckedContinuation<T, Never>? in
            guard !s.resumed, s.outcome == nil else { return nil }
            s.outcome = outcome
            guard let continuation = s.continuation else { return nil }
            s.continuation = nil
            s.resumed = true
            return continuation
        }
        waiting?.resume(returning: outcome)
    }
}
