// The whole-account fill over parallel branches. One recursive listing of the root is one chain of
// list_folder/continue pages, each waiting for the one before; Dropbox chooses both the server time
// per page and the page size (`limit` is an upper bound only, and some accounts get pages of a few
// entries for long stretches), so that chain sets the speed of every cold mount. Instead:
//
// 1. The account's cursor is taken first (list_folder/get_latest_cursor, root, recursive): every
//    listing after it is a snapshot at least as new.
// 2. The root's own entries are listed by themselves (not recursive).
// 3. Each top-level folder is listed recursively, at most `parallelism` listings in flight, the
//    others queued, biggest first (a request waiting for a queued branch moves it to the front
//    and runs it at the requests' priority, TaskPriorities.swift).
//    A refill first splits the branches its tree shows as big (FillPlan.swift). A branch still
//    listing after `splitAfterPages` pages while fewer than two branches per slot are left is
//    split: its folder is
//    listed by itself and, if its subfolders fit the request budget, the branch's listing stops
//    and each subfolder is listed recursively instead. What the stopped listing applied stays; the
//    newer listings confirm or remove it (MetadataTree.completeSubtree, by epoch).
// 4. Once every branch is complete, the changes since the first cursor are applied in order
//    (ChangeWatcher.applyChanges). Every path changed during the fill ends as the last change
//    says; every other path is the same in any snapshot taken after the cursor. So nothing changed
//    during the fill is missed or resurrected, whatever order the branches were listed in.
//
// Requests stay close to the pages the data needs: each listing adds at most one partial page, so
// the number of listings is bounded (`maxListings`, and a split must also fit a budget that grows
// with the pages seen). An account with more top-level folders than that is listed in one chain,
// as with `parallelism` 1. The fill keeps a few of the pacer's slots free (RetryPolicy caps the
// requests in flight), so reads and lookups are not queued behind it.
//
// Locking: the queue (`FillQueue`) lives in SyncEngine.State, under its lock, so requests can
// promote a branch and the split decision can register the new listings in one step.

import DropboxAPI
import Log
import Synchronization

/// How the whole-account fill is spread over parallel listings.
public struct FillOptions: Sendable, Equatable {
    /// Recursive listings in flight at once; 1 lists the account in one chain of pages.
    public var parallelism: Int
    /// Most recursive listings one fill starts (top-level branches and the parts of split ones).
    public var maxListings: Int
    /// A branch still listing after this many pages, while fewer than two branches per listing
    /// slot are left (queued or running), is split.
    public var splitAfterPages: Int
    /// Requests beyond the data's pages a fill may spend on listing in parallel, besides a quarter
    /// of the pages applied (the target is at most 1.3 times the pages the data needs, plus 20).
    public var requestSlack: Int

    public init(parallelism: Int = 6, maxListings: Int = 24, splitAfterPages: Int = 3, requestSlack: Int = 16) {
        self.parallelism = max(1, parallelism)
        self.maxListings = max(1, maxListings)
        self.splitAfterPages = max(1, splitAfterPages)
        self.requestSlack = max(0, requestSlack)
    }
}

/// The branches of a running parallel fill: queued ones (registered as recursive listings, so a
/// request waits for them) and the count of those running. Guarded by SyncEngine.state.
struct FillQueue {
    /// Planned listings not started yet, the next one first.
    private(set) var waiting: [RecursiveListing] = []
    /// Those of `waiting` a request waits for: they run at the requests' priority.
    private var promoted: Set<ObjectIdentifier> = []
    var running = 0
    /// Recursive listings this fill started or queued, a failed branch's new listing included.
    var listings = 0
    /// Requests beyond the data's pages: the cursor, folders listed by themselves, the pages of
    /// stopped listings, failed requests and the pages a failed branch's new listing lists again.
    var overhead = 0
    /// The pages applied before this fill (SyncProgress counts those of every fill of the mount):
    /// the budget grows with this fill's pages only.
    let pagesAtStart: Int

    init(pagesAtStart: Int) {
        self.pagesAtStart = pagesAtStart
    }

    /// Pages this fill has applied.
    func pagesApplied(_ progress: SyncProgress) -> Int { progress.pages - pagesAtStart }

    mutating func enqueue(_ listing: RecursiveListing, first: Bool = false) {
        if first { waiting.insert(listing, at: 0) } else { waiting.append(listing) }
    }

