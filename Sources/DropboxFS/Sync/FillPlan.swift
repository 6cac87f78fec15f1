// Planning a fill from the sizes of an earlier tree. A fill's length is set by its longest chain of
// pages, and a branch's size is unknown until its listing ends, so a cold fill splits big branches
// only once they show (ParallelFill.swift, BranchSplitter) and then lists again what they had
// listed. A refill is different: after a cursor reset, the weekly relist of a stored tree
// (FilesystemOptions.relistStoredAfter), or a fill started again after a failure, the tree already
// holds the account as it was. Its sizes are a good guess of the branches' sizes now, so the fill
// splits the branches bigger than one listing slot's share before listing them (each split costs
// its folder's own listing, one round trip, and nothing listed twice), and starts the biggest first.
//
// The guess is only a plan: every split folder is listed afresh (after the fill's cursor), and its
// subfolders are taken from that listing, so a subfolder added since is listed too and one removed
// since is not; sizes decide the order and the splits, never what the tree ends as. A cold fill
// sees empty top-level folders (sizes 0) and plans exactly as before.
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
    /// and has subfolders whose listings fit `room`. A split costs its folder's own listing and one
    /// listing per subfolder in place of the branch's one; `room` (the listings and requests the
    /// budget still allows) is reduced by what the chosen splits cost.
    static func splits(
        _ branches: [SizedBranch], total: Int, parallelism: Int, minimum: Int, room: inout Int
    ) -> [UInt32] {
        let share = total / max(1, parallelism)
        var chosen: [UInt32] = []
        for branch in ordered(branches) where branch.entries > max(share, minimum) && branch.subfolders > 0 {
            // Its folder's own listing, and one listing per subfolder in place of the branch's.
            let cost = 1 + (branch.subfolders - 1)
            guard cost <= room else { continue }
            room -= cost
            chosen.append(branch.folder)
        }
        return chosen
    }
}

extension SyncEngine {
    /// The fill's branches, in the order to list them, planned from the tree as it stands (see the
    /// file comment), and how many folders were listed by themselves for the splits. `tops` are the
    /// root's folders, just listed; `room` is what the request budget leaves for splits.
    func planBranches(_ tops: [UInt32], room budgetRoom: Int) async -> (branches: [UInt32], listedAlone: Int) {
        var branches = tree.state.withLock { t in tops.map { sized($0, in: t.tree) } }
        let total = branches.reduce(0) { $0 + $1.entries }
        let minimum = 2 * Int(options.pageLimit)
        var room = budgetRoom
        var listedAlone = 0
        for _ in 0..<FillPlan.maxDepth where !Task.isCancelled {
            let chosen = FillPlan.splits(
                branches, total: total, parallelism: options.fill.parallelism, minimum: minimum, room: &room)
            if chosen.isEmpty { break }
            let described = tree.state.withLock { t in
                branches.filter { chosen.contains($0.folder) }.map { branch in
                    let path = Log.quoted(t.tree.path(of: branch.folder))
                    return "\(path) (\(branch.entries) entries, \(branch.subfolders) subfolders)"
                }.joined(separator: ", ")
            }
            Log.info("planning from the tree's sizes (\(total) entries, room \(room) left): splitting \(described)")
            listedAlone += chosen.count
            let listed = await withTaskGroup(of: UInt32?.self) { group in
                for folder in chosen {
                    group.addTask {
                        do throws(FilesystemError) {
                            try await self.listAloneForFill(folder)
                            return folder
                        } catch {
                            // Gone since (the folder left the tree with its subtree) or failed: it
                            // stays one branch, whose listing settles it.
                            return nil
                        }
                    }
                }
                var listed: Set<UInt32> = []
                for await folder in group { if let folder { listed.insert(folder) } }
                return listed
            }
            branches = tree.state.withLock { t in
                branches.flatMap { branch -> [SizedBranch] in
                    guard listed.contains(branch.folder), t.tree.node(branch.folder)?.attached == true else {
                        return [branch]
                    }
                    let parts = t.tree.children(of: branch.folder).filter { t.tree.nodes[Int($0)].kind == .folder }
                    // The folder's listing may show more subfolders than the plan counted.
                    room -= max(0, parts.count - branch.subfolders)
                    return parts.map { sized($0, in: t.tree) }
                }
            }
            Log.debug("planned from the tree's sizes: \(listed.count) folders split, \(branches.count) branches")
        }
        return (FillPlan.ordered(branches).map(\.folder), listedAlone)
    }

    private func sized(_ folder: UInt32, in tree: MetadataTree) -> SizedBranch {
        let counts = tree.subtreeCounts(of: folder)
        return SizedBranch(folder: folder, entries: counts.entries, subfolders: counts.subfolders)
    }
}
