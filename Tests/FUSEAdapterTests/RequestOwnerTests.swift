// The request owner without a kernel (RequestOwner.swift): each request is answered at most once;
// an interrupt cancels the Task of a request answered later, also when it came before the Task
// existed; at unmount every request still in flight is failed (ENOTCONN) and its Task cancelled,
// later answers from those Tasks send nothing, new requests fail at once, and the session is only
// given up once no reply or invalidation is inside libfuse. Request pointers here are fake bit
// patterns the recording kernel never dereferences.

import Foundation
import Synchronization
import Testing

@testable import FUSEAdapter

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct RequestOwnerTests {
    /// Records what the owner asks of libfuse; can interrupt a request as soon as it is watched
    /// (libfuse calls the callback at once when the interrupt came first).
    final class RecordingKernel: RequestKernel {
        struct Record {
            var failures: [(request: UInt, errno: Int32)] = []
            var watched: [UInt64] = []
            var interruptAtOnce = false
        }

        let record = Mutex(Record())
        /// Weak: the owner holds this kernel, and a strong reference back would leak both.
        let owner = Mutex(WeakOwner())

        struct WeakOwner {
            weak var value: RequestOwner?
        }

        func fail(_ request: RawRequest, errno: Int32) {
            record.withLock { $0.failures.append((UInt(bitPattern: request.pointer), errno)) }
        }

        func watchInterrupts(_ request: RawRequest, id: UInt64) {
            let now = record.withLock { r in
                r.watched.append(id)
                return r.interruptAtOnce
            }
            if now { owner.withLock { $0.value }?.interrupted(id) }
        }

        var failures: [(request: UInt, errno: Int32)] { record.withLock { $0.failures } }
    }

    /// A value tasks and closures share.
    final class Box<Value: Sendable>: Sendable {
        private let storage: Mutex<Value>
        init(_ value: Value) { storage = Mutex(value) }
        var value: Value {
            get { storage.withLock { $0 } }
            set { storage.withLock { $0 = newValue } }
        }
        func update(_ change: (inout Value) -> Void) { storage.withLock { change(&$0) } }
    }

    static func make() -> (RequestOwner, RecordingKernel) {
        let kernel = RecordingKernel()
        let owner = RequestOwner(kernel: kernel)
        kernel.owner.withLock { $0.value = owner }
        return (owner, kernel)
    }

    static func request(_ n: UInt) -> RawRequest {
        RawRequest(pointer: OpaquePointer(bitPattern: n)!)
    }

    static func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: what) }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    struct TimedOut: Error { let what: String }

    @Test func aRequestIsAnsweredOnceFromItsTask() async throws {
        let (owner, kernel) = Self.make()
        let sent = Box(0)
        let again = Box<Bool?>(nil)
        owner.later(Self.request(0x1000)) { id in
            owner.answer(id, Self.request(0x1000)) { _ in sent.update { $0 += 1 } }
            again.value = owner.answer(id, Self.request(0x1000)) { _ in sent.update { $0 += 1 } }
        }
        try await Self.waitUntil("the answer") { again.value != nil }
        #expect(sent.value == 1)
        #expect(again.value == false)
        #expect(owner.pendingCount == 0)
        #expect(kernel.record.withLock { $0.watched } == [1])
    }

    @Test func anInterruptCancelsTheTaskWhichAnswersIt() async throws {
        let (owner, _) = Self.make()
        let cancelled = Box(false)
        let started = Box(false)
        owner.later(Self.request(0x2000)) { id in
            started.value = true
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(1)) }
            cancelled.value = true
            owner.answer(id, Self.request(0x2000)) { _ in }
        }
        try await Self.waitUntil("the task to start") { started.value }
        owner.interrupted(1)
        try await Self.waitUntil("the task to see the interrupt") { cancelled.value }
        try await Self.waitUntil("the answer") { owner.pendingCount == 0 }
        owner.interrupted(1)  // an interrupt for a request answered meanwhile is ignored
    }

    @Test func anInterruptBeforeTheTaskExistsCancelsItAtItsStart() async throws {
        let (owner, kernel) = Self.make()
        kernel.record.withLock { $0.interruptAtOnce = true }
        let sawCancellation = Box<Bool?>(nil)
        owner.later(Self.request(0x3000)) { id in
            sawCancellation.value = Task.isCancelled
            owner.answer(id, Self.request(0x3000)) { _ in }
        }
        try await Self.waitUntil("the task") { sawCancellation.value != nil }
        #expect(sawCancellation.value == true)
    }

    @Test func unmountingFailsTheRequestsInFlightAndDropsTheirLateAnswers() async throws {
        let (owner, kernel) = Self.make()
        let cancelled = Box(0)
        let lateAnswers = Box<[Bool]>([])
        for n in UInt(1)...3 {
            owner.later(Self.request(n << 12)) { id in
                while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(1)) }
                cancelled.update { $0 += 1 }
                let sent = owner.answer(id, Self.request(n << 12)) { _ in Issue.record("a late answer was sent") }
                lateAnswers.update { $0.append(sent) }
            }
        }
        try await Self.waitUntil("three requests") { owner.pendingCount == 3 }
        owner.close(failingWith: ENOTCONN)
        #expect(owner.phase == .closing)
        #expect(kernel.failures.map(\.errno) == [ENOTCONN, ENOTCONN, ENOTCONN])
        #expect(Set(kernel.failures.map(\.request)) == [0x1000, 0x2000, 0x3000])
        try await Self.waitUntil("the tasks to end") { lateAnswers.value.count == 3 }
        #expect(cancelled.value == 3)
        #expect(lateAnswers.value == [false, false, false])
        // A request arriving while closing is failed at once, without a Task.
        let ran = Box(false)
        owner.later(Self.request(0x9000)) { _ in ran.value = true }
        #expect(kernel.failures.last?.request == 0x9000)
        #expect(kernel.failures.last?.errno == ENOTCONN)
        #expect(!ran.value)
        #expect(owner.finish(within: .seconds(1)) {})
        #expect(owner.phase == .closed)
        #expect(!owner.answer(0, Self.request(0xa000)) { _ in Issue.record("sent into a closed session") })
    }

    /// A request's Task runs above the background sync (`.utility`) whichever thread it came in
    /// on: the main thread (default loop) and a plain thread (libfuse's workers) alike.
    @Test func requestsRunAtUserInitiatedPriority() async throws {
        let (owner, _) = Self.make()
        let seen = Box<[TaskPriority]>([])
        owner.later(Self.request(0x1000)) { _ in seen.update { $0.append(Task.currentPriority) } }
        let thread = Thread { owner.later(Self.request(0x2000)) { _ in seen.update { $0.append(Task.currentPriority) } } }
        thread.start()
        try await Self.waitUntil("both tasks ran") { seen.value.count == 2 }
        #expect(seen.value == [.userInitiated, .userInitiated])
        #expect(owner.finish(within: .seconds(1)) {})
    }

    @Test func invalidationsStopWhenClosingAndTheSessionWaitsForOneInProgress() async throws {
        let (owner, _) = Self.make()
        let inside = Box(false)
        let leave = Box(false)
        let delivered = Box(false)
        // A thread of its own, as libfuse's notify calls are: blocking a task here would take one
        // of the few cooperative threads (two on a 2-core machine) and starve the other tests.
        Thread {
            owner.whileServing {
                inside.value = true
                while !leave.value { usleep(1000) }
            }
            delivered.value = true
        }.start()
        try await Self.waitUntil("the delivery to start") { inside.value }
        owner.close(failingWith: ENOTCONN)
        #expect(!owner.isServing)
        #expect(!owner.whileServing { Issue.record("delivered while closing") })
        // A delivery stuck in the kernel: the session is not given up...
        var rounds = 0
        #expect(!owner.finish(within: .milliseconds(50)) { rounds += 1; usleep(5000) })
        #expect(rounds > 0)
        #expect(owner.phase == .closing)
        // ... until it returns (what answering the kernel's queued requests brings about).
        #expect(owner.finish(within: .seconds(10)) { leave.value = true; usleep(1000) })
        #expect(owner.phase == .closed)
        try await Self.waitUntil("the delivery to return") { delivered.value }
    }

    @Test func repliesOnTheReceivingThreadGoThroughWhileTheSessionLives() {
        let (owner, _) = Self.make()
        var sent = 0
        #expect(owner.answer(0, Self.request(0xb000)) { _ in sent += 1 })
        owner.close(failingWith: ENOTCONN)
        // The requests libfuse still hands over while the kernel's queue is answered at teardown.
        #expect(owner.answer(0, Self.request(0xc000)) { _ in sent += 1 })
        #expect(owner.finish(within: .seconds(1)) {})
        #expect(!owner.answer(0, Self.request(0xd000)) { _ in sent += 1 })
        #expect(sent == 2)
    }
}
