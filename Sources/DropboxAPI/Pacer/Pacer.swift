// The one gate every request of a client passes through: it caps the requests in flight, holds
// every caller while Dropbox's rate limit (429 retry_after) runs, and retries 5xx replies and
// transient network failures with backoff. Decisions come from PacerDecision; time from a Sleeper.
//
// Two lanes, each with its own cap: the main one (every request), and one for the reader's
// read-ahead of small files (a task that sets `Pacer.lane` to `.readAhead`, and the tasks it
// starts): a walk over many small files needs many short requests at once to hide the latency,
// and a program's own reads, listings and big files' parts must never queue behind them. Rate-limit
// pauses hold both lanes.

import Log
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Which cap a request counts against (see the file comment).
public enum PacerLane: Int, Sendable {
    case main = 0
    case readAhead = 1
}

public final class Pacer: Sendable {
    /// The lane of requests started by the current task (inherited by the tasks it starts).
    @TaskLocal public static var lane: PacerLane = .main
    /// Whether requests of the current task are tried again after a server error or a transient
    /// failure (false: once only, for a request with a fallback of its own, such as a folder's zip;
    /// rate limits are still waited out, since they hold for the whole account).
    @TaskLocal public static var retriesFailures = true

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        /// Requests holding a slot, per lane (PacerLane.rawValue).
        var inFlight = [0, 0]
        /// Callers waiting for a slot, in arrival order, per lane; resumed with true when given one.
        var waiters: [[Waiter]] = [[], []]
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
        let lane = Self.lane
        while true {
            try await waitForTurn(limited: limited, lane: lane)
            let outcome: Result<T, DropboxError>
            do {
                outcome = .success(try await operation())
            } catch {
                outcome = .failure(error)
            }
            if limited { releaseSlot(lane) }
            let error: DropboxError
            switch outcome {
            case .success(let value): return value
            case .failure(let failure): error = failure
            }
            if Task.isCancelled { throw .cancelled }
            var policy = policy
            if !Self.retriesFailures { policy.maxAttempts = 1 }
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
    public var requestsInFlight: Int { state.withLock { $0.inFlight.reduce(0, +) } }

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

    private func waitForTurn(limited: Bool, lane: PacerLane) async throws(DropboxError) {
        while true {
            try await waitWhilePaused()
            guard limited else { return }
            try await acquireSlot(lane)
            // A 429 may have arrived while this caller queued for its slot.
            if pauseRemaining() == nil { return }
            releaseSlot(lane)
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

    private func acquireSlot(_ lane: PacerLane) async throws(DropboxError) {
        let limit = lane == .main ? policy.maxConcurrentRequests : policy.maxReadAheadRequests
        let l = lane.rawValue
        let id = state.withLock { s in
            s.nextWaiterId += 1
            return s.nextWaiterId
        }
        let granted = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let immediate = state.withLock { s -> Bool? in
                    if Task.isCancelled { return false }
                    if s.inFlight[l] < limit {
                        s.inFlight[l] += 1
                        return true
                    }
                    s.waiters[l].append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { s -> Waiter? in
                guard let index = s.waiters[l].firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters[l].remove(at: index)
            }
            waiter?.continuation.resume(returning: false)
        }
        if !granted { throw .cancelled }
    }

    /// Gives the slot to the longest waiter of its lane, or frees it.
    private func releaseSlot(_ lane: PacerLane) {
        let l = lane.rawValue
        let next = state.withLock { s -> Waiter? in
            if s.waiters[l].isEmpty {
                s.inFlight[l] -= 1
                return nil
            }
            return s.waiters[l].removeFirst()
        }
        next?.continuation.resume(returning: true)
    }

    private static func seconds(_ d: Duration) -> String {
        let ms = Backoff.nanoseconds(d) / 1_000_000
        return ms < 1000 ? "\(ms) ms" : "\(ms / 1000).\(String(ms % 1000 / 100)) s"
    }
}