    /// The next listing to start, and whether a request waits for it.
    mutating func next() -> (listing: RecursiveListing, promoted: Bool)? {
        guard !waiting.isEmpty else { return nil }
        let listing = waiting.removeFirst()
        return (listing, promoted.remove(ObjectIdentifier(listing)) != nil)
    }

    /// A request waits for `listing`: start it before the others, at the requests' priority.
    mutating func promote(_ listing: RecursiveListing) {
        guard let at = waiting.firstIndex(where: { $0 === listing }) else { return }
        promoted.insert(ObjectIdentifier(listing))
        if at > 0 { waiting.insert(waiting.remove(at: at), at: 0) }
    }

    func isPromoted(_ listing: RecursiveListing) -> Bool { promoted.contains(ObjectIdentifier(listing)) }

    mutating func removeAll() -> [RecursiveListing] {
        defer {
            waiting = []
            promoted = []
        }
        return waiting
    }
}

extension SyncEngine {
    /// The outcome of a fill: the cursor to follow, and whether the changes since it still need to
    /// be applied (the replay failed; the watcher does it first).
    struct FillResult {
        let cursor: String
        let needsCatchUp: Bool
    }

    /// Lists the whole account over parallel branches and replays the changes made meanwhile.
    /// Returns nil when the fill failed (the caller starts it again after a pause) or was cancelled.
    func runParallelFill() async -> FillResult? {
        let started = options.monotonicNow()
        state.withLock { $0.progress.fillStarting(at: started) }
        Log.info("listing the whole account in the background, up to \(options.fill.parallelism) branches at once")
        guard let first = await takeFillCursor() else { return nil }
        do throws(FilesystemError) {
            try await listAloneForFill(ref(MetadataTree.rootIndex))
        } catch {
            if !Task.isCancelled { noteFillFailure(error) }
            return nil
        }
        let tops = tree.subfolders(of: MetadataTree.rootIndex)
        // The cursor, the root's own listing, and a request's listing of the root at mount.
        let baseOverhead = 3
        var plan: [RecursiveListing]?
        if tops.count <= options.fill.maxListings {
            // A refill plans its branches from the sizes the tree already holds (FillPlan.swift):
            // the budget then counts the pages those sizes need.
            let estimatedPages = tree.counts.live / Int(max(1, options.pageLimit))
            let room = PlanRoom(
                listings: options.fill.maxListings - tops.count,
                requests: fillBudget(pagesApplied: estimatedPages) - baseOverhead - tops.count)
            let branches = await planBranches(tops, room: room)
            if Task.isCancelled { return nil }
            plan = state.withLock { s -> [RecursiveListing] in
                var queue = FillQueue(pagesAtStart: s.progress.pages)
                queue.overhead = baseOverhead + branches.listedAlone
                var planned: [RecursiveListing] = []
                for top in branches.branches {
                    guard let listing = planRecursiveListing(top, in: &s) else { continue }
                    queue.enqueue(listing)
                    queue.listings += 1
                    planned.append(listing)
                }
                s.fillQueue = queue
                return planned
            }
        }
        guard let plan else {
            // Too many top-level folders to list each alone within the request budget.
            Log.info("the account has many top-level folders: listing it in one chain")
            return await runSequentialFill(after: first)
        }
        let complete = await runBranches()
        let abandoned = state.withLock { s in s.fillQueue?.removeAll() ?? [] }
        state.withLock { s in
            for listing in abandoned where s.recursiveListings[listing.ref] === listing {
                s.recursiveListings[listing.ref] = nil
            }
            s.fillQueue = nil
        }
        for listing in abandoned { listing.done.fire() }
        guard complete, !Task.isCancelled else { return nil }
        let now = options.monotonicNow()
        tree.change(with: state, cursor: .filled(first)) { s, _, _ in
            s.progress.fillSeconds = now - started
        }
        Log.info("background listing done (\(plan.count) branches): \(statusLine())")
        do {
            let cursor = try await applyChanges(since: first)
            state.withLock { s in s.progress.phase = options.watchChanges ? .watching : .complete }
            return FillResult(cursor: cursor, needsCatchUp: false)
        } catch {
            if Task.isCancelled { return nil }
            Log.warning("applying the changes made during the listing failed (\(error)); the watcher retries")
            state.withLock { s in s.progress.phase = options.watchChanges ? .watching : .complete }
            return FillResult(cursor: first, needsCatchUp: true)
        }
    }

