// The owner of every kernel request in flight, and the one way to answer one. libfuse lets a
// request be answered from any thread, which is what lets a read wait for a download in a Task
// without holding a FUSE thread; but such a Task may outlive the session it was asked through. So
// every reply, from any thread, and every kernel cache invalidation goes through this object, which
// knows whether the session can still take it:
//
// - A request answered later (`later`) is registered under an id with its Task, and libfuse's
//   interrupt callback (fuse_req_interrupt_func, given the id) cancels that Task: the core stops
//   waiting and the request is answered EINTR.
// - At unmount, once libfuse's loop has ended, `close` fails every registered request not answered
//   yet (ENOTCONN) and cancels its Task; a Task answering afterwards finds its request gone and
//   sends nothing. Requests the kernel still sends are failed at once.
// - `finish` waits until no reply and no invalidation is inside libfuse, then marks the session
//   gone; from then on nothing is sent, and the session can be destroyed. An invalidation can wait
//   in the kernel for a request (the kernel holds a folder's lock or a page lock meanwhile); `close`
//   answering the requests, and the caller answering what the kernel still queues, lets it finish.
//
// Locking: `state` (one Mutex) guards the registered requests, the phase and the count of calls
// inside libfuse. It is never held while calling libfuse (a reply, an invalidation, the interrupt
// registration) nor while cancelling a Task, so an interrupt callback (which libfuse calls with
// the request's own lock held) and a reply never wait for each other.

import DropboxFS
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A libfuse request pointer (fuse_req_t), opaque here so the owner runs in tests without a kernel.
struct RawRequest: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// The libfuse calls the owner makes by itself (LibfuseRequests; tests record them instead).
protocol RequestKernel: Sendable {
    /// Answers `request` with an error.
    func fail(_ request: RawRequest, errno: Int32)
    /// Asks libfuse to call `RequestOwner.interrupted(id)` when the kernel interrupts `request`,
    /// at once if it already did.
    func watchInterrupts(_ request: RawRequest, id: UInt64)
}

final class RequestOwner: Sendable {
    enum Phase: Sendable, Equatable {
        /// The session loop runs: requests are answered and invalidations delivered.
        case serving
        /// The loop ended: requests still in flight were failed; new ones fail at once.
        case closing
        /// Nothing may be sent any more: the session is about to be destroyed.
        case closed
    }

    private struct Pending {
        let request: RawRequest
        var task: Task<Void, Never>?
        var interrupted = false
    }

    private struct State {
        var pending: [UInt64: Pending] = [:]
        var nextId: UInt64 = 1
        var phase = Phase.serving
        /// Replies and invalidations being sent right now.
        var callsInKernel = 0
    }

    private let state = Mutex(State())
    private let kernel: any RequestKernel

    init(kernel: any RequestKernel) {
        self.kernel = kernel
    }

    var phase: Phase { state.withLock { $0.phase } }

    /// Registered requests not answered yet (for tests and the log).
    var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Answers `request` later, from a Task that runs `work` with the id the request is
    /// registered under. Called on the FUSE thread that received the request, before any reply.
    func later(_ request: RawRequest, _ work: @escaping @Sendable (UInt64) async -> Void) {
        let id = state.withLock { s -> UInt64? in
            guard s.phase == .serving else { return nil }
            let id = s.nextId
            s.nextId += 1
            s.pending[id] = Pending(request: request)
            return id
        }
        guard let id else {
            answer(0, request) { kernel.fail($0, errno: FilesystemError.unmounting.errno) }
            return
        }
        // Before the Task exists, so that nothing can have answered (and freed) the request yet.
        kernel.watchInterrupts(request, id: id)
        // Above the background sync (`.utility`, Sync/ChangeWatcher.swift), whichever thread the
        // request came in on: each priority has its own task threads, so requests never queue
        // behind fill pages. (Without it, a task takes its thread's priority: `.userInitiated` on
        // the main thread of the default loop, `.medium` on libfuse's worker threads.)
        let task = Task(priority: TaskPriorities.requests) { [self] in
            // The Task may start before it is registered below (it has threads of its own): an
            // interrupt, or the session closing, that came first cancels it here, at its start.
            let stale = state.withLock { s in s.pending[id].map { $0.interrupted } ?? true }
            if stale { withUnsafeCurrentTask { $0?.cancel() } }
            await work(id)
        }
        let interrupted = state.withLock { s -> Bool in
            guard s.pending[id] != nil else { return false }
            s.pending[id]?.task = task
            return s.pending[id]?.interrupted ?? false
        }
        if interrupted { task.cancel() }
    }

    /// Sends one reply through `send`: for a registered request (`id` from `later`) only if it is
    /// still waiting for one, for a request answered on the thread that received it (`id` 0) only
    /// while the session lives. Returns false when nothing was sent.
    @discardableResult
    func answer(_ id: UInt64, _ request: RawRequest, _ send: (RawRequest) -> Void) -> Bool {
        let allowed = state.withLock { s -> Bool in
            if id == 0 {
                guard s.phase != .closed else { return false }
            } else {
                guard s.pending.removeValue(forKey: id) != nil else { return false }
            }
            s.callsInKernel += 1
            return true
        }
        guard allowed else { return false }
        send(request)
        state.withLock { $0.callsInKernel -= 1 }
        return true
    }

    /// libfuse's interrupt callback for request `id`: its Task is cancelled, and answers EINTR
    /// unless its work is already done. An id answered meanwhile is ignored.
    func interrupted(_ id: UInt64) {
        let task = state.withLock { s -> Task<Void, Never>? in
            guard s.pending[id] != nil else { return nil }
            s.pending[id]?.interrupted = true
            return s.pending[id]?.task
        }
        task?.cancel()
    }

    /// Runs `deliver` (kernel cache invalidations) while the session serves; returns false, without
    /// running it, once it is closing. `deliver` may check `isServing` to stop a long batch early.
    @discardableResult
    func whileServing(_ deliver: () -> Void) -> Bool {
        let allowed = state.withLock { s -> Bool in
            guard s.phase == .serving else { return false }
            s.callsInKernel += 1
            return true
        }
        guard allowed else { return false }
        deliver()
        state.withLock { $0.callsInKernel -= 1 }
        return true
    }

    var isServing: Bool { phase == .serving }

    /// At unmount, once no FUSE callback runs any more (libfuse's loop has ended): fails every
    /// registered request not answered yet with `errno` and cancels its Task; requests that come
    /// later are failed at once.
    func close(failingWith errno: Int32) {
        let waiting = state.withLock { s -> [Pending] in
            if s.phase == .serving { s.phase = .closing }
            defer { s.pending = [:] }
            s.callsInKernel += s.pending.count
            return Array(s.pending.values)
        }
        for request in waiting { request.task?.cancel() }
        for request in waiting {
            kernel.fail(request.request, errno: errno)
            state.withLock { $0.callsInKernel -= 1 }
        }
    }

    /// Marks the session gone once no reply or invalidation is inside libfuse, and returns true; or
    /// returns false if one still is after `timeout` (the session must then not be destroyed).
    /// `meanwhile` runs between checks (it answers what the kernel still queues, and may block for
    /// a short while).
    func finish(within timeout: Duration, meanwhile: () -> Void) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let done = state.withLock { s -> Bool in
                guard s.callsInKernel == 0 else { return false }
                s.phase = .closed
                return true
            }
            if done { return true }
            if ContinuousClock.now >= deadline { return false }
            meanwhile()
        }
    }
}
