// A one-shot signal that async callers can wait on with a timeout: a request that needs a folder
// being filled by a recursive listing waits a little for that listing before listing the folder
// itself. (Awaiting a Task's value cannot time out, hence this.)

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

    /// Returns true once fired, or false when `seconds` pass first (never, for infinity).
    func wait(seconds: Double) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id: UInt64? = state.withLock { s in
                if s.fired { return nil }
                let id = s.nextWaiter
                s.nextWaiter += 1
                s.waiters[id] = continuation
                return id
            }
            guard let id else {
                continuation.resume(returning: true)
                return
            }
            guard seconds.isFinite else { return }
            Task {
                try? await Task.sleep(for: .seconds(seconds))
                if let waiter = self.state.withLock({ $0.waiters.removeValue(forKey: id) }) {
                    waiter.resume(returning: false)
                }
            }
        }
    }
}