    /// The account listed in one chain (parallelism 1, or too many top-level folders), after the
    /// account's cursor `first` (taken here when the caller has none and changes are watched),
    /// then the changes since that cursor applied, as the parallel fill does. The chain's own final cursor is not enough: a
    /// folder listed by itself while the chain runs takes a newer sequence than the chain, yet its
    /// snapshot may be older than the chain's pages, which then do not land in it
    /// (docs/SEMANTICS.md, "Listings in flight"); a change made between the two snapshots is in
    /// neither the folder's listing nor any batch after the chain's cursor. Returns nil when that
    /// listing failed or stopped, whatever cursor the engine held before (a relist of a stored
    /// tree starts after its catch-up set one).
    func runSequentialFill(after first: String? = nil) async -> FillResult? {
        let start: String?
        if let first {
            start = first
        } else if !options.watchChanges {
            // No change is ever followed: a folder is as fresh as its own listing, and the first
            // cursor would cost two requests for nothing.
            start = nil
        } else {
            guard let taken = await takeFillCursor() else { return nil }
            start = taken
        }
        let root = ref(MetadataTree.rootIndex)
        // A whole-account listing already running started before `start`: only its own cursor
        // is known to follow its snapshot.
        let (listing, ownListing) = state.withLock { s in
            let running = s.recursiveListings[root] != nil
            return (startRecursiveListing(root, in: &s), !running)
        }
        guard let listing else { return nil }
        _ = await listing.done.wait(seconds: .infinity)
        guard let cursor = listing.completedCursor.withLock({ $0 }) else { return nil }
        guard ownListing, let start else { return FillResult(cursor: cursor, needsCatchUp: false) }
        do {
            return FillResult(cursor: try await applyChanges(since: start), needsCatchUp: false)
        } catch {
            if Task.isCancelled { return nil }
            Log.warning("applying the changes made during the listing failed (\(error)); the watcher retries")
            return FillResult(cursor: start, needsCatchUp: true)
        }
    }

    /// The account's cursor (root, recursive), taken before a fill lists anything: every listing
    /// after it is a snapshot at least as new. Nil when the request failed (counted as a fill
    /// failure) or the fill was cancelled.
    private func takeFillCursor() async -> String? {
        do {
            return try await syncClient.listFolderGetLatestCursor(
                ListFolderArg(path: "", recursive: true, limit: options.pageLimit))
        } catch {
            if !Task.isCancelled { noteFillFailure(error) }
            return nil
        }
    }

    /// Runs the queued branches, at most `parallelism` at once, until none is left. Returns false
    /// when cancelled. A branch that fails is queued again after a pause.
    private func runBranches() async -> Bool {
        await withTaskGroup(of: Void.self) { group in
            while !Task.isCancelled {
                while let next = takeNextBranch() {
                    group.addTask {
                        guard next.promoted else { return await self.runBranch(next.listing) }
                        // A branch a request waits for runs (asks, decodes and applies its pages)
                        // at the requests' priority, not behind the rest of the fill. In a task of
                        // its own, cancelled with the group: a child task runs on its group's
                        // threads whatever priority it is given (measured, SWIFT-FUSE-NOTES.md).
                        let task = Task(priority: TaskPriorities.requests) { await self.runBranch(next.listing) }
                        await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
                    }
                }
                if await group.next() == nil { break }
            }
            group.cancelAll()
        }
        return !Task.isCancelled
    }

    /// The next queued branch if a listing slot is free; it counts as running from now.
    private func takeNextBranch() -> (listing: RecursiveListing, promoted: Bool)? {
        state.withLock { s -> (listing: RecursiveListing, promoted: Bool)? in
            guard var queue = s.fillQueue, queue.running < options.fill.parallelism, let next = queue.next() else {
                return nil
            }
            queue.running += 1
            s.fillQueue = queue
            return next
        }
    }

