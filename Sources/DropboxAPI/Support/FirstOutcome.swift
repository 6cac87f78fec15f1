// A wait that ends once, with whichever outcome comes first: the work's result, a cancellation, a
// timeout. An outcome may come before the waiter's continuation is installed (the work was quick,
// or the task was cancelled before it waited), and must then be handed over when it is. Two waits
// need exactly this: a request waiting for the token refresh every request shares
// (CancellableWait.swift), and a read waiting for work on the disk queue (DropboxFS,
// Reader/DiskWork.swift).
//
// Once handed over, an outcome is not kept: the object may live on (the disk wait's timer holds
// it until it fires), and an outcome kept that long (an open cache file) would hold what it owns.
//
// Locking: `state` guards the continuation, whether the wait ended, and an outcome not yet handed
// over; the continuation is resumed after the lock is released.

import Synchronization

/// One continuation resumed once, with the first outcome given.
public final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, Never>?
        /// The wait ended (an outcome was given).
        var ended = false
        /// An outcome that came before the continuation, until it is installed.
        var early: T?
    }

    private let state = Mutex(State())

    public init() {}

    /// Installs the waiter's continuation, resumed at once when an outcome came first.
    public func install(_ continuation: CheckedContinuation<T, Never>) {
        let early = state.withLock { s -> T? in
            guard let early = s.early else {
                s.continuation = continuation
                return nil
            }
            s.early = nil
            return early
        }
        if let early { continuation.resume(returning: early) }
    }

    /// Ends the wait with `outcome`; false when it had already ended. `whenFirst` runs under the
    /// lock when this outcome is the one that ends the wait, so what it records is seen by every
    /// later `finish` (the disk wait marks a timeout there).
    @discardableResult
    public func finish(_ outcome: T, whenFirst: () -> Void = {}) -> Bool {
        let (taken, continuation) = state.withLock { s -> (Bool, CheckedContinuation<T, Never>?) in
            guard !s.ended else { return (false, nil) }
            s.ended = true
            whenFirst()
            guard let continuation = s.continuation else {
                s.early = outcome
                return (true, nil)
            }
            s.continuation = nil
            return (true, continuation)
        }
        continuation?.resume(returning: outcome)
        return taken
    }
}
