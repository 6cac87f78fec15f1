// Folder listings without handles: "." and ".." then the children sorted by name bytes, served by
// offset cookies from the current tree. A listing read in pieces while the folder changes neither
// repeats nor skips an unchanged entry; readdirplus counts one kernel lookup per accepted child; a
// folder's mtime nanoseconds move with every change of its entries (the kernel's cue to drop a
// cached listing).

import DropboxAPI
import DropboxTestSupport
import Testing

@testable import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

#if canImport(Glibc)
    import Glibc
#endif

extension CoreTests {
    @Suite struct DirectoryTests {
        static let unsorted = ["b", "B", "a", "Z", "_x", " space", "~tilde", "\u{E9}t\u{E9}", "z\u{301}", "10", "9", ".dot"]

        @Test func dotEntriesFirstThenChildrenSortedByNameBytes() async throws {
            let fake = InMemoryDropbox()
            for name in Self.unsorted where name != "B" { fake.addFile("/s/\(name)", size: 1) }
            fake.addFolder("/s/B-folder")
            let fs = Filesystem(client: fake, options: options(pageLimit: 5))
            let s = try await resolve(fs, "/s")
            #expect(!(try fs.isDirectoryReady(s.inode)))
            try await fs.prepareDirectory(s.inode)
            #expect(try fs.isDirectoryReady(s.inode))
            let entries = try fs.directoryEntries(s.inode, from: 0)

            let expected = (Self.unsorted.filter { $0 != "B" } + ["B-folder"]).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            #expect(entries.map(\.name) == [".", ".."] + expected)
            #expect(entries.map { Array($0.name.utf8) } == ([".", ".."] + expected).map { Array($0.utf8) })
            #expect(entries[0].attributes == (try fs.attributes(of: s.inode)))
            #expect(entries[1].attributes == (try fs.attributes(of: Filesystem.rootInode)))
            for entry in entries.dropFirst(2) {
                #expect(try fs.attributes(of: entry.attributes.inode) == entry.attributes)
            }
            #expect(entries.first { $0.name == "B-folder" }?.attributes.kind == .folder)
        }

        @Test func theRootsParentIsTheRoot() async throws {
            let fs = Filesystem(client: InMemoryDropbox(), options: options())
            try await fs.prepareDirectory(Filesystem.rootInode)
            let entries = try fs.directoryEntries(Filesystem.rootInode, from: 0)
            #expect(entries.map(\.name) == [".", ".."])
            #expect(entries.allSatisfy { $0.attributes.inode == Filesystem.rootInode })
        }

        /// Every offset handed out continues right after its entry; the dots are 1 and 2.
        @Test func eachOffsetContinuesAfterItsEntry() async throws {
            let fake = InMemoryDropbox()
            for name in ["a", "b", "c", "d"] { fake.addFile("/\(name)", size: 1) }
            let fs = Filesystem(client: fake, options: options())
            try await fs.prepareDirectory(Filesystem.rootInode)
            var offsets: [UInt64] = []
            try fs.readDirectory(Filesystem.rootInode, from: 0, countingLookups: false) { _, next in
                offsets.append(next)
                return true
            }
            #expect(offsets.count == 6)
            #expect(offsets.prefix(2) == [1, 2])
            #expect(Set(offsets).count == 6, "offsets are distinct")
            let all = [".", "..", "a", "b", "c", "d"]
            #expect(try fs.directoryEntries(Filesystem.rootInode, from: 0).map(\.name) == all)
            for (i, offset) in offsets.enumerated() {
                let rest = try fs.directoryEntries(Filesystem.rootInode, from: offset).map(\.name)
                #expect(rest == Array(all.dropFirst(i + 1)), "after \(all[i])")
            }
        }

