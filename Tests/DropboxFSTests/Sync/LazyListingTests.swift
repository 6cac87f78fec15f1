// Lazy listing: a folder is listed with list_folder plus every continue page the first time it is
// needed; concurrent callers share one listing; a complete folder answers missing names without a
// request; an expired listing (folderListingTTL) is listed again and reconciled; a folder deleted
// remotely leaves the tree; listing failures map to errnos and do not poison the folder.

import DropboxAPI
import DropboxTestSupport
import Testing

@testable import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

extension CoreTests {
    @Suite struct LazyListingTests {
        /// /big with `count` files f00, f01 ..., plus /other/x.
        static func fake(files count: Int) -> InMemoryDropbox {
            let fake = InMemoryDropbox()
            for i in 0..<count { fake.addFile("/big/f" + (i < 10 ? "0" : "") + String(i), size: UInt64(i)) }
            fake.addFile("/other/x", size: 1)
            return fake
        }

        @Test func aFolderIsListedWithEveryContinuePage() async throws {
            let fake = Self.fake(files: 10)
            let fs = Filesystem(client: fake, options: options(pageLimit: 3))
            let big = try await inode(fs, "/big")
            fake.resetCalls()
            let listed = try await names(fs, big)
            #expect(listed == (0..<10).map { "f0\($0)" })
            #expect(fake.callCount(.listFolder) == 1)
            #expect(fake.callCount(.listFolderContinue) == 3, "10 entries in pages of 3")
            #expect(fake.listFolderArgs.map(\.limit) == [3])
            #expect(fake.listFolderArgs.map(\.recursive) == [false])
            let bigId = try #require(id(of: fake.entry("/big")))
            #expect(fake.listFolderPaths == [bigId], "folders are listed by id")
            #expect(try await fs.lookup(parent: big, name: "f09").size == 9)
            #expect(fake.calls.values.reduce(0, +) == 4, "no request once listed")
        }

        @Test func theRootIsListedWithTheEmptyPath() async throws {
            let fake = Self.fake(files: 1)
            let fs = Filesystem(client: fake, options: options())
            #expect(try await names(fs, Filesystem.rootInode) == ["big", "other"])
            #expect(fake.listFolderPaths == [""])
        }

        @Test func concurrentRequestsForOneUnlistedFolderShareOneListing() async throws {
            let fake = Self.fake(files: 10)
            let fs = Filesystem(client: fake, options: options(pageLimit: 3))
            let big = try await inode(fs, "/big")
            fake.resetCalls()
            fake.latency = .milliseconds(40)

            let results = try await withThrowingTaskGroup(of: String.self) { group in
                for i in 0..<20 {
                    group.addTask {
                        switch i % 4 {
                        case 0:
                            return try await names(fs, big).joined(separator: ",")
                        case 1:
                            return String(try await fs.lookup(parent: big, name: "f0\(i % 10)").size)
                        case 2:
                            do {
                                _ = try await fs.lookup(parent: big, name: ".hidden")
                                return "found?"
                            } catch { return (error as? FilesystemError) == .notFound ? "ENOENT" : "\(error)" }
                        default:
                            try await fs.prepareDirectory(big)
                            return String(try fs.directoryEntries(big, from: 0).count)
                        }
                    }
                }
                var all: [String] = []
                for try await result in group { all.append(result) }
                return all
            }
            #expect(results.count == 20)
            #expect(results.filter { $0 == "ENOENT" }.count == 5)
            #expect(results.filter { $0 == "12" }.count == 5)
            #expect(results.filter { $0 == (0..<10).map { "f0\($0)" }.joined(separator: ",") }.count == 5)
            #expect(fake.callCount(.listFolder) == 1)
            #expect(fake.callCount(.listFolderContinue) == 3)
        }

