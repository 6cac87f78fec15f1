// Recursive listings (docs/ARCHITECTURE.md, "Recursive listings and complete folders"): one
// `list_folder recursive:true` fills a whole subtree in pages of up to 2000 entries, so a cold
// `find` over 10,000 folders costs tens of requests instead of 10,000. The whole-account listing
// starts at mount; in a big account (the listing still runs after subtreeListingAfter) a walk gets
// its top-level branch listed first. Folders become complete only when their listing ends (Dropbox
// promises no order: a child may come before its folder, which is then made from the child's path
// until its own entry arrives, see TreeUpdates.swift); a request for a folder a listing will fill
// waits a little for it, then lists the folder by itself. A failed whole-account listing is started
// again with backoff (ChangeWatcher.establishCursor).

import DropboxAPI
import Log
import Synchronization

/// One running recursive listing.
final class RecursiveListing: Sendable {
    /// The folder listed, checked against the tree before the listing's completion lands.
    let ref: FolderRef
    var top: UInt32 { ref.index }
    /// The listing's snapshot sequence (SyncEngine.State.nextEpoch), taken when it was registered.
    let epoch: UInt32
    let startedAt: Double
    /// The change sequence at the start (ChangeReplay).
    let ticket: UInt64
    let done = CompletionSignal()
    /// The listing's last cursor once every page was applied and the subtree completed; nil while
    /// it runs and after it stopped or failed. Set before `done` fires.
    let completedCursor = Mutex<String?>(nil)

    init(top: FolderRef, epoch: UInt32, startedAt: Double, ticket: UInt64) {
        self.ref = top
        self.epoch = epoch
        self.startedAt = startedAt
        self.ticket = ticket
    }
}

extension SyncEngine {
    /// Starts a recursive listing of `folder` unless one runs; call with the engine's lock held
    /// (not the tree's).
    func startRecursiveListing(_ folder: FolderRef, in s: inout State) -> RecursiveListing? {
        if let running = s.recursiveListings[folder] { return running }
        guard let listing = planRecursiveListing(folder, in: &s) else { return nil }
        let path = tree.listingPath(of: folder.index)
        s.listingTasks[folder] = Task { await self.runRecursiveListing(listing, path: path) }
        return listing
    }

    /// A recursive listing of `folder`, registered (requests wait for it) but not started; nil
    /// when one is already registered or `folder` is no folder of the tree. Call with the engine's
    /// lock held (not the tree's).
    func planRecursiveListing(_ folder: FolderRef, in s: inout State) -> RecursiveListing? {
        guard tree.isFolder(folder) else { return nil }
        return registerRecursiveListing(folder, in: &s)
    }

    /// `planRecursiveListing` for a folder known to be an attached folder of the tree (the caller
    /// holds both locks and checked it).
    func registerRecursiveListing(_ folder: FolderRef, in s: inout State) -> RecursiveListing? {
        if s.recursiveListings[folder] != nil { return nil }
        let listing = RecursiveListing(
            top: folder, epoch: s.takeSnapshotSequence(), startedAt: options.monotonicNow(),
            ticket: s.changeReplay.begin())
        s.recursiveListings[folder] = listing
        return listing
    }

    /// Counts a failed whole-account listing (or branch of one) for the status line; returns the
    /// failures so far.
    @discardableResult
    func noteFillFailure(_ error: any Error) -> Int {
        state.withLock { s in
            s.progress.fillFailures += 1
            s.progress.lastFailure = String(describing: error)
            return s.progress.fillFailures
        }
    }

    /// The listing to wait for before listing `folder` by itself, if any; starts a subtree listing
    /// when the whole-account listing has already run for a while. Call with the lock held.
    func recursiveListingToWaitFor(_ folder: UInt32, in s: inout State) -> RecursiveListing? {
        guard !s.recursiveListings.isEmpty else { return nil }
        var covering: RecursiveListing?
        // The folder's ancestor just below the covering listing's folder (just below the root for
        // the whole-account listing): the branch a walk is in.
        var branch = folder
        for ancestor in tree.attachedAncestry(of: folder) {
            if let listing = s.recursiveListings[ancestor] {
                covering = listing
                break
            }
            branch = ancestor.index
        }
        guard let covering, covering.top != folder else { return nil }
        let now = options.monotonicNow()
        if covering.top == MetadataTree.rootIndex && now - covering.startedAt > options.subtreeListingAfter
            && now - s.lastBranchListing >= 1
        {
            // A walk in a big account (the whole listing is still running after a while): fill the
            // walk's top-level branch first, at most one new branch listing a second, so a walk
            // across many small branches does not duplicate the whole listing. The branch's own
            // folder is listed directly.
            s.lastBranchListing = now
            let started = startRecursiveListing(ref(branch), in: &s)
            return branch == folder ? nil : started ?? covering
        }
        return covering
    }

