// The shared-folders view (SharedFolders/): folders shared and not added shown under one folder at
// the top, each read through its namespace; name clashes (between shared folders, and with an
// entry of the account's own); listings polled after their lifetime (changes, new and unshared
// folders); no_permission as EACCES without a retry; and the account's tree refilled after a
// cursor reset beside a view it never touches.

import DropboxAPI
import DropboxTestSupport
import Testing

@testable import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

extension CoreTests {
    @Suite struct SharedFoldersTests {
        static let view = SharedFolders.defaultName

        static func filesystem(
            _ fake: InMemoryDropbox, lifetime: Double = 30, clock: ManualClock? = nil, watching: Bool = false
        ) -> Filesystem {
            var o = options(prefetch: watching, watchChanges: watching, longpollTimeout: 30, clock: clock)
            o.sharedFolders = SharedFoldersOptions(routes: fake, lifetime: lifetime)
            return Filesystem(client: fake, options: o)
        }

        /// The names a folder lists ("." and ".." left out), listing it when needed.
        static func listed(_ fs: Filesystem, _ folder: UInt64) async throws -> [String] {
            let piece = try await fs.readDirectory(
                folder, from: 0, countingLookups: false, caller: .anonymous, into: EntryNames()
            ).value
            return piece.names.filter { $0 != "." && $0 != ".." }
        }

        static func readAll(_ fs: Filesystem, _ inode: UInt64) async throws -> [UInt8] {
            try await SharedLinkSourceTests.readAll(fs, inode)
        }

