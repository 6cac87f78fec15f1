// Lean walks: which threads get their files' names and types only (Walkers.swift). A thread's
// first `after` entries are full; then its files go lean until it looks a file up; a file manager
// is never lean; the folders listed lean are handed back once, for the kernel to drop them.

import Synchronization
import Testing

@testable import DropboxFS

@Suite struct WalkersTests {
    /// A clock the test moves by hand.
    final class Clock: Sendable {
        private let value = Mutex<Double>(100)
        var now: Double { value.withLock { $0 } }
        func advance(_ seconds: Double) { value.withLock { $0 += seconds } }
    }

    static func notFileManager() -> Bool { false }

    /// Reads `count` folders (inodes from `first`) as a walker does: the first piece of each with
    /// `entries` entries, then a second, empty one. Returns whether each first piece went lean.
    static func walk(
        _ walkers: Walkers, pid: Int32, folders count: Int, first: UInt64 = 100, entries: Int = 1
    ) -> [Bool] {
        (0..<count).map { i in
            let lean = walkers.listsLean(pid: pid, folder: first + UInt64(i), firstPiece: true, isFileManager: notFileManager)
            walkers.handed(pid: pid, entries: entries)
            let again = walkers.listsLean(pid: pid, folder: first + UInt64(i), firstPiece: false, isFileManager: notFileManager)
            #expect(lean == again, "the pieces of one folder go alike")
            return lean
        }
    }

    @Test func aThreadsFilesGoLeanAfterItsFirstFolders() {
        let walkers = Walkers(after: 3)
        #expect(Self.walk(walkers, pid: 7, folders: 6) == [false, false, false, true, true, true])
        #expect(walkers.statusFields == "lean_listings=6 file_lookups=0", "two pieces of each of three folders")
        #expect(Self.walk(walkers, pid: 8, folders: 4) == [false, false, false, true], "each thread counts its own")
    }

    @Test func entriesAreCountedNotFolders() {
        let walkers = Walkers(after: 100)
        // Two big folders reach the count; small ones would need a hundred.
        #expect(Self.walk(walkers, pid: 7, folders: 3, entries: 60) == [false, false, true])
        #expect(Self.walk(walkers, pid: 8, folders: 99) == Array(repeating: false, count: 99))
        #expect(Self.walk(walkers, pid: 8, folders: 2, first: 500) == [false, true])
    }

    @Test func theCountPassedWithinAFolderTakesEffectAtTheNext() {
        let walkers = Walkers(after: 10)
        // A folder of 25 entries in three pieces: all full, although the count passed 10 in it.
        var pieces: [Bool] = []
        for (index, count) in [10, 10, 5].enumerated() {
            pieces.append(walkers.listsLean(pid: 7, folder: 1, firstPiece: index == 0, isFileManager: Self.notFileManager))
            walkers.handed(pid: 7, entries: count)
        }
        #expect(pieces == [false, false, false])
        #expect(Self.walk(walkers, pid: 7, folders: 1, first: 2) == [true])
        // A later piece of a folder the walker has left (a seek back) is decided anew.
        #expect(walkers.listsLean(pid: 7, folder: 1, firstPiece: false, isFileManager: Self.notFileManager))
    }

    @Test func offWithZeroOrNoCaller() {
        for walkers in [Walkers(after: 0), Walkers(after: -1)] {
            #expect(Self.walk(walkers, pid: 7, folders: 100).allSatisfy { !$0 })
            #expect(walkers.lookedUpFile(pid: 7, in: 100).isEmpty)
            #expect(!walkers.listedLean(100))
            #expect(walkers.statusFields == "lean_listings=0 file_lookups=1", "file lookups are counted all the same")
        }
        #expect(Self.walk(Walkers(after: 1), pid: 0, folders: 5).allSatisfy { !$0 }, "no caller (the kernel itself)")
    }

