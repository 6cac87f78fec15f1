// The one gate every request of a client passes through: it caps the requests in flight, holds
// every caller while Dropbox's rate limit (429 retry_after) runs, and retries 5xx replies and
// transient network failures with backoff. Decisions come from PacerDecision; time from a Sleeper.

import Log
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

public final class Pacer: Sendable {
    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        /// Requests holding a slot.
        var inFlight = 0
        /// Callers waiting for a slot, in arrival order; resumed with true when given one.
        var waiters: [Waiter] = []
        var nextWaiterId: UInt64 = 0
        /// No request starts before this instant (set by 429 replies).
        var pausedUntil: ContinuousClock.Instant?
    }

    public let policy: RetryPolicy
    private let sleeper: any Sleeper
    private let random: @Sendable () -> Double
    /// Slots, waiters and the pause: every access holds this mutex.
    private let state = Mutex(State())

    public init(
        policy: RetryPolicy = RetryPolicy(), sleeper: any Sleeper = SystemSleeper(),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.policy = policy
        self.sleeper = sleeper
        self.random = random
    }

    /// Runs `operation` until it succeeds or the policy gives up, and returns or throws its last
    /// outcome. `limited: false` skips the concurrency cap (for longpolls, which idle for minutes)
    /// but still honours rate-limit pauses. `label` names the request in log lines.
    public func run<T>(
        _ label: String, limited: Bool = true, _ operation: () async throws(DropboxError) -> T
    ) async throws(DropboxError) -> T {
        var attempts = PacerDecision.Attempts()
        while true {
            try await waitForTurn(limited: limited)
            let outcome: Result<T, DropboxError>
            do {
                outcome = .success(try await operation())
            } catch {
                outcome = .failure(error)
            }
            if limited { releaseSlot() }
            let error: DropboxError
            switch outcome {
            case .success(let value): return value
            case .failure(let failure): error = failure
            }
            if Task.isCancelled { throw .cancelled }
            switch PacerDecision.after(error, attempts: &attempts, random: random(), policy: policy) {
            case .fail:
                throw error
            case .retry(let delay):
                Log.info("\(label): \(error); retry \(attempts.failures) in \(Self.seconds(delay))")
                try await sleeper.sleep(until: sleeper.now + delay)
            case .pauseAll(let pause):
                Log.info("\(label): rate limited by Dropbox; pausing all requests for \(Self.seconds(pause))")
                pauseAll(for: pause)
            }
        }
    }

    /// Holds every new request until `duration` from now has passed (never shortens a pause).
    public func pauseAll(for duration: Duration) {
        let until = sleeper.now + duration
        state.withLock { s in
            if let current = s.pausedUntil, current >= until { return }
            s.pausedUntil = until
        }
    }

    /// The number of requests holding a slot now (for tests and status output).
    public var requestsInFlight: Int { state.withLock { $0.inFlight } }

    /// True while a rate-limit pause holds new requests.
    public var isPaused: Bool {
        let now = sleeper.now
        return state.withLock { $0.pausedUntil.map { now < $0 } ?? false }
    }

    /// When the rate-limit pause ends, in whole seconds since the epoch (rounded up); nil while
    /// no pause holds requests. For the mount's status. The wall clock is read to the nanosecond:
    /// whole seconds of it would make the answer move by one between two asks of one pause.
    public var pausedUntilWallTime: Int64? {
        guard let until = pauseRemaining() else { return nil }
        let left = sleeper.now.duration(to: until).components
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let end = Double(wall.tv_sec) + Double(wall.tv_nsec) / 1e9 + Double(left.seconds) + Double(left.attoseconds) / 1e18
        return Int64(end.rounded(.up))
    }

    // MARK: slots and pauses

    private func waitForTurn(limited: Bool) async throws(DropboxError) {
        while true {
            try await waitWhilePaused()
            guard limited else { return }
            try await acquireSlot()
            // A 429 may have arrived while this caller queued for its slot.
            if pauseRemaining() == nil { return }
            releaseSlot()
        }
    }

    private func pauseRemaining() -> ContinuousClock.Instant? {
        let now = sleeper.now
        return state.withLock { s in
            guard let until = s.pausedUntil, until > now else { return nil }
            return until
        }
    }

    private func waitWhilePaused() async throws(DropboxError) {
        while let until = pauseRemaining() {
            try await sleeper.sleep(until: until)
        }
    }

    private func acquireSlot() async throws(DropboxError) {
        let limit = policy.maxConcurrentRequests
        let id = state.withLock { s in
            s.nextWaiterId += 1
            return s.nextWaiterId
        }
        let granted = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let immediate = state.withLock { s -> Bool? in
                    if Task.isCancelled { return false }
                    if s.inFlight < limit {
                        s.inFlight += 1
                        return true
                    }
                    s.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { s -> Waiter? in
                guard let index = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters.remove(at: index)
            }
            waiter?.continuation.resume(returning: false)
        }
        if !granted { throw .cancelled }
    }

    /// Gives the slot to the longest waiter, or frees it.
    private func releaseSlot() {
        let next = state.withLock { s -> Waiter? in
            if s.waiters.isEmpty {
                s.inFlight -= 1
                return nil
            }
            return s.waiters.removeFirst()
        }
        next?.continuation.resume(returning: true)
    }

    private static func seconds(_ d: Duration) -> String {
        let ms = Backoff.nanoseconds(d) / 1_000_000
        return ms < 1000 ? "\(ms) ms" : "\(ms / 1000).\(String(ms % 1000 / 100)) s"
    }
}
