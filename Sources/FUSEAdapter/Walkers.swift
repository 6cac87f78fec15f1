// Lean walks. A readdirplus entry hands the kernel a node with its attributes, and the kernel makes
// an inode of each (about 1 KiB of kernel memory, and most of the kernel time of a walk). `find`
// over a big tree, and any walk that matches names only, never looks at a file's attributes: it
// reads the type from the listing. So once a thread has read `after` folders, the files in its
// listings go lean (a name and a type, no node: DirectoryEntry.lean); folders keep their nodes, so
// the walk goes down without a lookup. A thread that then looks a file up (a stat of a lean entry:
// `du`, `ls -l`, `find -size`) gets full listings again from then on, having paid one folder's
// files in lookups. File managers, which stat everything, always get full listings.
//
// The kernel keeps the listings it read (a later `ls` is served without asking), lean ones too. So
// the first lookup of a file in a folder listed lean also drops the kernel's cached listings of
// every folder listed lean so far: whoever reads them next gets them afresh, and full unless it
// walks lean itself. A `du` after a `find` pays one folder's files in lookups, not every file's.
//
// Measured (docs/PERFORMANCE.md, "Lean walks"): a kernel-cold `find` of 1,000,000 entries took
// about half the time, with about half the kernel time in `find`.
//
// The kernel names the calling thread (fuse_req_ctx), so a record is per thread; records idle for
// `memory` seconds are dropped, so a reused thread id starts afresh. `state` (a Mutex) guards the
// records, the folders listed lean and the counts for the status attribute.

import DropboxFS
import Synchronization

final class Walkers: Sendable {
    /// How long a thread's record is kept after its last listing (seconds).
    static let memory: Double = 10
    /// Records beyond this many are pruned of the idle ones.
    static let pruneAbove = 1024

    private struct Walker {
        var folders = 0
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

    /// Folders a thread reads with full listings before its files go lean; 0 never.
    let after: Int
    private let state = Mutex(State())
    private let now: @Sendable () -> Double

    init(after: Int, now: @escaping @Sendable () -> Double = Filesystem.monotonicSeconds) {
        self.after = max(0, after)
        self.now = now
    }

    /// For one readdirplus piece of `folder` for thread `pid` (`firstPiece`: at offset 0, a folder
    /// begun): whether its files go lean. `isFileManager` is asked only when they would.
    func listsLean(pid: Int32, folder: UInt64, firstPiece: Bool, isFileManager: () -> Bool) -> Bool {
        guard after > 0, pid > 0 else { return false }
        let time = now()
        let candidate = state.withLock { s -> Bool in
            var walker = s.walkers[pid].flatMap { time - $0.at < Self.memory ? $0 : nil } ?? Walker(at: time)
            if firstPiece { walker.folders += 1 }
            walker.at = time
            if s.walkers[pid] == nil, s.walkers.count >= Self.pruneAbove {
                s.walkers = s.walkers.filter { time - $0.value.at < Self.memory }
            }
            s.walkers[pid] = walker
            return !walker.wantsAttributes && walker.folders > after
        }
        guard candidate else { return false }
        if isFileManager() {
            wantsAttributes(pid: pid)
            return false
        }
        state.withLock { s in
            s.leanPieces += 1
            s.leanFolders.insert(folder)
        }
        return true
    }

    /// Whether `folder` was listed lean and not dropped yet: a lookup of a file in it then drops
    /// the lean listings before it answers.
    func listedLean(_ folder: UInt64) -> Bool {
        guard after > 0 else { return false }
        return state.withLock { $0.leanFolders.contains(folder) }
    }

    /// Thread `pid` looked up a file in `folder`: its listings carry attributes from now on. When
    /// that folder was listed lean, returns the folders listed lean so far, whose cached listings
    /// the kernel should drop (each is returned once).
    func lookedUpFile(pid: Int32, in folder: UInt64) -> [UInt64] {
        guard after > 0 else {
            state.withLock { $0.fileLookups += 1 }
            return []
        }
        wantsAttributes(pid: pid)
        return state.withLock { s -> [UInt64] in
            s.fileLookups += 1
            guard s.leanFolders.contains(folder) else { return [] }
            defer { s.leanFolders = [] }
            return Array(s.leanFolders)
        }
    }

    private func wantsAttributes(pid: Int32) {
        state.withLock { s in
            guard var walker = s.walkers[pid], !walker.wantsAttributes else { return }
            walker.wantsAttributes = true
            s.walkers[pid] = walker
        }
    }

    /// For the root's status attribute: the listing pieces served lean, and the files looked up.
    var statusFields: String {
        state.withLock { s in "lean_listings=\(s.leanPieces) file_lookups=\(s.fileLookups)" }
    }
}
