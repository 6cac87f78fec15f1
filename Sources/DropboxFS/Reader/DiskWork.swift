// Waiting, from a task, for work that runs on the disk queue (FileReader.diskQueue): opening a disk
// cache entry or creating one may wait as long as the disk does (a cache folder on NFS whose server
// is gone waits forever), so it never runs on the FUSE thread nor on Swift's cooperative pool. The
// waiting task stops waiting when it is cancelled (an interrupted request, the session closing:
// `.interrupted`) or when `waitingAtMost` passes (nil: the caller goes on without the disk). The
// work itself goes on; a result nobody took is handed to `unclaimed` on the queue (a file it
// opened is closed when the result goes; a file it created must be deleted).
//
// A wait that ran out marks the queue stalled (`DiskStall`) until that work ends: meanwhile opens
// and reads do not wait for the disk at all and go without the cache, so a disk that stopped
// answering costs one wait, not one per request.
//
// Locking: each wait's FirstOutcome (DropboxAPI) guards its continuation and whether it ended;
// `DiskStall.overdue` the count of overdue works (`bypassed` is an atomic counter). Continuations
// are resumed after the lock is released.

import Dispatch
import DropboxAPI
import Synchronization

enum DiskWork {
    /// How a wait for the disk queue ended.
    enum Outcome<T: Sendable>: Sendable {
        case done(T)
        case timedOut
        case cancelled
    }

    /// The result of `work`, run on `queue`; nil when `timeout` seconds pass first; `.interrupted`
    /// when the calling task is cancelled first.
    static func run<T: Sendable>(
        on queue: DispatchQueue, stall: DiskStall, waitingAtMost timeout: Double,
        unclaimed: @escaping @Sendable (T) -> Void = { _ in }, _ work: @escaping @Sendable () -> T
    ) async throws(FilesystemError) -> T? {
        let waiter = FirstOutcome<Outcome<T>>()
        // Set, under the waiter's lock, when the timeout ends the wait: the work's end, which
        // finishes after it, then sees it and ends the stall the timeout began.
        let overdue = Atomic<Bool>(false)
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome<T>, Never>) in
                waiter.install(continuation)
                if Task.isCancelled {
                    waiter.finish(.cancelled)
                    return
                }
                queue.async {
                    let result = work()
                    if !waiter.finish(.done(result)) { unclaimed(result) }
                    if overdue.load(ordering: .acquiring) { stall.ended() }
                }
                queue.asyncAfterOnTimer(seconds: timeout) {
                    if waiter.finish(.timedOut, whenFirst: { overdue.store(true, ordering: .releasing) }) {
                        stall.began()
                    }
                }
            }
        } onCancel: {
            waiter.finish(.cancelled)
        }
        switch outcome {
        case .done(let result): return result
        case .timedOut: return nil
        case .cancelled: throw .interrupted
        }
    }
}

/// Whether a wait for the disk queue ran out and its work has not ended yet.
final class DiskStall: Sendable {
    private let overdue = Mutex(0)
    /// Contents read without the disk cache because the disk did not answer (or was stalled): the
    /// status line's `disk_bypassed`. Each is kept in memory only, as long as the buffer cap allows.
    private let bypassed = Atomic<Int>(0)

    var isStalled: Bool { overdue.withLock { $0 > 0 } }

    /// How many contents went without the disk cache because of the disk, since the mount.
    var bypassCount: Int { bypassed.load(ordering: .relaxed) }

    /// Counts a content that goes without the disk cache because the disk did not answer.
    func noteBypass() { bypassed.add(1, ordering: .relaxed) }

    fileprivate func began() { overdue.withLock { $0 += 1 } }
    fileprivate func ended() { overdue.withLock { $0 -= 1 } }
}

extension DispatchQueue {
    /// Runs `body` after `seconds` on a global queue (not on `self`, which may be the stalled one).
    fileprivate func asyncAfterOnTimer(seconds: Double, _ body: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: body)
    }
}