        @Test func foldersNotAddedAreShownAndReadThroughTheirNamespace() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/own.txt", contents: [1])
            let photos = fake.shareFolder("Photos").namespace
            let bytes = (0..<150_000).map { UInt8($0 % 253) }
            photos.addFile("/2024/beach.bin", contents: bytes)
            photos.addFile("/readme.txt", contents: Array("trip".utf8))
            fake.shareFolder("Team", addedAt: "/Team")
            let fs = Self.filesystem(fake)
            #expect(try await Self.listed(fs, Filesystem.rootInode) == ["Team", "own.txt", Self.view])
            let top = try await fs.lookup(parent: Filesystem.rootInode, name: Self.view)
            #expect(top.inode == SharedFolders.topInode && top.kind == .folder && !top.entryCacheable)
            #expect(try await Self.listed(fs, top.inode) == ["Photos"], "an added folder is in the tree, not here")
            let folder = try await fs.lookup(parent: top.inode, name: "Photos")
            #expect(try await Self.listed(fs, folder.inode) == ["2024", "readme.txt"])
            let year = try await fs.lookup(parent: folder.inode, name: "2024")
            let beach = try await fs.lookup(parent: year.inode, name: "beach.bin")
            #expect(beach.size == 150_000 && beach.permissions == 0o444)
            #expect(try await Self.readAll(fs, beach.inode) == bytes)
            #expect(photos.callCount(.download) > 0 && fake.callCount(.download) == 0)
            #expect(photos.listFolderArgs.map(\.path) == ["", "/2024"])
            #expect(photos.listFolderArgs.allSatisfy { !$0.recursive })
            // ".." of the view's folder is the mount's root.
            let dots = try await fs.readDirectory(top.inode, from: 0, countingLookups: false, caller: .anonymous, into: EntryNames()).value
            #expect(dots.entries.first { $0.name == ".." }?.attributes.inode == Filesystem.rootInode)
            // Nothing of the view is in the tree, and no history view or pin is offered inside it.
            await #expect(throws: FilesystemError.notFound) {
                _ = try await fs.lookup(parent: Filesystem.rootInode, name: "Photos")
            }
            await #expect(throws: FilesystemError.notFound) {
                _ = try await fs.lookup(parent: folder.inode, name: ".dropboxfs-versions")
            }
            #expect(try fs.extendedAttribute(Filesystem.pinRequestAttribute, of: folder.inode).hasPrefix("refused: "))
        }

        @Test func namesClashByOneRule() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/\(Self.view)/mine.txt", contents: [1])
            let first = fake.shareFolder("Same")
            let second = fake.shareFolder("Same")
            first.namespace.addFile("/one.txt", contents: [1])
            second.namespace.addFile("/two.txt", contents: [2])
            let fs = Self.filesystem(fake)
            #expect(try await Self.listed(fs, Filesystem.rootInode) == [Self.view], "never two entries of one name")
            let top = try await fs.lookup(parent: Filesystem.rootInode, name: Self.view)
            #expect(top.inode == SharedFolders.topInode)
            let suffixed = "Same (\(second.id.suffix(6)))"
            #expect(try await Self.listed(fs, top.inode) == ["Same", suffixed])
            #expect(try await Self.listed(fs, try await fs.lookup(parent: top.inode, name: "Same").inode) == ["one.txt"])
            #expect(try await Self.listed(fs, try await fs.lookup(parent: top.inode, name: suffixed).inode) == ["two.txt"])
            // The rule by itself: the lowest id keeps the name, whatever order Dropbox lists them in.
            let a = SharedFolderMetadata(name: "X", sharedFolderId: "900", pathLower: nil, accessType: "viewer")
            let b = SharedFolderMetadata(name: "X", sharedFolderId: "1000", pathLower: nil, accessType: "viewer")
            let added = SharedFolderMetadata(name: "Y", sharedFolderId: "5", pathLower: "/y", accessType: "editor")
            #expect(SharedFolderNames.assign([b, added, a]).map(\.name) == ["X", "X (1000)"])
            #expect(SharedFolderNames.assign([b, a]).first?.folder.sharedFolderId == "900")
        }

        @Test func listingsArePolledAfterTheirLifetime() async throws {
            let fake = InMemoryDropbox()
            let docs = fake.shareFolder("Docs")
            docs.namespace.addFile("/a.txt", contents: Array("one".utf8))
            let old = fake.shareFolder("Old")
            let clock = ManualClock()
            let fs = Self.filesystem(fake, lifetime: 30, clock: clock)
            let log = InvalidationLog(fs)
            let top = SharedFolders.topInode
            #expect(try await Self.listed(fs, top) == ["Docs", "Old"])
            let folder = try await fs.lookup(parent: top, name: "Docs")
            let a = try await fs.lookup(parent: folder.inode, name: "a.txt")
            docs.namespace.modifyFile("/a.txt", contents: Array("two!".utf8))
            docs.namespace.addFile("/b.txt", contents: [2])
            fake.shareFolder("New")
            fake.unshareFolder(old.id)
            clock.advance(by: 10)
            #expect(try await Self.listed(fs, folder.inode) == ["a.txt"], "still within the lifetime")
            #expect(try fs.lookupCached(parent: folder.inode, name: "b.txt") == .notFound)
            #expect(try await Self.listed(fs, top) == ["Docs", "Old"])
            clock.advance(by: 25)
            #expect(try fs.lookupCached(parent: folder.inode, name: "b.txt") == .needsListing)
            #expect(try await Self.listed(fs, folder.inode) == ["a.txt", "b.txt"])
            let changed = try await fs.lookup(parent: folder.inode, name: "a.txt")
            #expect(changed.inode != a.inode && changed.size == 4, "a new revision is a new inode")
            #expect(try await Self.readAll(fs, changed.inode) == Array("two!".utf8))
            #expect(try await Self.listed(fs, top) == ["Docs", "New"])
            // Delivered on the invalidation queue, after the listing.
            try await waitUntil("the changed names were invalidated") {
                log.contains(.entry(parent: folder.inode, name: "a.txt")) && log.contains(.inode(folder.inode))
                    && log.contains(.entry(parent: top, name: "New")) && log.contains(.entry(parent: top, name: "Old"))
            }
            // The old inode still answers its last facts to a kernel that holds it.
            #expect(try fs.attributes(of: a.inode).size == 3)
        }

        @Test func aNamespaceTheAccountMayNotReadAnswersEACCESWithoutARetry() async throws {
            let fake = InMemoryDropbox()
            let locked = fake.shareFolder("Locked")
            locked.namespace.addFile("/x.txt", contents: [1])
            let clock = ManualClock()
            let fs = Self.filesystem(fake, lifetime: 30, clock: clock)
            let folder = try await fs.lookup(parent: SharedFolders.topInode, name: "Locked")
            fake.setSharedFolderReadable(locked.id, false)
            for _ in 0..<2 {
                do {
                    _ = try await Self.listed(fs, folder.inode)
                    Issue.record("listed a folder Dropbox refuses")
                } catch let error as FilesystemError {
                    #expect(error == .restricted(.sharedFolderNotReadable("Locked")) && error.errno == EACCES)
                }
            }
            // Answered now from the refusal, within the lifetime: no request.
            #expect(throws: FilesystemError.restricted(.sharedFolderNotReadable("Locked"))) {
                _ = try fs.lookupCached(parent: folder.inode, name: "x.txt")
            }
            fake.setSharedFolderReadable(locked.id, true)
            clock.advance(by: 31)
            #expect(try await Self.listed(fs, folder.inode) == ["x.txt"], "asked again once the lifetime passed")
            #expect(FilesystemError(DropboxError.pathRoot(tag: "no_permission")).errno == EIO, "only the view says EACCES")
        }

        @Test func accessLevelsApplyInsideSharedFolders() async throws {
            let fake = InMemoryDropbox()
            let team = fake.shareFolder("Team").namespace
            team.addFile("/Locked/secret.txt", contents: [1])
            team.addFile("/Pass/visible/a.txt", contents: [2])
            team.addFile("/Pass/hidden.txt", contents: [3])
            team.setFolderAccess("/Locked", noAccess: true)
            team.setFolderAccess("/Pass", traverseOnly: true)
            fake.shareFolder("Through", accessType: "traverse").namespace.addFile("/f.txt", contents: [4])
            let fs = Self.filesystem(fake)
            let folder = try await fs.lookup(parent: SharedFolders.topInode, name: "Team")
            let locked = try await fs.lookup(parent: folder.inode, name: "Locked")
            #expect(locked.permissions == 0)
            await #expect(throws: FilesystemError.restricted(.noAccessFolder("\(Self.view)/Team/Locked"))) {
                _ = try await Self.listed(fs, locked.inode)
            }
            let pass = try await fs.lookup(parent: folder.inode, name: "Pass")
            #expect(try await Self.listed(fs, pass.inode) == ["visible"], "a traverse-only folder shows its folders only")
            let through = try await fs.lookup(parent: SharedFolders.topInode, name: "Through")
            #expect(try await Self.listed(fs, through.inode) == [])
        }

        @Test func offlineTheViewFailsFastLikeAFolderNotListedYet() async throws {
            let fake = InMemoryDropbox()
            fake.shareFolder("Photos").namespace.addFile("/a.txt", contents: [1])
            var o = options()
            o.sharedFolders = SharedFoldersOptions(routes: fake, lifetime: 30)
            let fs = Filesystem(client: fake, options: o, connectivity: Connectivity(offline: true, retryInterval: 3600))
            do {
                _ = try await Self.listed(fs, SharedFolders.topInode)
                Issue.record("listed the shared folders offline")
            } catch let error as FilesystemError {
                #expect(error == .offline && error.errno == ENETUNREACH)
            }
            #expect(fake.callCount(.listFolder) == 0)
        }

        @Test func aCursorResetAndRefillLeaveTheViewIntact() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/docs/a.txt", contents: [1])
            let shared = fake.shareFolder("Shared")
            shared.namespace.addFile("/kept.txt", contents: Array("kept".utf8))
            let fs = Self.filesystem(fake, watching: true)
            fs.startSync()
            defer { fs.stop() }
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            let folder = try await fs.lookup(parent: SharedFolders.topInode, name: "Shared")
            let kept = try await fs.lookup(parent: folder.inode, name: "kept.txt")
            fake.resetCursors()
            fake.addFile("/docs/after.txt", contents: [2])
            try await waitUntil("the watcher saw the reset") { statusField(fs, "resets") == 1 }
            try await waitUntil("the refill brought the new file") {
                (try? await Self.listed(fs, try await inode(fs, "/docs")))?.contains("after.txt") == true
            }
            #expect(try await Self.listed(fs, Filesystem.rootInode) == ["docs", Self.view])
            #expect(try await Self.listed(fs, SharedFolders.topInode) == ["Shared"])
            #expect(try fs.attributes(of: kept.inode).size == 4)
            #expect(try await Self.readAll(fs, kept.inode) == Array("kept".utf8))
            #expect(shared.namespace.callCount(.listFolderGetLatestCursor) == 0, "no cursor is followed in a namespace")
        }
    }
}