        /// Offsets the core never handed out (a program's seekdir) give some suffix of the
        /// listing, never a crash or an entry twice.
        @Test func unknownOffsetsGiveASuffixOfTheListing() async throws {
            let fake = InMemoryDropbox()
            for name in ["a", "b", "c"] { fake.addFile("/\(name)", size: 1) }
            fake.addFile("/other/x", size: 1)
            let fs = Filesystem(client: fake, options: options())
            try await fs.prepareDirectory(Filesystem.rootInode)
            let all = try fs.directoryEntries(Filesystem.rootInode, from: 0).map(\.name)
            let other = try await inode(fs, "/other")
            try await fs.prepareDirectory(other)
            let foreign = try fs.directoryPiece(other, from: 2, count: 1).next  // a cookie of another folder
            for offset: UInt64 in [3, 4, 5, 99, 1 << 32 | 4, UInt64(Int64.max), UInt64.max, foreign, 7 << 32 | 3] {
                let rest = try fs.directoryEntries(Filesystem.rootInode, from: offset).map(\.name)
                #expect(rest == Array(all.suffix(rest.count)), "offset \(offset)")
            }
        }

        /// A root of b, d, f, h (listings expire after 10 s) and the first piece the kernel read
        /// of it: ".", "..", "b", "d".
        static func firstPieceOfFour(
            plus: Bool
        ) async throws -> (InMemoryDropbox, ManualClock, Filesystem, (names: [String], next: UInt64)) {
            let fake = InMemoryDropbox()
            for name in ["b", "d", "f", "h"] { fake.addFile("/\(name)", size: 1) }
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            try await fs.prepareDirectory(Filesystem.rootInode)
            let first = try fs.directoryPiece(Filesystem.rootInode, from: 0, count: 4, plus: plus)
            #expect(first.names == [".", "..", "b", "d"])
            return (fake, clock, fs, first)
        }

        /// The kernel reads a folder in pieces; a change between two pieces must not repeat or
        /// drop the entries that did not change (the next piece resumes after the previous
        /// entry's name, not its position).
        @Test(arguments: [false, true])
        func aListingReadWhileTheFolderChangesKeepsUnchangedEntries(plus: Bool) async throws {
            let (fake, clock, fs, first) = try await Self.firstPieceOfFour(plus: plus)

            fake.addFile("/a", size: 1)  // sorts before the piece's end
            fake.addFile("/c", size: 1)
            fake.delete("/f")  // not read yet
            fake.addFile("/g", size: 1)  // after the piece's end
            clock.advance(by: 11)
            try await fs.prepareDirectory(Filesystem.rootInode)
            let rest = try fs.directoryEntries(Filesystem.rootInode, from: first.next).map(\.name)
            #expect(rest == ["g", "h"])
        }

        /// The entry a piece ended with is removed before the next piece: readdirplus made the
        /// kernel hold it, so its name still places the next piece; after a plain readdir it is
        /// released, and the entry now at its position comes next.
        @Test(arguments: [false, true])
        func aListingContinuesAfterARemovedLastEntry(plus: Bool) async throws {
            let (fake, clock, fs, first) = try await Self.firstPieceOfFour(plus: plus)

            fake.delete("/d")
            clock.advance(by: 11)
            try await fs.prepareDirectory(Filesystem.rootInode)
            #expect(try fs.directoryEntries(Filesystem.rootInode, from: first.next).map(\.name) == ["f", "h"])
        }

        @Test func readdirplusCountsALookupOnlyForAcceptedChildEntries() async throws {
            let fake = InMemoryDropbox()
            for name in ["a", "b", "c", "d"] { fake.addFile("/s/\(name)", size: 1) }
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            try await fs.prepareDirectory(Filesystem.rootInode)
            let s = try #require(try fs.directoryEntries(Filesystem.rootInode, from: 2).first).attributes  // no lookup

            try await fs.prepareDirectory(s.inode)
            var offered: [String] = []
            var resumeAt: UInt64 = 0
            // Accept ".", "..", "a", "b"; refuse "c" (the kernel's buffer is full).
            try fs.directoryEntriesPlus(s.inode, from: 0) { entry, next in
                offered.append(entry.name)
                guard entry.name != "c" else { return false }
                resumeAt = next
                return true
            }
            #expect(offered == [".", "..", "a", "b", "c"])
            // The kernel resumes after "b" and takes the rest.
            var resumed: [String] = []
            try fs.directoryEntriesPlus(s.inode, from: resumeAt) { entry, _ in
                resumed.append(entry.name)
                return true
            }
            #expect(resumed == ["c", "d"])
            let inodes = Dictionary(
                uniqueKeysWithValues: try fs.directoryEntries(s.inode, from: 2).map { ($0.name, $0.attributes.inode) })

            // Delete everything remotely and relist: held nodes stay, unheld ones go.
            fake.delete("/s")
            clock.advance(by: 11)
            #expect(try await names(fs, Filesystem.rootInode) == [])
            #expect(throws: FilesystemError.stale, "\".\" is not a kernel reference") { try fs.attributes(of: s.inode) }
            for name in ["a", "b", "c", "d"] {
                let inode = try #require(inodes[name])
                #expect(try fs.attributes(of: inode).size == 1, "\(name) is held once")
                fs.forget(inode, count: 1)
                #expect(throws: FilesystemError.stale) { try fs.attributes(of: inode) }
            }
        }

