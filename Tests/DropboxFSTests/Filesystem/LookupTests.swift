// Lookup, attributes, the kernel's lookup counts (forget), readlink, extended attributes, and the
// errors of each: byte-exact names (another case or normalization is ENOENT), ENOTDIR through a
// file, ESTALE for inodes the core never gave out or already released.

import DropboxAPI
import DropboxTestSupport
import Testing

@testable import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

extension CoreTests {
    @Suite struct LookupTests {
        /// /Readme.md, /caf\u{E9}.txt (NFC), /nfd/cafe\u{301}.txt (NFD), /dir/inner.txt, /link -> dir/inner.txt
        static func sampleFake() -> InMemoryDropbox {
            let fake = InMemoryDropbox()
            fake.addFile("/Readme.md", contents: Array("read me".utf8))
            fake.addFile("/caf\u{E9}.txt", contents: [1])
            fake.addFile("/nfd/cafe\u{301}.txt", contents: [2, 2])
            fake.addFile("/dir/inner.txt", contents: [3, 3, 3])
            fake.addSymlink("/link", target: "dir/inner.txt")
            return fake
        }

        @Test func namesMatchByteForByte() async throws {
            let fake = Self.sampleFake()
            let fs = Filesystem(client: fake, options: options())
            let root = Filesystem.rootInode
            let readme = try await fs.lookup(parent: root, name: "Readme.md")
            #expect(readme.kind == .file)
            let requests = fake.calls

            for other in ["README.md", "readme.md", "Readme.MD", "Readme.md ", " Readme.md"] {
                await #expect(throws: FilesystemError.notFound, "\(other)") { try await fs.lookup(parent: root, name: other) }
                #expect(try fs.lookupCached(parent: root, name: other) == .notFound)
            }
            // Same file, other normalization: ENOENT too (SEMANTICS: names are bytes).
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: root, name: "cafe\u{301}.txt") }
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: root, name: "CAF\u{C9}.txt") }
            #expect(try await fs.lookup(parent: root, name: "caf\u{E9}.txt").size == 1)
            #expect(fake.calls == requests, "a complete folder answers every name without a request")

            let nfd = try await inode(fs, "/nfd")
            #expect(try await fs.lookup(parent: nfd, name: "cafe\u{301}.txt").size == 2)
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: nfd, name: "caf\u{E9}.txt") }
            #expect(try await names(fs, nfd).map { Array($0.utf8) } == [Array("cafe\u{301}.txt".utf8)])
        }

        /// A name longer than 255 bytes can be no entry's (longer ones are hidden): ENAMETOOLONG, as
        /// ext4 answers, without listing the folder. 255 bytes is still looked up.
        @Test func aNameLongerThan255BytesIsTooLongWithoutARequest() async throws {
            let fake = Self.sampleFake()
            let fs = Filesystem(client: fake, options: options())
            await #expect(throws: FilesystemError.nameTooLong) {
                try await fs.lookup(parent: 1, name: String(repeating: "é", count: 128))
            }
            #expect(fake.callCount(.listFolder) == 0)
            await #expect(throws: FilesystemError.notFound) {
                try await fs.lookup(parent: 1, name: String(repeating: "a", count: 255))
            }
            #expect(fake.callCount(.listFolder) == 1)
        }

        @Test func anotherCaseInAnUnlistedFolderListsItOnceThenAnswersENOENT() async throws {
            let fake = Self.sampleFake()
            let fs = Filesystem(client: fake, options: options())
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: 1, name: "README.MD") }
            #expect(fake.callCount(.listFolder) == 1)
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: 1, name: "README.MD") }
            #expect(fake.callCount(.listFolder) == 1)
        }

        @Test func readlinkOnOtherKindsAndUnknownInodes() async throws {
            let fs = Filesystem(client: Self.sampleFake(), options: options())
            let link = try await inode(fs, "/link")
            #expect(try fs.readlink(link) == "dir/inner.txt")
            #expect(throws: FilesystemError.notSupported) { try fs.readlink(try fs.attributes(of: 1).inode) }
            let readme = try await inode(fs, "/Readme.md")
            #expect(throws: FilesystemError.notSupported) { try fs.readlink(readme) }
            #expect(throws: FilesystemError.stale) { try fs.readlink(9_999) }
        }

        @Test func aFileIsNotADirectory() async throws {
            let fake = Self.sampleFake()
            let fs = Filesystem(client: fake, options: options())
            let readme = try await inode(fs, "/Readme.md")
            let link = try await inode(fs, "/link")
            let requests = fake.calls
            for inode in [readme, link] {
                await #expect(throws: FilesystemError.notADirectory) { try await fs.lookup(parent: inode, name: "x") }
                #expect(throws: FilesystemError.notADirectory) { try fs.lookupCached(parent: inode, name: "x") }
                await #expect(throws: FilesystemError.notADirectory) { try await fs.prepareDirectory(inode) }
                #expect(throws: FilesystemError.notADirectory) { try fs.isDirectoryReady(inode) }
            }
            #expect(fake.calls == requests)
            #expect(FilesystemError.notADirectory.errno == ENOTDIR)
        }

        @Test(arguments: [0, 2, 99, 1 << 20, UInt64(UInt32.max), UInt64(UInt32.max) + 1, UInt64.max])
        func unknownInodesAreStale(inode: UInt64) async throws {
            let fs = Filesystem(client: Self.sampleFake(), options: options())
            #expect(throws: FilesystemError.stale) { try fs.attributes(of: inode) }
            await #expect(throws: FilesystemError.stale) { try await fs.lookup(parent: inode, name: "Readme.md") }
            #expect(throws: FilesystemError.stale) { try fs.lookupCached(parent: inode, name: "Readme.md") }
            #expect(throws: FilesystemError.stale) { try fs.isDirectoryReady(inode) }
            #expect(throws: FilesystemError.stale) { try fs.readlink(inode) }
            #expect(throws: FilesystemError.stale) { try fs.extendedAttributes(of: inode) }
            fs.forget(inode, count: 1)  // must not trap
            #expect(FilesystemError.stale.errno == ESTALE)
        }

        /// openDirectory of an inode the tree never gave out must answer ESTALE like every other
        /// operation. Run in a child process (with a watchdog), so a trap or a hang fails only this
        /// test instead of taking the whole run down.
        @Test func openDirectoryOfAnUnknownInodeIsStale() async {
            await #expect(processExitsWith: .success) {
                CoreTests.startWatchdog(seconds: 5)
                let fs = Filesystem(client: InMemoryDropbox(), options: CoreTests.options())
                do {
                    try await fs.prepareDirectory(99)
                    exit(1)
                } catch {
                    exit((error as? FilesystemError) == .stale ? 0 : 2)
                }
            }
        }

        /// The same for a folder inode released while a recursive listing runs. In a child process
        /// with a watchdog: a loop that spins with the filesystem lock held would stall every
        /// request of the run.
        @Test func openDirectoryOfAReleasedFolderDuringAFillIsStale() async {
            await #expect(processExitsWith: .success) {
                CoreTests.startWatchdog(seconds: 5)
                let fake = InMemoryDropbox()
                fake.addFile("/D/x.txt", size: 1)
                fake.addFile("/other.txt", size: 1)
                let gated = CoreTests.GatedClient(fake)
                let whole = CoreTests.GatedClient.Call(listing: .init(path: "", recursive: true), page: 0)
                gated.hold(whole)  // the whole-account listing stays under way
                let clock = CoreTests.ManualClock()
                let fs = Filesystem(
                    client: gated,
                    options: CoreTests.options(
                        folderListingTTL: 10, prefetch: true, prefetchWait: 0, subtreeListingAfter: 1_000, clock: clock))
                fs.startSync()
                try await CoreTests.waitUntil("the fill started") { gated.hasArrived(whole) }
                let d = try await CoreTests.inode(fs, "/D")  // looked up, then forgotten
                fake.delete("/D")
                clock.advance(by: 11)
                _ = try await CoreTests.names(fs, Filesystem.rootInode)  // D leaves the tree and is released
                do {
                    try await fs.prepareDirectory(d)
                    exit(1)
                } catch {
                    exit((error as? FilesystemError) == .stale ? 0 : 2)
                }
            }
        }

        @Test func lookupCountsKeepADeletedNodeUntilForgotten() async throws {
            let fake = Self.sampleFake()
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            let dir = try await inode(fs, "/dir")
            let first = try await fs.lookup(parent: dir, name: "inner.txt")
            let second = try await fs.lookup(parent: dir, name: "inner.txt")
            #expect(first == second)
            let cached = try fs.lookupCached(parent: dir, name: "inner.txt")
            #expect(cached == .found(first))  // a third kernel reference

            fake.delete("/dir/inner.txt")
            clock.advance(by: 11)
            #expect(try await names(fs, dir) == [])
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: dir, name: "inner.txt") }

            // Still held by the kernel: resolvable by inode, with its last known facts.
            #expect(try fs.attributes(of: first.inode) == first)
            #expect(try fs.extendedAttributes(of: first.inode).map(\.name).contains("user.dropbox.rev"))
            fs.forget(first.inode, count: 2)
            #expect(try fs.attributes(of: first.inode) == first)
            fs.forget(first.inode, count: 1)
            #expect(throws: FilesystemError.stale) { try fs.attributes(of: first.inode) }
            #expect(throws: FilesystemError.stale) { try fs.extendedAttributes(of: first.inode) }
        }

        @Test func aDeletedNodeNobodyHoldsIsReleasedAtOnce() async throws {
            let fake = Self.sampleFake()
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            let dir = try await inode(fs, "/dir")
            let old = try await resolve(fs, "/dir/inner.txt")  // looked up and forgotten
            fake.delete("/dir/inner.txt")
            clock.advance(by: 11)
            #expect(try await names(fs, dir) == [])
            #expect(throws: FilesystemError.stale) { try fs.attributes(of: old.inode) }

            fake.addFile("/dir/new.txt", size: 5)
            clock.advance(by: 11)
            let new = try await resolve(fs, "/dir/new.txt")
            #expect(new.generation > old.generation, "a reused inode number never comes back with its old generation")
        }

        @Test func forgettingMoreThanHeldOrTheRootIsHarmless() async throws {
            let fake = Self.sampleFake()
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            fs.forget(Filesystem.rootInode, count: 1_000)
            #expect(try fs.attributes(of: Filesystem.rootInode).kind == .folder)
            let readme = try await fs.lookup(parent: 1, name: "Readme.md")
            fs.forget(readme.inode, count: 50)
            #expect(try fs.attributes(of: readme.inode) == readme, "an attached node stays")
            fake.delete("/Readme.md")
            clock.advance(by: 11)
            _ = try await names(fs, 1)
            #expect(throws: FilesystemError.stale) { try fs.attributes(of: readme.inode) }
        }

        @Test func lookupCachedCountsOnlyWhatItFinds() async throws {
            let fake = Self.sampleFake()
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            let dir = try await inode(fs, "/dir")
            #expect(try fs.lookupCached(parent: dir, name: "inner.txt") == .needsListing)
            _ = try await names(fs, dir)
            guard case .found(let inner) = try fs.lookupCached(parent: dir, name: "inner.txt") else {
                Issue.record("inner.txt not found")
                return
            }
            #expect(try fs.lookupCached(parent: dir, name: "missing") == .notFound)
            fake.delete("/dir/inner.txt")
            clock.advance(by: 11)
            _ = try await names(fs, dir)
            #expect(try fs.attributes(of: inner.inode) == inner, "held by the one .found answer")
            fs.forget(inner.inode, count: 1)
            #expect(throws: FilesystemError.stale) { try fs.attributes(of: inner.inode) }
        }
    }
}
