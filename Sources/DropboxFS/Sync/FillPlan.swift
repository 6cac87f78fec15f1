// Planning a fill from the sizes of an earlier tree. A fill's length is set by its longest chain of
// pages, and a branch's size is unknown until its listing ends, so a cold fill splits big branches
// only once they show (ParallelFill.swift, BranchSplitter) and then lists again what they had
// listed. A refill is different: after a cursor reset, the weekly relist of a stored tree
// (FilesystemOptions.relistStoredAfter), or a fill started again after a failure, the tree already
// holds the account as it was. Its sizes are a good guess of the branches' sizes now, so the fill
// splits the branches bigger than one listing slot's share before listing them (each split costs
// its folder's own listing, one round trip when the folder's own entries fit a page, and nothing
// listed twice), and starts the biggest first.
//
// The guess is only a plan: every split folder is listed afresh (after the fill's cursor), and its
// subfolders are taken from that listing, so a subfolder added since is listed too and one removed
// since is not; sizes decide the order and the splits, never what the tree ends as. When that
// listing shows more subfolders than the request budget can take, the folder stays one branch. A
// cold fill sees empty top-level folders (or nearly: a request may have listed one) and splits
// nothing.
//
// Locking: the sizes are counted under the tree's lock, one branch at a time (a walk of that
// subtree); nothing here holds a lock across an await.

import DropboxAPI
import Log

/// A branch of a fill with what an earlier tree held below it (0 when the tree does not know).
struct SizedBranch: Equatable {
    var folder: UInt32
    /// Entries below the folder.
    var entries: Int
    /// Its children that are folders: the listings a split would replace it with.
    var subfolders: Int
    /// All its children: what its own listing, the first step of a split, has to fetch.
    var children: Int
}

/// What a fill's request budget leaves for planned splits: recursive listings (`maxListings`) and
/// requests beyond the data's pages (the budget of ParallelFill.swift, which counts each listing's
/// partial last page and each folder listed by itself).
struct PlanRoom: Equatable {
    var listings: Int
    var requests: Int

    /// Whether a split that replaces one listing by `subfolders` (after its folder's own listing,
    /// or with it already paid) fits; takes its cost if so.
    mutating func take(subfolders: Int, ownListing: Bool) -> Bool {
        let listings = subfolders - 1
        let requests = listings + (ownListing ? 1 : 0)
        guard listings <= self.listings, requests <= self.requests else { return false }
        self.listings -= listings
        self.requests -= requests
        return true
    }
}

/// The pure part of the plan (no I/O, no locks), so it is tested on its own.
enum FillPlan {
    /// Levels of splits planned before the branches start (each costs one round trip first).
    static let maxDepth = 3

    /// Biggest first, so the longest chains start first; branches of the same size keep their order.
    static func ordered(_ branches: [SizedBranch]) -> [SizedBranch] {
        branches.enumerated().sorted { a, b in
            a.element.entries != b.element.entries ? a.element.entries > b.element.entries : a.offset < b.offset
        }.map(\.element)
    }

    /// The branches to split before listing, biggest first: each holds more than one listing slot's
    /// share of `total` and more than `minimum` entries (a branch of a page or two gains nothing),
    /// its own entries fit one page (`pageLimit`: listing them is one round trip before the parts
    /// can start, not a chain while every slot waits), and it has subfolders whose listings fit
    /// `room`, which is reduced by what the chosen splits cost.
    static func splits(
        _ branches: [SizedBranch], total: Int, parallelism: Int, minimum: Int, pageLimit: Int, room: inout PlanRoom
    ) -> [UInt32] {
        let share = total / max(1, parallelism)
        var chosen: [UInt32] = []
        for branch in ordered(branches)
        where branch.entries > max(share, minimum) && branch.subfolders > 0 && branch.children <= pageLimit {
            guard room.take(subfolders: branch.subfolders, ownListing: true) else { continue }
            chosen.append(branch.folder)
        }
        return chosen
    }
}

extension SyncEngine {
    /// The fill's branches, in the order to list them, planned from the tree as it stands (see the
    /// file comment), and how many folders were listed by themselves for the splits. `tops` are the
    /// root's folders, just listed; `room` is what the request budget leaves for splits.
    func planBranches(_ tops: [FolderRef], room budgetRoom: PlanRoom) async -> (branches: [FolderRef], listedAlone: Int) {
        // The plan works on indices; each is kept with its generation, checked after the waits.
        var refs = Dictionary(tops.map { ($0.index, $0) }, uniquingKeysWith: { a, _ in a })
        var branches = tops.map { sized($0.index) }
        let total = branches.reduce(0) { $0 + $1.entries }
        let minimum = 2 * Int(options.pageLimit)
        var room = budgetRoom
        var listedAlone = 0
        for _ in 0..<FillPlan.maxDepth where !Task.isCancelled {
            let chosen = FillPlan.splits(
                branches, total: total, parallelism: options.fill.parallelism, minimum: minimum,
                pageLimit: Int(options.pageLimit), room: &room)
            if chosen.isEmpty { break }
            let described = branches.filter { chosen.contains($0.folder) }.map { branch in
                let path = Log.quoted(tree.path(of: branch.folder))
                return "\(path) (\(branch.entries) entries, \(branch.subfolders) subfolders)"
            }.joined(separator: ", ")
            Log.info("planning from the tree's sizes (\(total) entries): splitting \(described)")
            listedAlone += chosen.count
            let listed = await listAloneForPlan(chosen.compactMap { refs[$0] })
            // The parts of each split folder, from its fresh listing.
            let parts = tree.subfolders(ofEach: listed).mapValues { subfolders in
                for part in subfolders { refs[part.index] = part }
                return subfolders.map(\.index)
            }
            branches = branches.flatMap { branch -> [SizedBranch] in
                guard chosen.contains(branch.folder) else { return [branch] }
                // A folder whose listing failed (or that is gone: it is skipped when the listings
                // are registered) stays one branch and is not tried again.
                var kept = branch
                kept.subfolders = 0
                // What the choice took for the parts is given back and the parts the fresh listing
                // shows are weighed instead (the folder's own listing is spent either way): too
                // many for the budget, and the folder stays one branch.
                room.listings += branch.subfolders - 1
                room.requests += branch.subfolders - 1
                guard let parts = parts[branch.folder], !parts.isEmpty,
                    room.take(subfolders: parts.count, ownListing: false)
                else { return [kept] }
                return parts.map(sized)
            }
        }
        return (FillPlan.ordered(branches).compactMap { refs[$0.folder] }, listedAlone)
    }

    /// Lists each of `folders` by itself, at once; returns those whose listing was applied.
    private func listAloneForPlan(_ folders: [FolderRef]) async -> Set<FolderRef> {
        await withTaskGroup(of: FolderRef?.self) { group in
            for folder in folders {
                group.addTask {
                    do throws(FilesystemError) {
                        try await self.listAloneForFill(folder)
                        return folder
                    } catch {
                        return nil
                    }
                }
            }
            var listed: Set<FolderRef> = []
            for await folder in group { if let folder { listed.insert(folder) } }
            return listed
        }
    }

    /// The sizes of one branch, counted under the tree's lock (held for this branch only).
    private func sized(_ folder: UInt32) -> SizedBranch {
        let counts = tree.subtreeCounts(of: folder)
        return SizedBranch(folder: folder, entries: counts.entries, subfolders: counts.subfolders, children: counts.children)
    }
}
