// Lean walks. A readdirplus entry hands the kernel a node with its attributes, and the kernel makes
// an inode of each (about 1.2 KiB of kernel slab, and most of the kernel time of a walk). `find`
// over a big tree, and any walk that matches names only, never looks at a file's attributes: it
// reads the type from the listing. So once a thread has been handed `after` entries in full, the
// files in its listings go lean (a name and a type, no node: DirectoryEntry.lean); folders keep
// their nodes, so the walk goes down without a lookup. A thread that then looks a file up (a stat
// of a lean entry: `du`, `ls -l`, `find -size`) gets full listings again from then on, having paid
// one folder's files in lookups. File managers, which stat everything, always get full listings.
//
// Why a count of entries, not of folders: the trade is the kernel's memory and a later stat walk
// against the walk's own time. A walk left in full leaves every inode behind, so a `du` after a
// `find` asks nothing (within 1.5x of tmpfs at 100,000 entries); a walk gone lean halves a
// 1,000,000-entry `find` but makes the `du` after it list everything again (3.5x to 6.5x tmpfs
// at 100,000 entries). So walks up to `after` entries (200,000 by default: about 235 MiB of
// reclaimable kernel slab at most, as a local disk's walk leaves) stay full, and only the part of
// a bigger walk beyond that goes lean. The pieces of one folder go alike: the decision is made at
// its first piece.
//
// The kernel keeps the listings it read (a later `ls` is served without asking), lean ones too. So
// the first lookup of a file in a folder listed lean also drops the kernel's cached listings of
// every folder listed lean so far: whoever reads them next gets them afresh, and full unless it
// walks lean itself. A `du` after a `find` pays one folder's files in lookups, not every file's.
//
// Measured (docs/JOURNAL.md, "Lean walks"): a kernel-cold `find` of 1,000,000 entries takes
// half the time, with a third of `find`'s kernel time, and leaves a tenth of the kernel slab behind.
//
// The kernel names the calling thread (fuse_req_ctx), so a record is per thread; records idle for
// `memory` seconds are dropped, so a reused thread id starts afresh. `state` (a Mutex) guards the
// records, the folders listed lean and the counts for the status attribute.

import Synchronization
import SystemCalls

final class Walkers: Sendable {
    /// How long a thread's record is kept after its last listing or file lookup (seconds).
    static let memory: Double = 10
    /// Records beyond this many are pruned of the idle ones.
    static let pruneAbove = 1024
    /// The longest a lookup waits for the kernel to drop the cached lean listings (seconds): a
    /// drop after a walk of 100,000 folders is that many kernel calls, and the lookup need not wait
    /// for the last of them.
    static let dropWait: Double = 0.2

    private struct Walker {
        /// Entries handed to it so far, in full or lean.
        var entries = 0
        /// The folder whose pieces it reads, and whether they go lean (decided at its first piece).
        var folder: UInt64 = 0
        var folderLean = false
        /// It looked a file up (or is a file manager): its listings stay full.
        var wantsAttributes = false
        var at: Double
    }

    private struct State {
        var walkers: [Int32: Walker] = [:]
        var leanPieces: UInt64 = 0
        /// Files looked up (by anyone): what lean listings cost later, when a file is stat'ed.
        var fileLookups: UInt64 = 0
        /// Folders (inodes) listed lean since the kernel was last told to drop them.
        var leanFolders = Set<UInt64>()
    }

    /// Entries a thread is handed in full before its files go lean; 0 never.
    let after: Int
    private let state = Mutex(State())
    private let now: @Sendable () -> Double

    init(after: Int, now: @escaping @Sendable () -> Double = SystemClock.monotonicSeconds) {
        self.after = max(0, after)
        self.now = now
    }

    /// For one readdirplus piece of `folder` for thread `pid` (`firstPiece`: at offset 0, a folder
    /// begun): whether its files go lean. `isFileManager` is asked only when they would. The
    /// entries of the piece are counted by `handed` once it is filled.
    func listsLean(pid: Int32, folder: UInt64, firstPiece: Bool, isFileManager: () -> Bool) -> Bool {
        guard after > 0, pid > 0 else { return false }
        let time = now()
        let candidate = state.withLock { s -> Bool in
            Self.update(pid, at: time, in: &s) { walker in
                if firstPiece || walker.folder != folder {
                    walker.folder = folder
                    walker.folderLean = walker.entries >= after
                }
                return !walker.wantsAttributes && walker.folderLean
            }
        }
        guard candidate else { return false }
        if isFileManager() {
            state.withLock { s in Self.update(pid, at: time, in: &s) { $0.wantsAttributes = true } }
            return false
        }
        state.withLock { s in
            s.leanPieces += 1
            s.leanFolders.insert(folder)
        }
        return true
    }

    /// Thread `pid` was handed `count` entries of a listing piece (full or lean).
    func handed(pid: Int32, entries count: Int) {
        guard after > 0, pid > 0, count > 0 else { return }
        let time = now()
        state.withLock { s in Self.update(pid, at: time, in: &s) { $0.entries += count } }
    }

    /// Whether `folder` was listed lean and its cached listing not dropped yet: a lookup of a file
    /// in it then drops the lean listings before it answers.
    func listedLean(_ folder: UInt64) -> Bool {
        guard after > 0 else { return false }
        return state.withLock { $0.leanFolders.contains(folder) }
    }

    /// Thread `pid` looked up a file in `folder`: its listings carry attributes from now on (a
    /// thread not seen yet, e.g. one whose listings the kernel served from its cache, included).
    /// When that folder was listed lean, returns the folders listed lean so far, whose cached
    /// listings the kernel should drop (each is returned once).
    func lookedUpFile(pid: Int32, in folder: UInt64) -> [UInt64] {
        guard after > 0 else {
            state.withLock { $0.fileLookups += 1 }
            return []
        }
        let time = now()
        return state.withLock { s -> [UInt64] in
            s.fileLookups += 1
            if pid > 0 { Self.update(pid, at: time, in: &s) { $0.wantsAttributes = true } }
            guard s.leanFolders.contains(folder) else { return [] }
            defer { s.leanFolders = [] }
            return Array(s.leanFolders)
        }
    }

    /// The kernel forgot these inodes: a forgotten folder has no cached listing left to drop.
    func forgot<Inodes: Sequence<UInt64>>(_ inodes: Inodes) {
        guard after > 0 else { return }
        state.withLock { s in
            guard !s.leanFolders.isEmpty else { return }
            for inode in inodes { s.leanFolders.remove(inode) }
        }
    }

    /// Changes thread `pid`'s record (a fresh one when it has none or it is idle past `memory`),
    /// which counts as used at `time`; prunes idle records before adding one past `pruneAbove`.
    private static func update<T>(_ pid: Int32, at time: Double, in s: inout State, _ change: (inout Walker) -> T) -> T {
        var walker = s.walkers[pid].flatMap { time - $0.at < memory ? $0 : nil } ?? Walker(at: time)
        let result = change(&walker)
        walker.at = time
        if s.walkers[pid] == nil, s.walkers.count >= pruneAbove {
            s.walkers = s.walkers.filter { time - $0.value.at < memory }
        }
        s.walkers[pid] = walker
        return result
    }

    /// For the root's status attribute: the listing pieces served lean, and the files looked up.
    var statusFields: String {
        state.withLock { s in "lean_listings=\(s.leanPieces) file_lookups=\(s.fileLookups)" }
    }
}
