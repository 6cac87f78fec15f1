// Lazy listing: a folder is listed (list_folder plus every continue page) the first time it is
// needed, or again once its listing is older than the TTL. Concurrent callers for one folder share a
// single listing, and a folder is only marked complete once every page has been applied, so a
// missing name can then be answered with no request. The pages may come in any order and repeat
// entries (the later occurrence wins); change batches applied while the listing was in flight are
// applied again after it (ChangeReplay.swift). A request whose caller is signalled stops waiting
// (`.interrupted`); the listing goes on for the other requests waiting for it, and is cancelled
// when none is left (SharedWork.swift): the next request for the folder lists it afresh.

import DropboxAPI
import Log

extension Filesystem {
    /// Returns once `folder` holds a complete, fresh listing. `waitForFill`: a recursive listing
    /// that will fill the folder is waited for a little first (a walk's readdir); a lookup of a
    /// name the fill has not brought yet lists the folder at once instead.
    func ensureListed(_ folder: UInt32, waitForFill: Bool = true) async throws(FilesystemError) {
        // A recursive listing that will fill this folder is usually quicker than a request per
        // folder for a walk; wait a little for it before listing the folder by itself. One that
        // ends without filling it (a branch the fill split) may leave others that will: wait for
        // those too, within the same time.
        let deadline = options.monotonicNow() + options.prefetchWait
        while waitForFill {
            let covering = try state.withLock { (s: inout State) throws(FilesystemError) -> RecursiveListing? in
                guard let node = s.tree.node(folder) else { throw .stale }
                guard node.kind == .folder, node.attached, !isFresh(folder, in: s) else { return nil }
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
                guard let node = s.tree.node(folder) else { throw .stale }
                guard node.kind == .folder else { throw .notADirectory }
                guard node.attached else { return nil }  // a deleted folder lists as empty
                if isFresh(folder, in: s) { return nil }
                // A listing its waiters all left was cancelled: this request lists the folder again.
                if let running = s.listings[folder], !running.isAbandoned { return running }
                return startFolderListing(folder, in: &s)
            }
            guard let listing else { return }
            guard try await listing.value() != nil else { continue }  // abandoned: list it again
            // The folder is complete now, unless a newer listing took this one's place (the
            // fill's, after its cursor) and is still running: the loop waits for that one.
            let complete = state.withLock { s in
                s.tree.node(folder).map { !$0.attached || s.tree.isComplete(folder) } ?? true
            }
            if complete { return }
        }
    }

    /// Starts listing `folder` by itself (every page) as the listing requests for it share;
    /// call with the lock held. The whole-account fill starts one this way for each folder it
    /// lists alone, so a request for the same folder meanwhile joins it.
    func startFolderListing(_ folder: UInt32, in s: inout State) -> SharedWork<Void> {
        let path = s.tree.listingPath(of: folder)
        let ticket = s.changeReplay.begin()
        let listing = SharedWork<Void> { listing in
            do throws(FilesystemError) {
                return .success(try await self.listAndApply(folder, path: path, ticket: ticket, as: listing))
            } catch {
                return .failure(error)
            }
        }
        s.listings[folder] = listing
        return listing
    }

    private func listAndApply(
        _ folder: UInt32, path: String, ticket: UInt64, as listing: SharedWork<Void>
    ) async throws(FilesystemError) {
        defer {
            state.withLock { s in
                if s.listings[folder] === listing { s.listings.removeValue(forKey: folder) }
                s.changeReplay.end(ticket)
            }
        }
        let entries = try await fetchFolderEntries(folder, path: path)
        var invalidated: [Invalidation] = []
        defer { invalidations.publish(invalidated) }
        state.withLock { s in
            // A newer listing of the folder took this one's place: this older snapshot must not
            // land after it.
            guard s.listings[folder] === listing else { return }
            applyFolderListing(folder, entries: entries, ticket: ticket, in: &s, invalidations: &invalidated)
        }
    }

    /// Every entry of `folder`'s own listing (all pages). A folder Dropbox no longer has is taken
    /// out of the tree (`.notFound`).
    func fetchFolderEntries(_ folder: UInt32, path: String) async throws(FilesystemError) -> [Metadata] {
        var entries: [Metadata] = []
        do {
            var undecodable = 0
            _ = try await client.listFolderAll(ListFolderArg(path: path, limit: options.pageLimit)) { page in
                entries.append(contentsOf: page.entries)
                undecodable += page.undecodableEntries
                return true
            }
            if undecodable > 0 {
                Log.warning("listing of \(path.isEmpty ? "/" : path) skipped \(undecodable) undecodable entries")
            }
            return entries
        } catch .lookup(.notFound) {
            // The folder is gone on Dropbox: drop it from the tree.
            var invalidated: [Invalidation] = []
            state.withLock { s in
                guard let node = s.tree.node(folder), node.attached, folder != MetadataTree.rootIndex else { return }
                s.tree.remove(folder, invalidations: &invalidated)
            }
            invalidations.publish(invalidated)
            throw .notFound
        } catch {
            let failure = FilesystemError(error)
            // Cancelled because nobody waits for it any more: not worth a warning.
            if failure != .interrupted { Log.warning("listing \(path.isEmpty ? "/" : path) failed: \(error)") }
            throw failure
        }
    }

    /// Makes `folder`'s children exactly `entries` (its own listing) and marks it complete, then
    /// applies again the change batches recorded since `ticket`. Call with the lock held.
    func applyFolderListing(
        _ folder: UInt32, entries: [Metadata], ticket: UInt64, in s: inout State, invalidations invalidated: inout [Invalidation]
    ) {
        guard s.tree.node(folder)?.attached == true else { return }
        // The later occurrence of a key wins; a `deleted` entry takes its key out. Keys are
        // distinct, so the survivors can be applied in any order.
        var latest: [FoldKey: (entry: Metadata, name: NodeName)] = [:]
        latest.reserveCapacity(entries.count)
        for entry in entries {
            if case .deleted = entry {
                if let key = EntryPath(entry)?.key { latest[key] = nil }
                continue
            }
            // The name first: one the kernel cannot carry is hidden (and warned about) whatever
            // its path looks like.
            guard let name = validName(entry, in: &s) else { continue }
            latest[EntryPath(entry)?.key ?? FoldKey(name.string)] = (entry, name)
        }
        var seen = Set<UInt32>()
        seen.reserveCapacity(latest.count)
        for (key, child) in latest {
            if let index = s.tree.upsert(
                parent: folder, key: key, name: child.name, metadata: child.entry, invalidations: &invalidated)
            {
                seen.insert(index)
            }
        }
        s.tree.removeChildren(of: folder, notIn: seen, invalidations: &invalidated)
        s.tree.setComplete(folder, true, at: options.monotonicNow())
        for batch in s.changeReplay.batches(since: ticket) {
            apply(batch, as: .changes, in: &s, invalidations: &invalidated)
        }
    }

    /// Parses an entry's name, logging each name the kernel cannot carry once.
    func validName(_ entry: Metadata, in s: inout State) -> NodeName? {
        switch NodeName.parse(entry.name) {
        case .success(let name):
            return name
        case .failure(let why):
            let key = entry.pathLower ?? entry.name
            if s.hiddenPaths.insert(key).inserted {
                Log.warning("hiding \(Log.quoted(entry.pathDisplay ?? entry.name)): \(why)")
            }
            return nil
        }
    }
}
