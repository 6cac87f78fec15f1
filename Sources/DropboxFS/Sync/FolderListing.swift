// Lazy listing: a folder is listed (list_folder plus every continue page) the first time it is
// needed, or again once its listing is older than the TTL. Concurrent callers for one folder share a
// single listing, and a folder is only marked complete once every page has been applied, so a
// missing name can then be answered with no request. The pages may come in any order and repeat
// entries (the later occurrence wins); change batches applied while the listing was in flight are
// applied again after it (ChangeReplay, SyncEngine.swift), and a listing that started before the newest one
// applied to its folder is not applied at all (docs/SEMANTICS.md, "Listings in flight"). A request whose caller is signalled stops waiting
// (`.interrupted`); the listing goes on for the other requests waiting for it, and is cancelled
// when none is left (SharedWork.swift): the next request for the folder lists it afresh.

import DropboxAPI
import Log

extension SyncEngine {
    /// Returns once `folder` holds a complete, fresh listing. `waitForFill`: a recursive listing
    /// that will fill the folder is waited for a little first (a walk's readdir); a lookup of a
    /// name the fill has not brought yet lists the folder at once instead.
    func ensureListed(_ folder: UInt32, waitForFill: Bool = true) async throws(FilesystemError) {
        // A recursive listing that will fill this folder is usually quicker than a request per
        // folder for a walk; wait a little for it before listing the folder by itself. One that
        // ends without filling it (a branch the fill split) may leave others that will: wait for
        // those too, within the same time.
        let deadline = options.monotonicNow() + options.prefetchWait
        // The folder as it is now: every step after a wait checks it is still the same one.
        let ref = try tree.existingRef(folder)
        while waitForFill {
            let covering = try state.withLock { (s: inout State) throws(FilesystemError) -> RecursiveListing? in
                // Not a folder: the listing step below says so.
                let wanted: Bool
                do throws(FilesystemError) {
                    wanted = try tree.needsListing(ref)
                } catch .notADirectory {
                    wanted = false
                }
                guard wanted else { return nil }
                let covering = recursiveListingToWaitFor(folder, in: &s)
                if let covering { s.fillQueue?.promote(covering) }
                return covering
            }
            let remaining = deadline - options.monotonicNow()
            guard let covering, remaining > 0, await covering.done.wait(seconds: remaining) else { break }
        }
        while true {
            if Task.isCancelled { throw .interrupted }
            let listing = try state.withLock { (s: inout State) throws(FilesystemError) -> SharedWork<Void>? in
                // A deleted folder lists as empty (LiveTree.isListed).
                guard try tree.needsListing(ref) else { return nil }
                // A listing its waiters all left was cancelled: this request lists the folder again.
                if let running = s.listings[ref], !running.isAbandoned { return running }
                return startFolderListing(ref, in: &s)
            }
            guard let listing else { return }
            guard try await listing.value() != nil else { continue }  // abandoned: list it again
            // The folder is complete now, unless a newer listing took this one's place (the
            // fill's, after its cursor) and is still running: the loop waits for that one.
            if tree.holdsListing(ref) { return }
        }
    }

    /// Starts listing `folder` by itself (every page) as the listing requests for it share;
    /// call with the lock held. Only requests start these, at their own priority: the
    /// whole-account fill lists its folders alone without sharing (listAloneForFill), so no
    /// request ever waits on a listing running at the fill's lower priority.
    func startFolderListing(_ folder: FolderRef, in s: inout State) -> SharedWork<Void> {
        let path = tree.listingPath(of: folder.index)
        let snapshot = s.takeSnapshotSequence()
        let ticket = s.changeReplay.begin()
        let listing = SharedWork<Void> { listing in
            do throws(FilesystemError) {
                return .success(
                    try await self.listAndApply(folder, path: path, snapshot: snapshot, ticket: ticket, as: listing))
            } catch {
                return .failure(error)
            }
        }
        s.listings[folder] = listing
        return listing
    }

    private func listAndApply(
        _ folder: FolderRef, path: String, snapshot: UInt32, ticket: UInt64, as listing: SharedWork<Void>
    ) async throws(FilesystemError) {
        defer {
            state.withLock { s in
                if s.listings[folder] === listing { s.listings.removeValue(forKey: folder) }
                s.changeReplay.end(ticket)
            }
        }
        let entries = try await fetchFolderEntries(folder, path: path)
        tree.change(with: state) { s, t, invalidated in
            // The fill took this listing out of the map (listAloneForFill): not applied.
            guard s.listings[folder] === listing else { return }
            applyFolderListing(
                folder, entries: entries, snapshot: snapshot, ticket: ticket, in: &s, &t, invalidations: &invalidated)
        }
    }

    /// Every entry of `folder`'s own listing (all pages). A folder Dropbox no longer has is taken
    /// out of the tree (`.notFound`).
    func fetchFolderEntries(_ folder: FolderRef, path: String, forFill: Bool = false) async throws(FilesystemError) -> [Metadata] {
        var entries: [Metadata] = []
        do {
            var undecodable = 0
            // The fill's own listings keep trying while offline, as its branches do.
            let lister = forFill ? syncClient : client
            _ = try await lister.listFolderAll(ListFolderArg(path: path, limit: options.pageLimit)) { page in
                entries.append(contentsOf: page.entries)
                undecodable += page.undecodableEntries
                return true
            }
            if undecodable > 0 {
                Log.warning("listing of \(path.isEmpty ? "/" : path) skipped \(undecodable) undecodable entries")
            }
            return entries
        } catch where FilesystemError.folderGone(error) {
            // The folder is gone on Dropbox: drop it from the tree.
            tree.change { t, invalidated in
                guard let index = t.tree.folder(folder), index != MetadataTree.rootIndex else { return }
                t.tree.remove(index, invalidations: &invalidated)
            }
            throw .notFound
        } catch {
            let failure = FilesystemError(error)
            // Cancelled because nobody waits for it any more: not worth a warning.
            if failure != .interrupted { Log.warning("listing \(path.isEmpty ? "/" : path) failed: \(error)") }
            throw failure
        }
    }

    /// Makes `folder`'s children exactly `entries` (its own listing, of snapshot sequence
    /// `snapshot`) and marks it complete, then applies again the change batches recorded since
    /// `ticket`; nothing when the folder is gone or a newer listing was applied to it
    /// (docs/SEMANTICS.md, "Listings in flight"). Returns whether it was applied. Call inside
    /// `tree.change(with: state)`.
    @discardableResult
    func applyFolderListing(
        _ folder: FolderRef, entries: [Metadata], snapshot: UInt32, ticket: UInt64, in s: inout State,
        _ t: inout LiveTree.State, invalidations invalidated: inout [Invalidation]
    ) -> Bool {
        guard let index = t.tree.folder(folder),
            t.replaceChildren(
                of: index, with: entries, snapshot: snapshot, at: options.monotonicNow(), invalidations: &invalidated)
        else { return false }
        replayChanges(since: ticket, in: &s, &t, invalidations: &invalidated)
        return true
    }
}
