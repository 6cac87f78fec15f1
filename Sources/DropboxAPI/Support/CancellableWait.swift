// Waiting for work that others share, without being held by it. A Task's `value` cannot be
// interrupted: a caller whose own task is cancelled (its FUSE request was interrupted) would still
// wait for the shared work to end. `waitCancellably` returns `cancelled` at once instead, and the
// work goes on for whoever else waits for it (the token refresh every request shares is the case
// that needs it: a stalled token endpoint must not hold a Ctrl-C'd `ls`).
//
// Locking: none of its own (FirstOutcome.swift).

/// The shared work's outcome, or `cancelled` as soon as the calling task is cancelled.
func waitCancellably<T: Sendable>(for work: Task<T, Never>, cancelled: T) async -> T {
    let wait = FirstOutcome<T>()
    return await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            wait.install(continuation)
            Task { wait.finish(await work.value) }
        }
    } onCancel: {
        wait.finish(cancelled)
    }
}
