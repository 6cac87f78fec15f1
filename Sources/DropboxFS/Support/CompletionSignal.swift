// A one-shot signal that async callers can wait on with a timeout: a request that needs a folder
// being filled by a recursive listing waits a little for that listing before listing the folder
// itself. (Awaiting a Task's value cannot time out, hence this.) A waiter whose task is cancelled
// stops waiting at once.

import Synchronization

final class CompletionSignal: Sendable {
    private struct State {
        var fired = false
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
    }

    /// Guards whether the signal fired and who waits for it.
    private let state = Mutex(State())

    func fire() {
        let waiters = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
            s.fired = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Returns true once fired, or false when `seconds` pass first (never, for infinity) or the
    /// calling task is cancelled (its request was interrupted).
    func wait(seconds: Double) async -> Bool {
        let id = state.withLock { s in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now: Bool? = state.withLock { s in
                    if s.fired { return true }
                    if Task.isCancelled { return false }
                    s.waiters[id] = continuation
                    return nil
                }
                if let now {
                    continuation.resume(returning: now)
                    return
                }
                guard seconds.isFinite else { return }
                Task {
                    try? await Task.sleep(for: .seconds(seconds))
                    self.giveUp(id)
                }
            }
        } onCancel: {
            giveUp(id)
        }
    }

    private func giveUp(_ id: UInt64) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: false)
    }
}
