// Ends the change watcher's current wait (a longpoll, or the pause before a retry) early, so it
// catches up at once when something it waited for has changed: a host found unreachable or back
// (Connectivity), a sign-in accepted again, or a resume from sleep (ResumeDetector). Without it the
// watcher would sit in a longpoll on a connection that died with the network, or in a backoff of up
// to 60 s, and a resumed laptop would wait out libcurl timers that stood still while it slept.
//
// A wake while no wait runs is kept, and ends the next wait at once (so a wake between two waits
// is not lost). `state` (a Mutex) guards the running wait's cancel closure and the pending wake.

import DropboxAPI
import Synchronization

final class WatcherWakeup: Sendable {
    private struct State {
        var cancel: StoredClosure<@Sendable () -> Void>?
        var pending = false
        var wakes = 0
    }
    private let state = Mutex(State())

    /// Ends the current wait, or the next one if none runs.
    func wake() {
        let cancel = state.withLock { s -> StoredClosure<@Sendable () -> Void>? in
            s.pending = true
            s.wakes += 1
            return s.cancel
        }
        cancel?.call()
    }

    /// Wakes so far (for tests and the log).
    var wakes: Int { state.withLock { $0.wakes } }

    /// Runs `body` (a wait) unless a wake is pending; nil when a wake ended it (or came first),
    /// else its result. Cancelling the caller cancels `body` too.
    func wait<T: Sendable>(
        _ body: @escaping @Sendable () async throws(DropboxError) -> T
    ) async -> Result<T, DropboxError>? {
        let task = Task { () async -> Result<T, DropboxError> in
            do throws(DropboxError) {
                return .success(try await body())
            } catch {
                return .failure(error)
            }
        }
        let woken = state.withLock { s -> Bool in
            if s.pending { return true }
            s.cancel = StoredClosure { task.cancel() }
            return false
        }
        if woken { task.cancel() }
        let result = await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }
        let wasWoken = state.withLock { s -> Bool in
            s.cancel = nil
            defer { s.pending = false }
            return s.pending
        }
        return wasWoken ? nil : result
    }
}