    /// Lists one branch to its end (or until it is split). A failed branch is registered and
    /// queued again after a pause, and what the failure cost counts against the request budget
    /// (fillBudget), as a split's cost does: the request that failed, the new listing, and the
    /// pages the failed one applied, which the new one lists again. Uncounted, they let a flaky
    /// server push a fill past its request target.
    private func runBranch(_ listing: RecursiveListing) async {
        // The branch may have waited in the queue: its folder is checked by its generation.
        guard let path = tree.listingPath(of: listing.ref) else {
            // Gone since it was planned (a change removed it): the changes since the cursor settle it.
            state.withLock { s in
                if s.recursiveListings[listing.ref] === listing { s.recursiveListings[listing.ref] = nil }
                s.changeReplay.end(listing.ticket)
                s.fillQueue?.running -= 1
            }
            listing.done.fire()
            return
        }
        let splitter = BranchSplitter(engine: self, listing: listing)
        let outcome = await runRecursiveListing(listing, path: path, forFill: true) { pages, hasMore in
            splitter.shouldStop(pages: pages, hasMore: hasMore)
        }
        splitter.finish()
        var failed = false
        var wasted = 0
        if case .failed(let error, let pages) = outcome {
            wasted = 1
            if case .lookup = error {
                // The branch's folder was deleted, moved or replaced after the cursor was taken
                // (Dropbox answers not_found or not_folder): the replay of that change settles
                // what stands at its path, with its subtree. Listing it again would fail again.
                Log.debug("the listing of a branch ended with \(error): the changes since the cursor settle it")
            } else {
                failed = true
                wasted += pages
                let failures = noteFillFailure(error)
                try? await Task.sleep(for: .seconds(retryDelay(failures: failures) * options.fillRetryScale))
            }
        }
        state.withLock { s in
            guard var queue = s.fillQueue else { return }
            queue.running -= 1
            queue.overhead += wasted
            // The branch's folder is checked by its generation: it may be gone after the pause.
            if failed, !Task.isCancelled, let again = planRecursiveListing(listing.ref, in: &s) {
                queue.enqueue(again)
                queue.listings += 1
            }
            s.fillQueue = queue
        }
    }

    /// Lists `folder` by itself for the fill, after the cursor was taken. A listing of it already in
    /// flight may be older than the cursor: it is taken out of the listings map, so it is not
    /// applied (its waiters list the folder again, FolderListing.swift). The fill's own listing is
    /// not shared: a request never waits behind a listing of the fill that the server holds up.
    func listAloneForFill(_ folder: FolderRef) async throws(FilesystemError) {
        let (path, snapshot, ticket) = state.withLock { s in
            s.listings[folder] = nil
            return (tree.listingPath(of: folder.index), s.takeSnapshotSequence(), s.changeReplay.begin())
        }
        defer { state.withLock { s in s.changeReplay.end(ticket) } }
        let entries = try await fetchFolderEntries(folder, path: path, forFill: true)
        tree.change(with: state) { s, t, invalidated in
            applyFolderListing(
                folder, entries: entries, snapshot: snapshot, ticket: ticket, in: &s, &t, invalidations: &invalidated)
        }
    }
}

/// Decides, page by page, whether a branch's listing should stop because its folder was split.
/// The folder's own listing is fetched in a task of its own while the branch goes on. Once it has
/// arrived, and if the subfolders fit the budget, it is applied and the subfolders' listings are
/// registered in the same step as the branch's listing stops (no page of the branch, an older
/// snapshot, comes after it; requests waiting for the branch find the new listings).
///
/// Used only from the branch's own task (the listing's page callback), except `probe`, which the
/// fetching task fills when it ends.
private final class BranchSplitter {
    private enum Phase {
        case listing
        case probing(snapshot: UInt32, ticket: UInt64, task: Task<Void, Never>)
        case done
    }

    private let engine: SyncEngine
    private let listing: RecursiveListing
    private var phase = Phase.listing
    private let probe = ProbeOutcome()

    init(engine: SyncEngine, listing: RecursiveListing) {
        self.engine = engine
        self.listing = listing
    }

    func shouldStop(pages: Int, hasMore: Bool) -> Bool {
        guard hasMore, !Task.isCancelled else { return false }
        switch phase {
        case .done:
            return false
        case .listing:
            guard pages >= engine.options.fill.splitAfterPages, engine.fillWantsMoreBranches(), engine.reserveProbe()
            else { return false }
            let engine = self.engine
            let folder = listing.ref
            let probe = self.probe
            let (snapshot, ticket, path) = engine.state.withLock { s in
                (s.takeSnapshotSequence(), s.changeReplay.begin(), engine.tree.listingPath(of: folder.index))
            }
            let task = Task {
                do throws(FilesystemError) {
                    probe.finish(.success(try await engine.fetchFolderEntries(folder, path: path, forFill: true)))
                } catch {
                    probe.finish(.failure(error))
                }
            }
            phase = .probing(snapshot: snapshot, ticket: ticket, task: task)
            return false
        case .probing(let snapshot, let ticket, _):
            guard let outcome = probe.outcome else { return false }
            // The probe's ticket ends after the split applied its entries (replaying the change
            // batches since the probe was sent), not before.
            defer { finish() }
            guard case .success(let entries) = outcome else { return false }
            return engine.splitBranch(
                listing, pagesSoFar: pages, folderEntries: entries, snapshot: snapshot, ticket: ticket)
        }
    }

