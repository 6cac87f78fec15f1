// The core's caller policies driven through its entries (Filesystem+Callers.swift): a thread that
// walks many folders gets its files lean in readdirplus; its lookup of a file in a folder listed
// lean is answered later, once the kernel was told to drop the lean listings, and from then on its
// listings are full. A file manager never walks lean; an anonymous caller is neither.

import DropboxAPI
import DropboxTestSupport
import Synchronization
import Testing

@testable import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

extension CoreTests {
    @Suite struct CallerPolicyTests {
        /// Folders /d0 ... /d3, each with a file `f` and a folder `sub`; lean after one folder.
        static func walkable(processName: String) async throws -> (fs: Filesystem, folders: [UInt64]) {
            let fake = InMemoryDropbox()
            for i in 0..<4 {
                fake.addFile("/d\(i)/f", size: 1)
                fake.addFolder("/d\(i)/sub")
            }
            // A walker is remembered for 10 s of the clock: a manual one, so a loaded machine's
            // pauses between two listings do not make the walker a stranger.
            var settings = options(clock: ManualClock())
            settings.leanWalkAfter = 1
            settings.processName = { _ in processName }
            let fs = Filesystem(client: fake, options: settings)
            var folders: [UInt64] = []
            for i in 0..<4 { folders.append(try await inode(fs, "/d\(i)")) }
            return (fs, folders)
        }

        /// Which child entries of a readdirplus listing of `folder` went lean, by name.
        static func leanNames(_ fs: Filesystem, _ folder: UInt64, _ caller: Caller) async throws -> [String] {
            let answer = fs.readDirectory(folder, from: 0, countingLookups: true, caller: caller, into: EntryNames())
            let piece = try await answer.value
            return piece.entries.filter(\.lean).map(\.name)
        }

        @Test func aWalkersFileLookupInALeanFolderIsAnsweredOnceTheLeanListingsAreDropped() async throws {
            let (fs, folders) = try await Self.walkable(processName: "find")
            let published = Mutex<[Invalidation]>([])
            fs.setInvalidationHandler { batch in published.withLock { $0 += batch } }
            let walker = Caller(pid: 4242, uid: getuid())
            #expect(try await Self.leanNames(fs, folders[0], walker) == [], "its first folder is full")
            #expect(try await Self.leanNames(fs, folders[1], walker) == ["f"], "then files go lean, folders not")
            #expect(try await Self.leanNames(fs, folders[2], walker) == ["f"])
            #expect(try await Self.leanNames(fs, folders[2], .anonymous) == [], "an anonymous caller is no walker")
            #expect(fs.callerStatusFields == "lean_listings=2 file_lookups=0")

            #expect(try fs.lookup(parent: folders[0], name: "sub", caller: walker).now()?.kind == .folder)
            published.withLock { $0 = [] }
            let lookup = fs.lookup(parent: folders[1], name: "f", caller: walker)
            #expect(lookup.isLater, "a lookup in a folder listed lean waits for the drop")
            #expect(try await lookup.value.kind == .file)
            try await waitUntil("the lean listings were dropped") {
                let dropped = published.withLock { $0 }
                return dropped.contains(.inode(folders[1])) && dropped.contains(.inode(folders[2]))
            }
            #expect(fs.callerStatusFields == "lean_listings=2 file_lookups=1")
            #expect(try fs.lookup(parent: folders[2], name: "f", caller: walker).now()?.kind == .file, "dropped once")
            #expect(try await Self.leanNames(fs, folders[3], walker) == [], "a walker that looked a file up: full")
        }

        @Test func aFileManagerNeverWalksLean() async throws {
            let (fs, folders) = try await Self.walkable(processName: "pcmanfm")
            let published = Mutex<[Invalidation]>([])
            fs.setInvalidationHandler { batch in published.withLock { $0 += batch } }
            let manager = Caller(pid: 4243, uid: getuid())
            for folder in folders { #expect(try await Self.leanNames(fs, folder, manager) == []) }
            published.withLock { $0 = [] }
            #expect(try fs.lookup(parent: folders[1], name: "f", caller: manager).now()?.kind == .file)
            #expect(published.withLock { $0 }.isEmpty, "nothing listed lean, nothing to drop")
            #expect(fs.callerStatusFields == "lean_listings=0 file_lookups=1")
        }

        /// A thumbnailer's handle on a small file bypasses the page cache (its ranges are served
        /// before the content check, and the cache is shared with every reader of the inode);
        /// any other program's handle, and a thumbnailer's on a large file, use it as usual.
        @Test(arguments: [("gdk-pixbuf-thum", true), ("cat", false)])
        func aSniffersHandleOnASmallFileBypassesThePageCache(process: String, bypasses: Bool) async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/small.jpg", size: 5_000)
            fake.addFile("/large.mkv", size: 64 << 20)
            var settings = options()
            settings.processName = { _ in process }
            let fs = Filesystem(client: fake, options: settings)
            let caller = Caller(pid: 4244, uid: getuid())
            let small = try await fs.open(try await inode(fs, "/small.jpg"), caller: caller).value
            #expect((small.pageCache == .bypass) == bypasses, "\(small.pageCache)")
            let large = try await fs.open(try await inode(fs, "/large.mkv"), caller: caller).value
            #expect(large.pageCache != .bypass)
            fs.releaseFile(handle: small.handle)
            fs.releaseFile(handle: large.handle)
        }
    }
}
