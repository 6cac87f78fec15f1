// Folder handles: opendir snapshots "." and ".." then the children sorted by name bytes; readdir
// serves the snapshot by offset however the tree changes; readdirplus counts one kernel lookup per
// child entry it accepted and skips entries whose node was released since opendir.

import DropboxAPI
import DropboxTestSupport
import Testing

@testable import DropboxFS

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
            let handle = try await fs.openDirectory(s.inode)
            defer { fs.releaseDirectory(handle: handle) }
            let entries = try fs.directoryEntries(handle: handle, from: 0)

            let expected = (Self.unsorted.filter { $0 != "B" } + ["B-folder"]).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            #expect(entries.map(\.name) == [".", ".."] + expected)
            #expect(entries.map { Array($0.name.utf8) } == ([".", ".."] + expected).map { Array($0.utf8) })
            #expect(entries[0].attributes == s)
            #expect(entries[1].attributes == (try fs.attributes(of: Filesystem.rootInode)))
            for entry in entries.dropFirst(2) {
                #expect(try fs.attributes(of: entry.attributes.inode) == entry.attributes)
            }
            #expect(entries.first { $0.name == "B-folder" }?.attributes.kind == .folder)
        }

        @Test func theRootsParentIsTheRoot() async throws {
            let fs = Filesystem(client: InMemoryDropbox(), options: options())
            let handle = try await fs.openDirectory(Filesystem.rootInode)
            let entries = try fs.directoryEntries(handle: handle, from: 0)
            #expect(entries.map(\.name) == [".", ".."])
            #expect(entries.allSatisfy { $0.attributes.inode == Filesystem.rootInode })
            fs.releaseDirectory(handle: handle)
        }

        @Test func offsetsIndexTheSnapshot() async throws {
            let fake = InMemoryDropbox()
            for name in ["a", "b", "c", "d"] { fake.addFile("/\(name)", size: 1) }
            let fs = Filesystem(client: fake, options: options())
            let handle = try await fs.openDirectory(Filesystem.rootInode)
            defer { fs.releaseDirectory(handle: handle) }
            for offset in 0...6 {
                let slice = try fs.directoryEntries(handle: handle, from: offset)
                #expect(slice.map(\.name) == Array([".", "..", "a", "b", "c", "d"].dropFirst(offset)), "offset \(offset)")
            }
            #expect(try fs.directoryEntries(handle: handle, from: -1).isEmpty)
            #expect(try fs.directoryEntries(handle: handle, from: 100).isEmpty)
        }

        @Test func handlesAreIndependentAndReleasedHandlesAreBad() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/a", size: 1)
            let fs = Filesystem(client: fake, options: options())
            let first = try await fs.openDirectory(Filesystem.rootInode)
            let second = try #require(try fs.openDirectoryCached(Filesystem.rootInode))
            #expect(first != second)
            fs.releaseDirectory(handle: first)
            #expect(throws: FilesystemError.badHandle) { try fs.directoryEntries(handle: first, from: 0) }
            #expect(throws: FilesystemError.badHandle) { try fs.directoryEntriesPlus(handle: first, from: 0) { _, _ in true } }
            #expect(try fs.directoryEntries(handle: second, from: 2).map(\.name) == ["a"])
            fs.releaseDirectory(handle: second)
            fs.releaseDirectory(handle: second)  // twice is harmless
            #expect(throws: FilesystemError.badHandle) { try fs.directoryEntries(handle: 12_345, from: 0) }
            #expect(FilesystemError.badHandle.errno == EBADF)
        }

        /// An open handle lists the children present at opendir, minus those removed since (their
        /// names would lead nowhere); children added later appear on the next opendir.
        @Test func aSnapshotKeepsItsMembersAndSkipsRemovedOnes() async throws {
            let fake = InMemoryDropbox()
            for name in ["a", "b", "c"] { fake.addFile("/\(name)", size: 1) }
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            let handle = try await fs.openDirectory(Filesystem.rootInode)
            defer { fs.releaseDirectory(handle: handle) }
            fake.delete("/b")
            fake.addFile("/d", size: 1)
            clock.advance(by: 11)
            #expect(try await names(fs, Filesystem.rootInode) == ["a", "c", "d"])
            #expect(try fs.directoryEntries(handle: handle, from: 2).map(\.name) == ["a", "c"])
        }

        @Test func readdirplusCountsALookupOnlyForAcceptedChildEntries() async throws {
            let fake = InMemoryDropbox()
            for name in ["a", "b", "c", "d"] { fake.addFile("/s/\(name)", size: 1) }
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            let handle = try await fs.openDirectory(Filesystem.rootInode)
            let s = try #require(try fs.directoryEntries(handle: handle, from: 2).first).attributes  // no lookup
            fs.releaseDirectory(handle: handle)

            let sHandle = try await fs.openDirectory(s.inode)
            var offered: [(String, Int)] = []
            // Accept ".", "..", "a", "b"; refuse "c" (the kernel's buffer is full).
            try fs.directoryEntriesPlus(handle: sHandle, from: 0) { entry, next in
                offered.append((entry.name, next))
                return entry.name != "c"
            }
            #expect(offered.map(\.0) == [".", "..", "a", "b", "c"])
            #expect(offered.map(\.1) == [1, 2, 3, 4, 5])
            // The kernel resumes at "c"'s offset and takes the rest.
            var resumed: [(String, Int)] = []
            try fs.directoryEntriesPlus(handle: sHandle, from: 4) { entry, next in
                resumed.append((entry.name, next))
                return true
            }
            #expect(resumed.map(\.0) == ["c", "d"])
            #expect(resumed.map(\.1) == [5, 6])
            let inodes = Dictionary(
                uniqueKeysWithValues: try fs.directoryEntries(handle: sHandle, from: 2).map { ($0.name, $0.attributes.inode) })
            fs.releaseDirectory(handle: sHandle)

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

        @Test func readdirplusSkipsNodesReleasedSinceOpendir() async throws {
            let fake = InMemoryDropbox()
            for name in ["a", "b", "c"] { fake.addFile("/\(name)", size: 1) }
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            let handle = try await fs.openDirectory(Filesystem.rootInode)
            defer { fs.releaseDirectory(handle: handle) }
            let b = try #require(try fs.directoryEntries(handle: handle, from: 0).first { $0.name == "b" })

            fake.delete("/b")
            fake.addFile("/e", size: 2)  // may take b's released inode number
            clock.advance(by: 11)
            #expect(try await names(fs, Filesystem.rootInode) == ["a", "c", "e"])
            #expect(throws: FilesystemError.stale) { try fs.attributes(of: b.attributes.inode) }

            var offered: [(String, Int)] = []
            try fs.directoryEntriesPlus(handle: handle, from: 0) { entry, next in
                offered.append((entry.name, next))
                return true
            }
            #expect(offered.map(\.0) == [".", "..", "a", "c"])
            #expect(offered.map(\.1) == [1, 2, 3, 5])
            // Plain readdir skips it too.
            #expect(try fs.directoryEntries(handle: handle, from: 2).map(\.name) == ["a", "c"])
        }

        @Test func openDirectoryCachedAnswersOnlyWhenFresh() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/d/x", size: 1)
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            let d = try await inode(fs, "/d")
            #expect(try fs.openDirectoryCached(d) == nil)
            let listed = try await fs.openDirectory(d)
            fs.releaseDirectory(handle: listed)
            let cached = try #require(try fs.openDirectoryCached(d))
            #expect(try fs.directoryEntries(handle: cached, from: 2).map(\.name) == ["x"])
            fs.releaseDirectory(handle: cached)
            clock.advance(by: 11)
            #expect(try fs.openDirectoryCached(d) == nil)
            #expect(fake.callCount(.listFolder) == 2)
        }
    }
}
