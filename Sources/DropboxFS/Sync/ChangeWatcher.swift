// Freshness: after the tree is filled (or at once, in lazy mode) the watcher longpolls the
// account's cursor, applies every change batch from list_folder/continue in order, and keeps the
// newest cursor. A `reset` cursor is recovered without unmounting: with prefetch a new full listing
// replaces the tree (entries it no longer sees are removed); without, every folder is listed again
// when next needed. A whole-account listing that fails is started again after a pause (1, 2, 4 ...
// 60 s), so the mount never stays half-filled; meanwhile folders are listed one by one when needed.
// A tree restored from the store starts from its stored cursor: one list_folder/continue catches up
// with what changed while unmounted. After a failure, and while Dropbox cannot be reached (retried
// at least every `offlineRetry` seconds), the next request is again a continue, so a mount coming
// back online catches up at once.
//
// Below it, WatcherWakeup: how the watcher's wait is ended early.

import DropboxAPI
import Log
import Synchronization

extension SyncEngine {
    /// Starts the background work the options ask for. Call once, after mounting.
    func start() {
        guard options.prefetch || options.watchChanges else { return }
        let now = options.monotonicNow()
        state.withLock { s in
            // The status says "filling" from the moment the mount is up, not from when the
            // background task first runs: a `dropboxfs status` right after mounting is not told
            // that folders are listed lazily.
            if options.prefetch && !s.restored { s.progress.fillStarting(at: now) }
        }
        // Below the requests' priority: the fill decodes and applies pages on the task pool, and
        // a lookup queued behind them on the same threads waited up to tens of milliseconds per
        // hop (docs/JOURNAL.md, "Background work at utility priority"). Tasks it starts inherit it.
        // A host found unreachable or back, or a sign-in accepted again, ends the watcher's wait.
        connectivity.onChange { [wakeup] in wakeup.wake() }
        let task = Task(priority: TaskPriorities.background) { await self.runSync() }
        let resume =
            options.watchChanges ? Task(priority: TaskPriorities.background) { await self.watchForResume() } : nil
        state.withLock { $0.backgroundTasks += [task] + (resume.map { [$0] } ?? []) }
    }

