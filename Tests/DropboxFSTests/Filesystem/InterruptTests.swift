// Interrupted requests (docs/SEMANTICS.md "Interrupted requests"): a request whose task is
// cancelled (the FUSE layer cancels it when the kernel interrupts the request) stops waiting at
// once with `.interrupted`; a listing other requests still wait for goes on for them and is
// cancelled only when the last one left; the same request afterwards gets the exact answer.
// Shared work itself (SharedWork) and the short wait for a covering recursive listing
// (CompletionSignal) are checked directly. A stalled server is a FaultInjectingClient hold, which
// never ends by itself: a request that ends while its call is still held stopped waiting for it.
// (How fast is for the mount tests; here the whole module shares two threads.)

import DropboxAPI
import DropboxTestSupport
import Synchronization
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct InterruptTests {
        /// Waits for a cancelled request to end (its call is still held) and returns its outcome.
        static func outcome<T: Sendable>(of task: Task<T, any Error>) async throws -> Result<T, any Error> {
            let result = Locked<Result<T, any Error>?>(nil)
            Task { result.value = await task.result }
            try await waitUntil("the cancelled request to end") { result.value != nil }
            return try #require(result.value)
        }

        /// /dir with a.txt (3 bytes) and b.txt (5 bytes); the root is listed, /dir is not.
        static func mounted() async throws -> (FaultInjectingClient<InMemoryDropbox>, Filesystem, UInt64) {
            let fake = InMemoryDropbox()
            fake.addFile("/dir/a.txt", size: 3)
            fake.addFile("/dir/b.txt", size: 5)
            let faults = FaultInjectingClient(fake)
            let fs = Filesystem(client: faults, options: options())
            return (faults, fs, try await inode(fs, "/dir"))
        }

        /// The listing of a folder in flight, for its waiter count.
        static func listing(_ fs: Filesystem, _ folder: UInt64) -> SharedWork<Void>? {
            fs.sync.state.withLock { $0.listings.first { $0.key.index == UInt32(folder) }?.value }
        }

        @Test func anInterruptedLookupStopsAtOnceAndItsListingIsCancelled() async throws {
            let (faults, fs, dir) = try await Self.mounted()
            faults.hold(.listFolder)
            let lookup = Task { try await fs.lookup(parent: dir, name: "b.txt") }
            try await waitUntil("the listing to reach the server") { faults.heldCalls(.listFolder) == 1 }
            lookup.cancel()
            let outcome = try await Self.outcome(of: lookup)
            #expect(throws: FilesystemError.interrupted) { try outcome.get() }
            #expect(faults.heldCalls(.listFolder) + faults.cancelledCalls(.listFolder) == 1)
            // Nobody waits for the listing any more: it is cancelled, and the next lookup lists again.
            try await waitUntil("the listing to be cancelled") { faults.cancelledCalls(.listFolder) == 1 }
            faults.release(.listFolder)
            #expect(try await fs.lookup(parent: dir, name: "b.txt").size == 5)
            #expect(try await names(fs, dir) == ["a.txt", "b.txt"])
            #expect(faults.callCount(.listFolder) == 3, "the root, the cancelled listing, the new one")
        }

        @Test func aListingAnotherRequestWaitsForGoesOn() async throws {
            let (faults, fs, dir) = try await Self.mounted()
            faults.hold(.listFolder)
            let interrupted = Task { try await fs.lookup(parent: dir, name: "a.txt") }
            try await waitUntil("the listing to reach the server") { faults.heldCalls(.listFolder) == 1 }
            let patient = Task { try await names(fs, dir) }
            try await waitUntil("both requests to wait") { Self.listing(fs, dir)?.waiterCount == 2 }
            interrupted.cancel()
            let outcome = try await Self.outcome(of: interrupted)
            #expect(throws: FilesystemError.interrupted) { try outcome.get() }
            #expect(Self.listing(fs, dir)?.waiterCount == 1)
            #expect(faults.cancelledCalls(.listFolder) == 0, "the other request still needs the listing")
            faults.release(.listFolder)
            #expect(try await patient.value == ["a.txt", "b.txt"])
            #expect(faults.callCount(.listFolder) == 2, "one shared listing after the root's")
        }

        @Test func anInterruptedFolderListingAnswersItsCallerOnly() async throws {
            let (faults, fs, dir) = try await Self.mounted()
            faults.hold(.listFolder)
            let first = Task { try await fs.prepareDirectory(dir) }
            try await waitUntil("the listing to reach the server") { faults.heldCalls(.listFolder) == 1 }
            first.cancel()
            let outcome = try await Self.outcome(of: first)
            #expect(throws: FilesystemError.interrupted) { try outcome.get() }
            // The folder was not marked listed by the cancelled listing: it is listed in full again.
            #expect(try !fs.isDirectoryReady(dir))
            faults.release(.listFolder)
            #expect(try await names(fs, dir) == ["a.txt", "b.txt"])
        }

        @Test func aCancelledListingIsNotWarnedAbout() async throws {
            LogCapture.start()
            let fake = InMemoryDropbox()
            fake.addFile("/quiet-interrupted-listing/x", size: 1)
            let faults = FaultInjectingClient(fake)
            let fs = Filesystem(client: faults, options: options())
            let dir = try await inode(fs, "/quiet-interrupted-listing")
            faults.hold(.listFolder)
            let lookup = Task { try await fs.lookup(parent: dir, name: "x") }
            try await waitUntil("the listing to reach the server") { faults.heldCalls(.listFolder) == 1 }
            lookup.cancel()
            _ = await lookup.result
            try await waitUntil("the listing to end") { Self.listing(fs, dir) == nil }
            #expect(LogCapture.lines(containing: "quiet-interrupted-listing").isEmpty)
            faults.release(.listFolder)
        }

        @Test func anInterruptedStatfsStopsAtOnce() async throws {
            let fake = InMemoryDropbox()
            let faults = FaultInjectingClient(fake)
            let fs = Filesystem(client: faults, options: options())
            faults.hold(.getSpaceUsage)
            let statfs = Task { try await fs.statistics() }
            try await waitUntil("space usage to reach the server") { faults.heldCalls(.getSpaceUsage) == 1 }
            statfs.cancel()
            let outcome = try await Self.outcome(of: statfs)
            #expect(throws: FilesystemError.interrupted) { try outcome.get() }
            #expect(faults.cancelledCalls(.getSpaceUsage) == 1)
            faults.release(.getSpaceUsage)
            #expect(try await fs.statistics().blockSize == Filesystem.statfsBlockSize)
        }

        // MARK: the pieces

        @Test func sharedWorkRunsOnForTheWaitersLeft() async throws {
            let gate = Gate()
            let work = SharedWork<Int> { _ in
                await gate.wait()
                return Task.isCancelled ? .failure(.interrupted) : .success(42)
            }
            let leaving = Task { try await work.value() }
            let staying = Task { try await work.value() }
            try await waitUntil("two waiters") { work.waiterCount == 2 }
            leaving.cancel()
            let outcome = try await Self.outcome(of: leaving)
            #expect(throws: FilesystemError.interrupted) { try outcome.get() }
            #expect(!work.isAbandoned)
            gate.open()
            #expect(try await staying.value == 42)
        }

        @Test func sharedWorkIsCancelledWhenItsLastWaiterLeaves() async throws {
            let gate = Gate()
            let sawCancellation = Locked(false)
            let work = SharedWork<Int> { _ in
                await gate.wait()
                sawCancellation.value = Task.isCancelled
                return .success(1)
            }
            let only = Task { try await work.value() }
            try await waitUntil("one waiter") { work.waiterCount == 1 }
            only.cancel()
            let outcome = try await Self.outcome(of: only)
            #expect(throws: FilesystemError.interrupted) { try outcome.get() }
            #expect(work.isAbandoned)
            // A caller coming upon abandoned work is told to start it again.
            #expect(try await work.value() == nil)
            gate.open()
            try await waitUntil("the work to end") { work.isFinished }
            #expect(sawCancellation.value)
        }

        @Test func sharedWorkNobodyWaitsForRunsToItsEnd() async throws {
            let gate = Gate()
            let work = SharedWork<Int> { _ in
                await gate.wait()
                return .success(Task.isCancelled ? -1 : 7)
            }
            gate.open()
            try await waitUntil("the work to end") { work.isFinished }
            #expect(try await work.value() == 7)
            #expect(!work.isAbandoned)
        }

        @Test func aWaiterCancelledBeforeItWaitsLeavesAtOnce() async throws {
            let gate = Gate()
            let work = SharedWork<Int> { _ in
                await gate.wait()
                return .success(1)
            }
            let late = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await work.value()
            }
            await #expect(throws: FilesystemError.interrupted) { try await late.value }
            #expect(!work.isAbandoned, "a waiter that never waited does not abandon the work")
            gate.open()
            #expect(try await work.value() == 1)
        }

        @Test func theWaitForACoveringListingEndsWhenCancelled() async throws {
            let signal = CompletionSignal()
            let waiting = Task<Bool, any Error> { await signal.wait(seconds: 3600) }
            try await Task.sleep(for: .milliseconds(20))
            waiting.cancel()
            #expect(try await Self.outcome(of: waiting).get() == false)
            signal.fire()
            #expect(await signal.wait(seconds: 3600))
        }
    }

    /// A one-shot gate tasks can wait at (ignores cancellation, like a network call that does not
    /// notice it).
    final class Gate: Sendable {
        private struct State {
            var open = false
            var waiters: [CheckedContinuation<Void, Never>] = []
        }

        private let state = Mutex(State())

        func wait() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.open { return true }
                    s.waiters.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }

        func open() {
            let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                s.open = true
                defer { s.waiters = [] }
                return s.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }
}