        @Test func aCompleteFolderAnswersMissingNamesWithoutARequest() async throws {
            let fake = Self.fake(files: 4)
            let fs = Filesystem(client: fake, options: options(pageLimit: 3))
            let big = try await inode(fs, "/big")
            #expect(try fs.lookupCached(parent: big, name: ".hidden") == .needsListing)
            #expect(try fs.lookupCached(parent: big, name: "f01") == .needsListing)
            #expect(!(try fs.isDirectoryReady(big)))
            _ = try await names(fs, big)
            let requests = fake.calls

            for probe in [".hidden", "desktop.ini", ".directory", ".Trash", ".Trash-1000", ".sh_thumbnails", "F01", "f1"] {
                await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: big, name: probe) }
                #expect(try fs.lookupCached(parent: big, name: probe) == .notFound)
            }
            guard case .found(let f01) = try fs.lookupCached(parent: big, name: "f01") else {
                Issue.record("f01 is not answered from the tree")
                return
            }
            #expect(f01.size == 1)
            #expect(try fs.isDirectoryReady(big))
            #expect(try fs.directoryEntries(big, from: 2).map(\.name) == ["f00", "f01", "f02", "f03"])
            #expect(fake.calls == requests)
        }

        @Test func anExpiredListingIsListedAgainAndReconciled() async throws {
            let fake = InMemoryDropbox()
            for name in ["keep", "remove", "change"] { fake.addFile("/d/\(name)", size: 10) }
            fake.addFolder("/d/sub-keep")
            fake.addFolder("/d/sub-remove")
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 30, pageLimit: 2, clock: clock))
            let d = try await inode(fs, "/d")
            #expect(try await names(fs, d) == ["change", "keep", "remove", "sub-keep", "sub-remove"])
            let before = try await fs.lookup(parent: d, name: "keep")
            let change = try await fs.lookup(parent: d, name: "change")
            let subKeep = try await fs.lookup(parent: d, name: "sub-keep")
            let remove = try await resolve(fs, "/d/remove")
            fs.forget(before.inode, count: 1)
            fs.forget(change.inode, count: 1)
            fs.forget(subKeep.inode, count: 1)

            fake.delete("/d/remove")
            fake.delete("/d/sub-remove")
            fake.addFile("/d/new", size: 3)
            fake.modifyFile("/d/change", contents: [1, 2])
            let listings = fake.callCount(.listFolder)

            clock.advance(by: 29)
            #expect(try fs.lookupCached(parent: d, name: "new") == .notFound, "still fresh")
            #expect(try await names(fs, d) == ["change", "keep", "remove", "sub-keep", "sub-remove"])
            #expect(fake.callCount(.listFolder) == listings)

            clock.advance(by: 2)
            #expect(try fs.lookupCached(parent: d, name: "new") == .needsListing, "expired")
            #expect(!(try fs.isDirectoryReady(d)))
            #expect(try await names(fs, d) == ["change", "keep", "new", "sub-keep"])
            #expect(fake.callCount(.listFolder) == listings + 1)
            #expect(try await fs.lookup(parent: d, name: "keep").inode == before.inode)
            #expect(try await fs.lookup(parent: d, name: "sub-keep").inode == subKeep.inode)
            let changed = try await fs.lookup(parent: d, name: "change")
            #expect(changed.inode == change.inode && changed.size == 2)
            #expect(throws: FilesystemError.stale) { try fs.attributes(of: remove.inode) }
            #expect(fake.callCount(.listFolder) == listings + 1)
        }

        @Test func aMissingNameInAnExpiredFolderListsItAgain() async throws {
            let fake = Self.fake(files: 2)
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 5, clock: clock))
            let big = try await inode(fs, "/big")
            _ = try await names(fs, big)
            fake.addFile("/big/late", size: 8)
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: big, name: "late") }
            clock.advance(by: 6)
            let listings = fake.callCount(.listFolder)
            #expect(try await fs.lookup(parent: big, name: "late").size == 8)
            #expect(fake.callCount(.listFolder) == listings + 1)
            // An existing name is answered from the tree even when the listing is old.
            clock.advance(by: 6)
            #expect(try await fs.lookup(parent: big, name: "f00").size == 0)
            #expect(fake.callCount(.listFolder) == listings + 1)
        }

        @Test func aFolderDeletedRemotelyAnswersENOENTAndLeavesTheTree() async throws {
            let fake = Self.fake(files: 2)
            let fs = Filesystem(client: fake, options: options())
            _ = try await names(fs, Filesystem.rootInode)
            let other = try await fs.lookup(parent: 1, name: "other")  // held by the kernel
            let entries = fs.entryCount
            fake.delete("/other")

            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: other.inode, name: "x") }
            #expect(fs.entryCount == entries - 1)
            let requests = fake.calls
            #expect(try await names(fs, Filesystem.rootInode) == ["big"])
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: 1, name: "other") }
            #expect(fake.calls == requests, "the root stays complete")

            // The kernel still holds the folder: it is resolvable and lists as empty.
            #expect(try fs.attributes(of: other.inode).kind == .folder)
            #expect(try await names(fs, other.inode) == [])
            fs.forget(other.inode, count: 1)
            #expect(throws: FilesystemError.stale) { try fs.attributes(of: other.inode) }
        }

        @Test func aListedFolderDeletedRemotelyAnswersENOENTOnTheNextListing() async throws {
            let fake = Self.fake(files: 2)
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 5, clock: clock))
            let big = try await inode(fs, "/big")
            _ = try await names(fs, big)
            fake.delete("/big")
            clock.advance(by: 6)
            await #expect(throws: FilesystemError.notFound) { try await fs.prepareDirectory(big) }
            #expect(throws: FilesystemError.stale) { try fs.attributes(of: big) }
        }

        @Test(arguments: [
            (DropboxError.transport(TransportError(kind: .timeout, message: "timed out")), EIO),
            (.serverError(status: 503), EIO),
            (.rateLimited(retryAfter: 3), EIO),
            (.malformedResponse("bad JSON"), EIO),
            (.authentication(.expiredAccessToken), EACCES),
            (.authentication(.missingScope("files.metadata.read")), EACCES),
            (.accessDenied(tag: "no_permission"), EACCES),
        ])
        func aFailedListingMapsToAnErrnoAndIsRetriedNextTime(error: DropboxError, errno: Int32) async throws {
            let fake = Self.fake(files: 3)
            let client = FaultInjectingClient(fake)
            let fs = Filesystem(client: client, options: options(pageLimit: 2))
            let big = try await inode(fs, "/big")
            client.resetCalls()
            client.failCall(number: 1, of: .listFolderContinue, with: error)
            do {
                _ = try await fs.lookup(parent: big, name: "f00")
                Issue.record("the lookup succeeded")
            } catch {
                #expect(error.errno == errno, "\(error)")
            }
            #expect(try fs.lookupCached(parent: big, name: "zzz") == .needsListing, "a half listing is not complete")
            #expect(try await names(fs, big) == ["f00", "f01", "f02"])
            #expect(client.callCount(.listFolder) == 2)
        }
    }
}
