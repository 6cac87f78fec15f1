// The pacer's behaviour over time, with a manual clock so no test sleeps for real backoff:
// retries and their waits, giving up, 429 pauses for everyone, the concurrency cap and
// cancellation of a queued caller.

import DropboxAPI
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct PacerTests {
    /// An operation that fails with the given errors in turn, then succeeds with its call count.
    final class Script: Sendable {
        private let errors: [DropboxError]
        /// Calls so far and the fake time of each (guarded by the mutex).
        private let calls = Mutex<[ContinuousClock.Instant]>([])
        private let clock: ManualSleeper

        init(_ errors: [DropboxError], clock: ManualSleeper) {
            self.errors = errors
            self.clock = clock
        }

        var callTimes: [ContinuousClock.Instant] { calls.withLock { $0 } }

        func call() throws(DropboxError) -> Int {
            let n = calls.withLock { list in
                list.append(clock.now)
                return list.count
            }
            if n <= errors.count { throw errors[n - 1] }
            return n
        }
    }

    @Test func retriesServerErrorsWithBackoff() async throws {
        let clock = ManualSleeper()
        let pacer = Pacer(sleeper: clock, random: { 0 })
        let script = Script([.serverError(status: 503), .serverError(status: 503)], clock: clock)
        let calls = try await pacer.run("test") { () throws(DropboxError) in try script.call() }
        #expect(calls == 3)
        #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200)])
    }

    @Test func givesUpAfterMaxAttempts() async {
        let clock = ManualSleeper()
        let pacer = Pacer(policy: RetryPolicy(maxAttempts: 3), sleeper: clock, random: { 0 })
        let script = Script(Array(repeating: .serverError(status: 500), count: 10), clock: clock)
        await #expect(throws: DropboxError.serverError(status: 500)) {
            try await pacer.run("test") { () throws(DropboxError) in try script.call() }
        }
        #expect(script.callTimes.count == 3)
        #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200)])
    }

    @Test func neverRetriesOtherClientErrors() async {
        let clock = ManualSleeper()
        let pacer = Pacer(sleeper: clock, random: { 0 })
        let script = Script([.lookup(.notFound)], clock: clock)
        await #expect(throws: DropboxError.lookup(.notFound)) {
            try await pacer.run("test") { () throws(DropboxError) in try script.call() }
        }
        #expect(script.callTimes.count == 1)
        #expect(clock.sleeps.isEmpty)
    }

    @Test func rateLimitWaitsAtLeastRetryAfter() async throws {
        let clock = ManualSleeper()
        let pacer = Pacer(sleeper: clock, random: { 0.5 })
        let script = Script([.rateLimited(retryAfter: 5)], clock: clock)
        #expect(try await pacer.run("test") { () throws(DropboxError) in try script.call() } == 2)
        let times = script.callTimes
        #expect(times[1] - times[0] == .milliseconds(5125))
    }

    @Test func rateLimitPauseHoldsOtherCallers() async throws {
        let clock = ManualSleeper()
        let pacer = Pacer(sleeper: clock, random: { 0 })
        let start = clock.now
        pacer.pauseAll(for: .seconds(3))
        pacer.pauseAll(for: .seconds(1))  // never shortens a pause
        let script = Script([], clock: clock)
        _ = try await pacer.run("other") { () throws(DropboxError) in try script.call() }
        #expect(script.callTimes[0] - start >= .seconds(3))
    }

    /// The status says until when a pause holds requests, in wall-clock seconds: the same
    /// answer each time it is asked during one pause, and none once it has passed.
    @Test func pauseEndIsGivenInWallClockSeconds() {
        let clock = ManualSleeper()
        let pacer = Pacer(sleeper: clock, random: { 0 })
        #expect(pacer.pausedUntilWallTime == nil)
        let before = Int64(time(nil))
        pacer.pauseAll(for: .milliseconds(30_500))
        let until = pacer.pausedUntilWallTime
        #expect(until.map { $0 >= before + 31 && $0 <= Int64(time(nil)) + 32 } == true)
        clock.advance(.seconds(10))
        // Fake time moved, the wall clock did not: the end seems 10 s nearer.
        #expect(pacer.pausedUntilWallTime.map { until! - $0 } == 10)
        clock.advance(.seconds(21))
        #expect(pacer.pausedUntilWallTime == nil)
    }

    @Test func rateLimitGivesUpAfterMaxWaits() async {
        let clock = ManualSleeper()
        let pacer = Pacer(policy: RetryPolicy(maxRateLimitWaits: 2), sleeper: clock, random: { 0 })
        let script = Script(Array(repeating: .rateLimited(retryAfter: 1), count: 5), clock: clock)
        await #expect(throws: DropboxError.rateLimited(retryAfter: 1)) {
            try await pacer.run("test") { () throws(DropboxError) in try script.call() }
        }
        #expect(script.callTimes.count == 3)
    }

    /// Counts operations running at once and remembers the most seen.
    final class Occupancy: Sendable {
        /// (running now, most at once), guarded by the mutex.
        private let counts = Mutex((0, 0))

        func enter() { counts.withLock { $0 = ($0.0 + 1, max($0.1, $0.0 + 1)) } }
        func leave() { counts.withLock { $0.0 -= 1 } }
        var peak: Int { counts.withLock { $0.1 } }
    }

    @Test func capsConcurrentRequests() async throws {
        let pacer = Pacer(policy: RetryPolicy(maxConcurrentRequests: 2))
        let occupancy = Occupancy()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await pacer.run("test") { () throws(DropboxError) in
                        occupancy.enter()
                        try? await Task.sleep(for: .milliseconds(20))
                        occupancy.leave()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(occupancy.peak == 2)
        #expect(pacer.requestsInFlight == 0)
    }

    /// A flag set once, read by many tasks.
    final class Flag: Sendable {
        private let value = Mutex(false)
        var isSet: Bool { value.withLock { $0 } }
        func set() { value.withLock { $0 = true } }
    }

    @Test func theReadAheadLaneHasACapOfItsOwn() async throws {
        var policy = RetryPolicy(maxConcurrentRequests: 1)
        policy.maxReadAheadRequests = 3
        let pacer = Pacer(policy: policy)
        let ahead = Occupancy()
        let released = Flag()
        // Six read-ahead requests: three run, three wait, however long the first ones take.
        let readAhead = Task {
            try await Pacer.$lane.withValue(.readAhead) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<6 {
                        group.addTask {
                            try await pacer.run("ahead") { () throws(DropboxError) in
                                ahead.enter()
                                while !released.isSet { try? await Task.sleep(for: .milliseconds(1)) }
                                ahead.leave()
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
        }
        while pacer.requestsInFlight < 3 { await Task.yield() }
        // The main lane is not held by them: a program's request runs at once.
        try await pacer.run("main") { () throws(DropboxError) in }
        #expect(ahead.peak == 3)
        released.set()
        try await readAhead.value
        #expect(ahead.peak == 3)
        #expect(pacer.requestsInFlight == 0)
    }

    @Test func cancelledWaiterLeavesTheQueue() async throws {
        let pacer = Pacer(policy: RetryPolicy(maxConcurrentRequests: 1))
        let release = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await pacer.run("holder") { () throws(DropboxError) in
                for await _ in release.stream { break }
            }
        }
        while pacer.requestsInFlight == 0 { await Task.yield() }
        let waiter = Task {
            try await pacer.run("waiter") { () throws(DropboxError) in Issue.record("the waiter must not run") }
        }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        await #expect(throws: DropboxError.self) { try await waiter.value }
        // An unlimited request passes the full cap.
        try await pacer.run("longpoll", limited: false) { () throws(DropboxError) in }
        release.continuation.yield()
        try await holder.value
        #expect(pacer.requestsInFlight == 0)
    }
}