        /// Lean files (for a walk that needs names and types only) carry their attributes for the
        /// adapter to pack, but count no kernel lookup; folders still count one.
        @Test func leanFilesCountNoLookup() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/s/a", size: 1)
            fake.addFile("/s/b", size: 2)
            fake.addFolder("/s/f")
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            let s = try await resolve(fs, "/s")
            try await fs.prepareDirectory(s.inode)
            var entries: [DirectoryEntry] = []
            try fs.readDirectory(s.inode, from: 0, countingLookups: true, leanFiles: true) { entry, _ in
                entries.append(entry)
                return true
            }
            #expect(entries.map(\.name) == [".", "..", "a", "b", "f"])
            #expect(entries.map(\.lean) == [false, false, true, true, false])
            #expect(entries.map(\.attributes.kind) == [.folder, .folder, .file, .file, .folder])
            #expect(entries[3].attributes.size == 2)
            let inodes = Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0.attributes.inode) })

            // Remove them remotely and relist: only the folder is held by the kernel.
            for name in ["a", "b", "f"] { fake.delete("/s/\(name)") }
            clock.advance(by: 11)
            #expect(try await names(fs, s.inode) == [])
            #expect(try fs.attributes(of: try #require(inodes["f"])).kind == .folder, "held once")
            for name in ["a", "b"] {
                #expect(throws: FilesystemError.stale, "\(name) was never handed over") {
                    try fs.attributes(of: try #require(inodes[name]))
                }
            }
        }

        /// A folder removed remotely while the kernel holds it lists as empty, at once.
        @Test func aRemovedFolderTheKernelHoldsListsAsEmpty() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/d/x", size: 1)
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            let d = try await fs.lookup(parent: Filesystem.rootInode, name: "d").inode  // held
            #expect(try await names(fs, d) == ["x"])
            fake.delete("/d")
            clock.advance(by: 11)
            #expect(try await names(fs, Filesystem.rootInode) == [])
            #expect(try fs.isDirectoryReady(d))
            #expect(try fs.directoryEntries(d, from: 0).map(\.name) == [".", ".."])
        }

        @Test func isDirectoryReadyOnlyWhenFresh() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/d/x", size: 1)
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            let d = try await inode(fs, "/d")
            #expect(!(try fs.isDirectoryReady(d)))
            #expect(!(try fs.isDirectoryReady(d, expiredIsReady: true)), "a later piece of a never-listed folder waits too")
            try await fs.prepareDirectory(d)
            #expect(try fs.isDirectoryReady(d))
            #expect(try fs.directoryEntries(d, from: 2).map(\.name) == ["x"])
            clock.advance(by: 11)
            #expect(!(try fs.isDirectoryReady(d)))
            #expect(try fs.isDirectoryReady(d, expiredIsReady: true), "a listing is not relisted halfway")
            #expect(fake.callCount(.listFolder) == 2)
            #expect(fs.listingsExpire)
            #expect(!Filesystem(client: fake, options: options()).listingsExpire)
        }

        /// As for lookups, a piece is answered now from a listed folder and later when the folder
        /// must be listed first (a later piece of an expired listing is still answered now); the
        /// later answer lists, then serves. Without thumbnails the file-manager question is never
        /// asked. opendir follows the same rule.
        @Test func piecesAnsweredNowAndPiecesAnsweredLater() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/d/x", size: 1)
            let clock = ManualClock()
            var settings = options(folderListingTTL: 10, clock: clock)
            settings.processName = { _ in
                Issue.record("the file-manager question is only asked while thumbnails are written")
                return nil
            }
            let fs = Filesystem(client: fake, options: settings)
            let d = try await inode(fs, "/d")
            let caller = Caller(pid: getpid(), uid: getuid())
            #expect(fs.readDirectory(d, from: 0, countingLookups: false, caller: caller, into: EntryNames()).isLater)
            #expect(fs.openDirectory(d, caller: caller).isLater)
            let listing = fs.readDirectory(d, from: 0, countingLookups: false, caller: caller, into: EntryNames())
            let listed = try await listing.value
            #expect(listed.names == [".", "..", "x"])
            let opened = try #require(try fs.openDirectory(d, caller: caller).now())
            #expect(opened.cacheListing)
            clock.advance(by: 11)
            let later = try fs.readDirectory(d, from: 2, countingLookups: false, caller: caller, into: EntryNames())
                .now()
            #expect(later?.names == ["x"], "a later piece is served from the expired listing")
            #expect(fs.readDirectory(d, from: 0, countingLookups: false, caller: caller, into: EntryNames()).isLater)
            let reopened = try await fs.openDirectory(d, caller: caller).value
            #expect(reopened.cacheListing && reopened.keepCachedListing, "relisted, nothing new: the cached listing is current")
            #expect(fake.callCount(.listFolder) == 3, "the root, /d, and /d again once expired")
        }

        /// The kernel drops a cached listing when the folder's mtime moved since the listing was
        /// cached: every change of the entries moves the nanoseconds (a new revision of a file is
        /// a new inode, so its entry changes too); a relisting that finds nothing new does not.
        @Test func aFoldersMtimeNanosecondsMoveWithItsEntries() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/d/x", size: 1)
            fake.addFile("/d/y", size: 1)
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            let d = try await inode(fs, "/d")
            #expect(try await names(fs, d) == ["x", "y"])
            let x = try await fs.lookup(parent: d, name: "x")
            #expect(x.timeNanoseconds == 0)
            var before = try fs.attributes(of: d)
            #expect(before.mtime == CoreTests.folderTime)

            var stamps: Set<UInt32> = [before.timeNanoseconds]
            for change in ["relist", "add", "modify", "delete", "rename"] {
                switch change {
                case "add": fake.addFile("/d/z", size: 1)
                case "modify": fake.addFile("/d/x", size: 2)
                case "delete": fake.delete("/d/y")
                case "rename": fake.move(from: "/d/z", to: "/d/Z")
                default: break
                }
                clock.advance(by: 11)
                _ = try await names(fs, d)
                let after = try fs.attributes(of: d)
                #expect(after.mtime == CoreTests.folderTime, "seconds stay the folder time")
                if change == "relist" {
                    #expect(after == before, "\(change): the entries did not change")
                } else {
                    #expect(stamps.insert(after.timeNanoseconds).inserted, "\(change) moves the nanoseconds")
                }
                before = after
            }
            #expect(try await names(fs, d) == ["Z", "x"])
        }

        /// opendir (kept where listings expire) lets the kernel keep its cached listing only
        /// when the listing it was last handed is the current one.
        @Test func theKernelKeepsAListingOnlyWhileItIsCurrent() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/a", size: 1)
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            try await fs.prepareDirectory(Filesystem.rootInode)
            #expect(!fs.kernelMayKeepListing(Filesystem.rootInode), "nothing was handed out yet")
            #expect(fs.kernelMayKeepListing(Filesystem.rootInode))
            fake.addFile("/b", size: 1)
            clock.advance(by: 11)
            try await fs.prepareDirectory(Filesystem.rootInode)
            #expect(!fs.kernelMayKeepListing(Filesystem.rootInode))
            #expect(fs.kernelMayKeepListing(Filesystem.rootInode))
            #expect(!fs.kernelMayKeepListing(999))
        }
    }
}