    /// Every second, whether the machine slept (ResumeDetector.swift): then the watcher drops its
    /// longpoll or pause and catches up, and unreachable hosts are tried again at once.
    private func watchForResume() async {
        let detector = ResumeDetector(gap: options.sleepGap)
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            guard let slept = detector.check() else { continue }
            Log.info("resumed after about \(Int(slept)) s asleep: catching up with Dropbox now")
            connectivity.resumed()
            wakeup.wake()
        }
    }

    /// Stops the background work (at unmount).
    func stop() {
        let tasks = state.withLock { s -> [Task<Void, Never>] in
            defer {
                s.backgroundTasks = []
                s.listingTasks = [:]
            }
            return s.backgroundTasks + s.listingTasks.values
        }
        tasks.forEach { $0.cancel() }
    }

    private func runSync() async {
        // A tree that cannot yet be tied to the account Dropbox names is confirmed first.
        if options.accountConfirmation != nil, state.withLock({ $0.restored }) {
            guard await confirmAccountFirst() else { return }
        }
        let stored = state.withLock { s in s.restored } ? tree.cursor : nil
        // A restored tree catches up from its cursor first; a restored tree without one (its
        // refill was cut short) is served while it is listed again.
        var catchUp = stored != nil
        var cursor = stored
        if stored == nil {
            (cursor, catchUp) = await establishCursor()
        }
        guard options.watchChanges else { return }
        if !catchUp {
            state.withLock { $0.progress.phase = options.prefetch ? .watching : .lazy }
        }
        guard !Task.isCancelled else { return }
        var failures = 0
        while !Task.isCancelled {
            guard let current = cursor else {
                failures += 1
                await pause(seconds: retryDelay(failures: failures))
                (cursor, catchUp) = await establishCursor()
                continue
            }
            var longpollFailed = false
            do throws(DropboxError) {
                if catchUp {
                    cursor = try await applyChanges(since: current)
                    catchUp = false
                    failures = 0
                    markCurrent()
                    caughtUp.fire()
                    if state.withLock({ s in defer { s.relistRestored = false }; return s.relistRestored }) {
                        Log.info("the stored tree was last listed in full long ago: listing the account again in the background")
                        let (relisted, behind) = await establishCursor()
                        if let relisted { (cursor, catchUp) = (relisted, behind) }
                    }
                    continue
                }
                let timeout = options.longpollTimeout
                guard
                    let polled = await wakeup.wait({ [syncClient] () async throws(DropboxError) in
                        try await syncClient.listFolderLongpoll(cursor: current, timeoutSeconds: timeout)
                    })
                else {
                    // Woken: catch up now, then longpoll again on a fresh connection.
                    catchUp = true
                    continue
                }
                let poll: LongpollResult
                do throws(DropboxError) {
                    poll = try polled.get()
                } catch {
                    // The notify host failing says nothing about the tree: the catch-up that
                    // follows (on the api host) decides whether it is behind.
                    longpollFailed = true
                    throw error
                }
                if poll.changes {
                    cursor = try await applyChanges(since: current)
                    markCurrent()
                } else {
                    markCurrent()
                    // Nothing changed up to now: the stored tree is as of now (its `synced_at`,
                    // which an offline mount shows as `stored_as_of` and picks its tree by).
                    tree.change(cursor: .set(current)) { _, _ in }
                }
                failures = 0
                if let backoff = poll.backoff { await pause(seconds: Double(backoff)) }
            } catch .cursorReset {
                Log.warning("the Dropbox cursor was reset; rebuilding the tree")
                let now = options.monotonicNow()
                state.withLock { s in
                    s.progress.resets += 1
                    // The refill starts now, in the same step as the reset shows.
                    if options.prefetch { s.progress.fillStarting(at: now) }
                }
                (cursor, catchUp) = await recoverFromReset()
            } catch {
                if Task.isCancelled { break }  // unmounting
                if !longpollFailed { markBehind(error) }
                failures += 1
                let delay = retryDelay(failures: failures)
                // An unreachable host and a refused sign-in are logged once by Connectivity, not
                // at every try.
                if !Self.loggedByConnectivity(error) {
                    Log.warning("watching for changes failed (\(error)); retrying in \(Double(Int(delay * 10)) / 10) s")
                }
                catchUp = true
                await pause(seconds: delay)
            }
        }
    }

    /// The cursor to follow: from a whole-account listing (prefetch) or the latest one (lazy), and
    /// whether the changes since it are still to be applied before the tree matches Dropbox.
    private func establishCursor() async -> (String?, Bool) {
        if options.prefetch {
            var failures = 0
            while !Task.isCancelled {
                let filled = options.fill.parallelism > 1 ? await runParallelFill() : await runSequentialFill()
                if let filled {
                    if !filled.needsCatchUp {
                        markCurrent()
                        caughtUp.fire()
                    }
                    return (filled.cursor, filled.needsCatchUp)
                }
                if Task.isCancelled { break }
                failures += 1
                let delay = retryDelay(failures: failures) * options.fillRetryScale
                Log.warning(
                    "the listing of the whole account failed (\(failures) in a row); starting it again in "
                        + "\(Double(Int(delay * 10)) / 10) s, folders are listed one by one meanwhile")
                await pause(seconds: delay)
            }
            return (nil, false)
        }
        guard options.watchChanges else { return (nil, false) }
        do {
            let cursor = try await syncClient.listFolderGetLatestCursor(
                ListFolderArg(path: "", recursive: true, limit: options.pageLimit))
            markCurrent()
            caughtUp.fire()
            return (cursor, false)
        } catch {
            markBehind(error)
            Log.warning("cannot get a change cursor: \(error)")
            return (nil, false)
        }
    }

    /// Applies every change batch since `cursor` and returns the newest cursor.
    func applyChanges(since cursor: String) async throws(DropboxError) -> String {
        var cursor = cursor
        var bounds = ListingBounds()
        while true {
            let page = try await syncClient.listFolderContinue(cursor: cursor)
            try bounds.check(page)
            applyPage(page.entries, as: .changes, cursor: page.cursor)
            cursor = page.cursor
            if !page.hasMore {
                tree.change(with: state) { s, t, _ in reportUnconfirmedFolders(madeBy: 0, in: &s, &t) }
                return cursor
            }
        }
    }

    private func recoverFromReset() async -> (String?, Bool) {
        tree.change(cursor: .clear) { _, _ in }
        if options.prefetch { return await establishCursor() }
        tree.change { t, invalidated in
            t.tree.markAllIncomplete()
            for index in t.tree.nodes.indices where t.tree.nodes[index].attached && t.tree.nodes[index].kind == .folder {
                invalidated.append(.inode(UInt64(index)))
            }
        }
        return await establishCursor()
    }

    /// Backoff between failed watcher rounds and fill attempts: the pacer's curve (Backoff.swift),
    /// doubling from 1 s up to 60 s, jittered in the upper half.
    static func retryDelay(failures: Int) -> Double {
        Backoff.delay(afterFailure: failures, random: .random(in: 0..<1), base: .seconds(1), cap: .seconds(60)) / .seconds(1)
    }

    /// The backoff, at most `offlineRetry` while a host cannot be reached or the sign-in is
    /// refused, so a mount notices soon that the network or a new token is back.
    func retryDelay(failures: Int) -> Double {
        let delay = Self.retryDelay(failures: failures)
        let waiting = connectivity.anyUnreachable || connectivity.signIn.problem != nil
        return waiting ? min(delay, options.offlineRetry) : delay
    }

    static func loggedByConnectivity(_ error: DropboxError) -> Bool {
        switch error {
        case .authentication: return true
        case .transport(let failure): return failure.meansUnreachable || failure.kind == .offline
        default: return false
        }
    }

    /// Sleeps `seconds`, or less when woken (WatcherWakeup, ChangeWatcher.swift).
    func pause(seconds: Double) async {
        _ = await wakeup.wait { () async throws(DropboxError) in
            do {
                try await Task.sleep(for: .seconds(seconds))
            } catch {
                throw .transport(TransportError(kind: .cancelled, message: "woken"))
            }
        }
    }
}

// MARK: -
// Ends the change watcher's current wait (a longpoll, or the pause before a retry) early, so it
// catches up at once when something it waited for has changed: a host found unreachable or back
// (Connectivity), a sign-in accepted again, or a resume from sleep (ResumeDetector). Without it the
// watcher would sit in a longpoll on a connection that died with the network, or in a backoff of up
// to 60 s, and a resumed laptop would wait out libcurl timers that stood still while it slept.
//
// A wake while no wait runs is kept, and ends the next wait at once (so a wake between two waits
// is not lost). `state` (a Mutex) guards the running wait's cancel closure and the pending wake.

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
