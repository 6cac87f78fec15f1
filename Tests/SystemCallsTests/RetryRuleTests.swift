// The retry rules of the system layer (Sources/SystemCalls/Errno.swift): EINTR is retried unless
// the caller says not to, both with a call that fails on purpose and with a real read that a signal
// interrupts; short transfers are continued until the buffer is done or the file ends.

import Foundation
import Synchronization
import Testing

@testable import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

/// Signals the SIGUSR1 handler of these tests has taken.
private let handled = Atomic<Int>(0)

@Suite(.serialized) struct RetryRuleTests {
    @Test func anInterruptedCallIsMadeAgain() throws {
        var calls = 0
        let result = try systemCall { () -> Int32 in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(result == 7)
        #expect(calls == 3)
    }

    @Test func anInterruptedCallIsReportedWhenTheCallerSaysSo() {
        var calls = 0
        #expect(throws: Errno.interrupted) {
            try systemCall(retryOnInterrupt: false) { () -> Int32 in
                calls += 1
                errno = EINTR
                return -1
            }
        }
        #expect(calls == 1)
    }

    @Test func otherErrorsAreNeverRetried() {
        var calls = 0
        #expect(throws: Errno(rawValue: EBADF)) {
            try systemCall { () -> Int in
                calls += 1
                errno = EBADF
                return -1
            }
        }
        #expect(calls == 1)
    }

    @Test func shortStepsAreContinuedUntilDone() throws {
        var steps: [Int] = []
        let done = try FileDescriptor.fill(10) { done throws(Errno) in
            steps.append(done)
            return min(3, 10 - done)
        }
        #expect(done == 10)
        #expect(steps == [0, 3, 6, 9])
    }

    @Test func aStepThatMovesNothingEndsTheTransfer() throws {
        var steps = 0
        let done = try FileDescriptor.fill(10) { done throws(Errno) in
            steps += 1
            return done == 0 ? 4 : 0
        }
        #expect(done == 4)
        #expect(steps == 2)
    }

    /// A thread blocked in read(2) on an empty pipe gets SIGUSR1 (a handler without SA_RESTART,
    /// so the kernel fails the read with EINTR). Without the retry the read reports the signal.
    @Test func aSignalInterruptsAReadThatIsNotRetried() throws {
        try withSignalHandler {
            let pipe = try Pipe()
            defer { pipe.close() }
            let outcome = BlockedRead(pipe.readEnd, retryOnInterrupt: false)
            // Signal until the read returns: a signal that lands before the read began only runs
            // the handler, and the next one interrupts the read.
            try outcome.signalUntilFinished()
            #expect(outcome.result == .failure(.interrupted))
        }
    }

    /// The same read, retried: signals interrupt it (the handler runs) and it keeps waiting, then
    /// returns the byte written after them.
    @Test func aSignalDoesNotEndAReadThatIsRetried() throws {
        try withSignalHandler {
            let pipe = try Pipe()
            defer { pipe.close() }
            let before = handled.load(ordering: .relaxed)
            let outcome = BlockedRead(pipe.readEnd, retryOnInterrupt: true)
            try outcome.signal(times: 5)
            #expect(handled.load(ordering: .relaxed) - before >= 5)
            #expect(!outcome.finished, "the read ended on a signal")
            try [UInt8(42)].withUnsafeBytes { try pipe.writeEnd.writeAll($0) }
            try outcome.waitUntilFinished()
            #expect(outcome.result == .success([42]))
        }
    }
}

/// Installs a counting SIGUSR1 handler without SA_RESTART for `body`.
private func withSignalHandler(_ body: () throws -> Void) throws {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = { _ in handled.add(1, ordering: .relaxed) }
    sigemptyset(&action.sa_mask)
    action.sa_flags = 0
    var old = sigaction()
    #expect(sigaction(SIGUSR1, &action, &old) == 0)
    defer { sigaction(SIGUSR1, &old, nil) }
    try body()
}

struct Pipe {
    let readEnd: FileDescriptor
    let writeEnd: FileDescriptor

    init() throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw Errno.current }
        readEnd = FileDescriptor(rawValue: ends[0])
        writeEnd = FileDescriptor(rawValue: ends[1])
    }

    func close() {
        try? readEnd.close()
        try? writeEnd.close()
    }
}

struct Timeout: Error {}

/// One read of one byte on its own thread, which the test signals.
private final class BlockedRead: Sendable {
    private struct State {
        var thread: pthread_t?
        var result: Result<[UInt8], Errno>?
    }

    private let state = Mutex(State())

    init(_ descriptor: FileDescriptor, retryOnInterrupt: Bool) {
        let thread = Thread { [self] in
            // The test runner's threads may block it.
            var signals = sigset_t()
            sigemptyset(&signals)
            sigaddset(&signals, SIGUSR1)
            pthread_sigmask(SIG_UNBLOCK, &signals, nil)
            state.withLock { $0.thread = pthread_self() }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1, alignment: 1)
            defer { buffer.deallocate() }
            let result: Result<[UInt8], Errno>
            do throws(Errno) {
                let n = try descriptor.read(into: buffer, retryOnInterrupt: retryOnInterrupt)
                result = .success(Array(buffer[0..<n]))
            } catch {
                result = .failure(error)
            }
            state.withLock { $0.result = result }
        }
        thread.start()
    }

    var finished: Bool { state.withLock { $0.result != nil } }
    var result: Result<[UInt8], Errno>? { state.withLock { $0.result } }

    /// The reading thread, once it runs (bounded wait).
    private func thread() throws -> pthread_t {
        let deadline = SystemClock.monotonicSeconds() + 10
        while SystemClock.monotonicSeconds() < deadline {
            if let thread = state.withLock({ $0.thread }) { return thread }
            usleep(1000)
        }
        throw Timeout()
    }

    /// Sends `times` signals to the reading thread, each once the previous one was handled.
    func signal(times: Int) throws {
        let thread = try thread()
        for _ in 0..<times {
            let before = handled.load(ordering: .relaxed)
            pthread_kill(thread, SIGUSR1)
            try waitFor { handled.load(ordering: .relaxed) > before }
            usleep(2000)  // pacing only: the thread goes back into read(2) before the next one
        }
    }

    func signalUntilFinished() throws {
        let thread = try thread()
        try waitFor {
            if self.finished { return true }
            pthread_kill(thread, SIGUSR1)
            usleep(2000)
            return self.finished
        }
    }

    func waitUntilFinished() throws { try waitFor { self.finished } }

    private func waitFor(_ condition: () -> Bool) throws {
        let deadline = SystemClock.monotonicSeconds() + 10
        while SystemClock.monotonicSeconds() < deadline {
            if condition() { return }
            usleep(1000)
        }
        throw Timeout()
    }
}