    /// How a recursive listing ended.
    enum SubtreeOutcome: Sendable {
        /// Every page was applied and the subtree is complete.
        case completed
        /// `stopAfter` asked it to stop, or its task was cancelled (unmounting).
        case stopped
        /// A request failed, after `pages` pages were applied.
        case failed(DropboxError, pages: Int)
    }

    /// Lists `path` recursively to the end, applying pages as they arrive (the next page is
    /// already requested while the current one is decoded and applied), then completes the subtree.
    /// `stopAfter(pages, hasMore)`, asked after each page is applied, can end the listing early
    /// (the whole-account fill splits a big branch that way, ParallelFill.swift). `forFill`: a
    /// branch of the whole-account fill, which keeps trying while offline as the fill does.
    @discardableResult
    func runRecursiveListing(
        _ listing: RecursiveListing, path: String, forFill: Bool = false, stopAfter: ((Int, Bool) -> Bool)? = nil
    ) async -> SubtreeOutcome {
        defer {
            state.withLock { s in
                if s.recursiveListings[listing.ref] === listing {
                    s.recursiveListings[listing.ref] = nil
                    s.listingTasks[listing.ref] = nil
                }
                s.changeReplay.end(listing.ticket)
            }
            listing.done.fire()
        }
        let label = Log.quoted(path.isEmpty ? "/" : path)
        let isWholeAccount = listing.top == MetadataTree.rootIndex
        if isWholeAccount {
            state.withLock { $0.progress.fillStarting(at: listing.startedAt) }
            Log.info("listing the whole account in the background")
        }
        var pages = 0
        do {
            var lastReport = listing.startedAt
            let arg = ListFolderArg(path: path, recursive: true, limit: options.pageLimit)
            // The whole-account fill and its branches keep trying while offline (they are what
            // finds Dropbox again while the fill runs: the watcher starts after it); other
            // subtree listings are on behalf of a waiting user.
            let lister = isWholeAccount || forFill ? syncClient : client
            let finalCursor = try await lister.listFolderAll(arg) { page in
                applyPage(page.entries, as: .listing(epoch: listing.epoch))
                if page.undecodableEntries > 0 {
                    Log.warning("listing of \(label) skipped \(page.undecodableEntries) undecodable entries")
                }
                let now = options.monotonicNow()
                if isWholeAccount && now - lastReport > 2 {
                    lastReport = now
                    Log.info("background listing: \(statusLine())")
                }
                pages += 1
                if let stopAfter, stopAfter(pages, page.hasMore) { return false }
                return !Task.isCancelled
            }
            guard let finalCursor else { return .stopped }  // stopped (split, or unmounting)
            let now = options.monotonicNow()
            tree.change(with: state, cursor: isWholeAccount ? .filled(finalCursor) : .keep) { s, t, invalidated in
                guard let top = t.tree.folder(listing.ref) else { return }
                t.tree.completeSubtree(top, epoch: listing.epoch, at: now, invalidations: &invalidated)
                reportUnconfirmedFolders(madeBy: listing.epoch, in: &s, &t)
                replayChanges(since: listing.ticket, in: &s, &t, invalidations: &invalidated)
                if isWholeAccount {
                    s.progress.fillSeconds = now - listing.startedAt
                    s.progress.phase = options.watchChanges ? .watching : .complete
                }
            }
            listing.completedCursor.withLock { $0 = finalCursor }
            if isWholeAccount { Log.info("background listing done: \(statusLine())") }
            return .completed
        } catch {
            if Task.isCancelled { return .stopped }
            Log.warning("recursive listing of \(label) failed: \(error)")
            if isWholeAccount { noteFillFailure(error) }
            return .failed(error, pages: pages)
        }
    }
}