    /// Ends the probe (the branch ended or the split was decided).
    func finish() {
        guard case .probing(_, let ticket, let task) = phase else { return }
        phase = .done
        task.cancel()
        engine.state.withLock { s in s.changeReplay.end(ticket) }
    }
}

/// The entries of the folder's own listing, handed from the fetching task to the branch's.
private final class ProbeOutcome: Sendable {
    private let value = Mutex<Result<[Metadata], FilesystemError>?>(nil)
    func finish(_ outcome: Result<[Metadata], FilesystemError>) { value.withLock { $0 = outcome } }
    var outcome: Result<[Metadata], FilesystemError>? { value.withLock { $0 } }
}

extension SyncEngine {
    /// The requests beyond the data's pages a fill may spend on listing in parallel, given the
    /// pages applied so far.
    func fillBudget(pagesApplied: Int) -> Int {
        options.fill.requestSlack + pagesApplied / 4
    }

    /// Whether the fill is running short of branches to keep its listing slots busy: fewer than
    /// two per slot left, queued or running. A big branch is best split early, while few of its
    /// pages would be listed again.
    fileprivate func fillWantsMoreBranches() -> Bool {
        state.withLock { s in
            guard let queue = s.fillQueue else { return false }
            return queue.waiting.count + queue.running < 2 * options.fill.parallelism
        }
    }

    /// Counts the folder listing a split is weighed on (the probe) against the request budget
    /// before it is sent; false when it does not fit. A probe is a request whether or not the split
    /// follows: a branch that ends while its probe is in flight, which a loaded machine makes
    /// common, wasted it, and uncounted probes took a fill past its budget.
    fileprivate func reserveProbe() -> Bool {
        state.withLock { s in
            guard var queue = s.fillQueue,
                queue.overhead + 1 + queue.listings <= fillBudget(pagesApplied: queue.pagesApplied(s.progress))
            else { return false }
            queue.overhead += 1
            s.fillQueue = queue
            return true
        }
    }

    /// Replaces the branch of `listing` by recursive listings of its subfolders, queued first, if
    /// they fit the request budget: the folder's own listing (`folderEntries`) is applied and the
    /// subfolders are planned in one step. Returns whether it did; the branch's listing then stops.
    fileprivate func splitBranch(
        _ listing: RecursiveListing, pagesSoFar: Int, folderEntries: [Metadata], snapshot: UInt32, ticket: UInt64
    ) -> Bool {
        tree.change(with: state) { s, t, invalidated in
            guard var queue = s.fillQueue, let top = t.tree.folder(listing.ref) else { return false }
            let subfolderCount = folderEntries.reduce(0) { count, entry in
                if case .folder = entry { return count + 1 }
                return count
            }
            // What the split costs beyond the data's pages: the subfolders' listings list again
            // what the branch's pages so far held, the page in flight when it stops is lost, and
            // each new listing ends with a partial page (the folder's own listing, the probe, was
            // counted when it was sent: reserveProbe).
            let waste = pagesSoFar + 1
            guard subfolderCount > 0, queue.listings + subfolderCount <= options.fill.maxListings,
                queue.overhead + waste + queue.listings + subfolderCount <= fillBudget(pagesApplied: queue.pagesApplied(s.progress))
            else { return false }
            guard
                applyFolderListing(
                    listing.ref, entries: folderEntries, snapshot: snapshot, ticket: ticket, in: &s, &t,
                    invalidations: &invalidated)
            else { return false }
            let subfolders = t.tree.subfolders(of: top)
            for folder in subfolders.reversed() {
                guard let part = registerRecursiveListing(t.tree.ref(folder), in: &s) else { continue }
                queue.enqueue(part, first: true)
                queue.listings += 1
            }
            queue.overhead += waste
            s.fillQueue = queue
            Log.debug("splitting the listing of \(Log.quoted(t.tree.path(of: top))) into \(subfolders.count)")
            return true
        }
    }
}