    @Test func aFileLookedUpBringsFullListingsBack() {
        let walkers = Walkers(after: 1)
        #expect(Self.walk(walkers, pid: 7, folders: 3) == [false, true, true])
        // A file in a folder listed full (101 was lean, 100 was not) hands nothing back...
        #expect(walkers.lookedUpFile(pid: 7, in: 100).isEmpty)
        // ... but the thread wants attributes now: full listings from here on.
        #expect(Self.walk(walkers, pid: 7, folders: 3, first: 200) == [false, false, false])
        // Another thread that walks lean is not affected.
        #expect(Self.walk(walkers, pid: 9, folders: 2, first: 300) == [false, true])
    }

    @Test func theFoldersListedLeanAreHandedBackOnceForTheKernelToDrop() {
        let walkers = Walkers(after: 1)
        _ = Self.walk(walkers, pid: 7, folders: 4)  // 101, 102 and 103 lean
        #expect(!walkers.listedLean(100) && walkers.listedLean(102))
        // A stat of a lean file by another thread (`du` after `find`).
        #expect(Set(walkers.lookedUpFile(pid: 8, in: 102)) == [101, 102, 103])
        #expect(!walkers.listedLean(102), "dropped")
        #expect(walkers.lookedUpFile(pid: 8, in: 103).isEmpty, "each folder is handed back once")
        // The walker goes on lean; its new folders are tracked afresh.
        #expect(Self.walk(walkers, pid: 7, folders: 1, first: 500) == [true])
        #expect(walkers.lookedUpFile(pid: 7, in: 500) == [500])
    }

    @Test func aThreadFirstSeenLookingUpAFileGetsFullListings() {
        // `du` after `find`: its first folders come from the kernel's cache, its first request is a
        // lookup of a lean file.
        let walkers = Walkers(after: 1)
        _ = Self.walk(walkers, pid: 7, folders: 3)
        #expect(Set(walkers.lookedUpFile(pid: 8, in: 101)) == [101, 102])
        #expect(Self.walk(walkers, pid: 8, folders: 4, first: 200).allSatisfy { !$0 })
    }

    @Test func forgottenFoldersNeedNoDrop() {
        let walkers = Walkers(after: 1)
        _ = Self.walk(walkers, pid: 7, folders: 4)  // 101, 102 and 103 lean
        walkers.forgot([101, 103, 999])
        #expect(!walkers.listedLean(101) && walkers.listedLean(102))
        #expect(walkers.lookedUpFile(pid: 8, in: 102) == [102])
    }

    @Test func fileManagersNeverGoLeanAndAreAskedOnce() {
        let walkers = Walkers(after: 1)
        let asked = Mutex(0)
        let fileManager = { asked.withLock { $0 += 1 }; return true }
        var lean: [Bool] = []
        for folder in UInt64(1)...5 {
            lean.append(walkers.listsLean(pid: 7, folder: folder, firstPiece: true, isFileManager: fileManager))
            walkers.handed(pid: 7, entries: 1)
        }
        #expect(lean == [false, false, false, false, false])
        #expect(asked.withLock { $0 } == 1, "asked only once its files would have gone lean")
        #expect(walkers.statusFields == "lean_listings=0 file_lookups=0")
    }

    @Test func anIdleThreadsRecordIsForgotten() {
        let clock = Clock()
        let walkers = Walkers(after: 2, now: { clock.now })
        #expect(Self.walk(walkers, pid: 7, folders: 3) == [false, false, true])
        _ = walkers.lookedUpFile(pid: 7, in: 1)
        clock.advance(Walkers.memory + 1)
        // Thread id 7 now belongs to another program (or the same one, started again).
        #expect(Self.walk(walkers, pid: 7, folders: 3) == [false, false, true])
    }

    @Test func recordsArePrunedOfIdleThreads() {
        let clock = Clock()
        let walkers = Walkers(after: 1, now: { clock.now })
        for pid in 1...Int32(Walkers.pruneAbove) { _ = Self.walk(walkers, pid: pid, folders: 1) }
        clock.advance(Walkers.memory + 1)
        // The next new thread prunes the idle ones; a thread walking again starts afresh.
        _ = Self.walk(walkers, pid: 5000, folders: 1)
        #expect(Self.walk(walkers, pid: 1, folders: 2) == [false, true])
    }
}
