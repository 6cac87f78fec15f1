// The wait for the kernel's INIT without a kernel (KernelInit.swift): a session counts as started
// only when the init callback ran and the session still serves after it; one that libfuse ended
// with INIT is refused, one that ended before INIT came is a failure, and a kernel that never
// sends INIT is given up at the limit, on a manual clock, in steps short enough to notice a signal.

import Testing

@testable import FUSEAdapter

@Suite struct KernelInitTests {
    /// A scripted device: each step takes the next entry (what the step did, and whether the init
    /// callback ran or the session ended during it); once the script is out, nothing comes. The
    /// clock advances by each step's whole wait when nothing came.
    final class Script {
        var steps: [(step: KernelInit.Step, initialized: Bool, exited: Bool)]
        var initialized = false
        var exited = false
        var clock = 100.0
        var waits: [Int32] = []

        init(_ steps: [(step: KernelInit.Step, initialized: Bool, exited: Bool)]) {
            self.steps = steps
        }

        func run(limit: Double = KernelInit.limit) -> KernelInit.Outcome {
            KernelInit.wait(
                limit: limit, now: { self.clock }, initialized: { self.initialized }, exited: { self.exited },
                step: { milliseconds in
                    self.waits.append(milliseconds)
                    guard !self.steps.isEmpty else {
                        self.clock += Double(milliseconds) / 1000
                        return .idle
                    }
                    let next = self.steps.removeFirst()
                    self.initialized = self.initialized || next.initialized
                    self.exited = self.exited || next.exited
                    return next.step
                })
        }
    }

    @Test func initAnsweredIsStarted() {
        let script = Script([(.served, true, false)])
        #expect(script.run() == .started)
        #expect(script.waits.count == 1)
    }

    @Test func requestsAndQuietStepsBeforeInitAreWaitedThrough() {
        let script = Script([(.idle, false, false), (.idle, false, false), (.served, true, false)])
        #expect(script.run() == .started)
        #expect(script.waits.count == 3)
    }

    @Test func initThatEndsTheSessionIsRefused() {
        // libfuse calls the init callback, then fails INIT and exits the session.
        #expect(Script([(.served, true, true)]).run() == .refused)
    }

    @Test func aSessionEndedBeforeInitIsAFailure() {
        // A signal: libfuse's handler exits the session, the wait is interrupted.
        #expect(Script([(.idle, false, true)]).run() == .ended)
        // An unmount, or a read error, before INIT came.
        #expect(Script([(.disconnected, false, false)]).run() == .ended)
    }

    @Test func noInitIsGivenUpAtTheLimitInShortSteps() {
        let script = Script([])
        #expect(script.run(limit: 10) == .timedOut)
        #expect(script.clock >= 110 && script.clock < 110.2, "waited \(script.clock - 100) s")
        #expect(script.waits.allSatisfy { $0 >= 1 && $0 <= 101 }, "each step waits at most about 0.1 s")
    }
}
