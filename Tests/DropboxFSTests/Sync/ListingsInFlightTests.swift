// Listings in flight (docs/SEMANTICS.md, "Listings in flight"): several listings of one folder may
// be in flight at once (a user's `ls`, the fill's branch, a split's own listing), and they land in
// any order. The tree must never go back in time: a listing that started before the newest one
// applied to a folder never lands over it, and what a newer listing brought survives the completion
// of an older recursive one. Every interleaving here is forced with a gated client (no sleeps).

import DropboxAPI
import DropboxTestSupport
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct ListingsInFlightTests {
        /// The user's repro: during the first fill, `ls /race` is listed by itself; its second page
        /// is slow; meanwhile a file is created and another deleted, and the fill's cursor comes
        /// after both. The fill's listing of /race (newer) completes first; the slow listing (older)
        /// lands afterwards and must not bring its snapshot back.
        @Test func aUserListingOlderThanTheFillsNeverLandsAfterIt() async throws {
            let fake = InMemoryDropbox()
            for name in ["keep", "gone", "zz"] { fake.addFile("/race/" + name, size: 1) }
            for i in 0..<3 { fake.addFile("/other\(i)/f", size: 1) }
            let race = try #require(id(of: fake.entry("/race")))
            let gated = GatedClient(fake)
            let cursor = GatedClient.latestCursor()
            let secondPage = GatedClient.Call(listing: .init(path: race, recursive: false), page: 1)
            gated.hold(cursor)
            gated.hold(secondPage)
            let fs = Filesystem(
                client: gated,
                options: options(
                    pageLimit: 2, prefetch: true, watchChanges: true, prefetchWait: 0.05, longpollTimeout: 30,
                    fill: FillOptions(parallelism: 4)))
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the fill asked for its cursor") { gated.hasArrived(cursor) }

            let raceInode = try await inode(fs, "/race")
            let user = Task { try await names(fs, raceInode) }
            try await waitUntil("the user's listing of /race asked for its second page") { gated.hasArrived(secondPage) }
            fake.addFile("/race/new", size: 2)
            fake.delete("/race/gone")
            gated.release(cursor)
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            #expect(try await names(fs, raceInode) == ["keep", "new", "zz"], "the fill's listing")

            gated.release(secondPage)
            #expect(try await user.value == ["keep", "new", "zz"], "the user is answered with the newer state")
            try await waitUntil("the user's listing ended") { listingsIdle(fs) }
            #expect(try await names(fs, raceInode) == ["keep", "new", "zz"], "the older listing did not land")
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: raceInode, name: "gone") }
        }

        /// A folder listed by itself while the whole-account listing (an older snapshot) still
        /// runs: the newer entries it brought survive that listing's later pages and completion,
        /// and what it removed does not come back.
        @Test func aFolderListingSurvivesTheOlderRecursiveListingAroundIt() async throws {
            let fake = InMemoryDropbox()
            for i in 0..<6 { fake.addFile("/a/f\(i)", size: 1) }
            for name in ["keep", "gone"] { fake.addFile("/d/" + name, size: 1) }
            fake.addFile("/d/sub/inside", size: 1)
            let gated = GatedClient(fake)
            let second = GatedClient.Call(listing: .init(path: "", recursive: true), page: 1)
            gated.hold(second)
            let fs = Filesystem(client: gated, options: options(pageLimit: 2, prefetch: true, prefetchWait: 0.05))
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the whole-account listing asked for its second page") { gated.hasArrived(second) }

            fake.addFile("/d/new", size: 2)
            fake.delete("/d/gone")
            let d = try await inode(fs, "/d")
            #expect(try await names(fs, d) == ["keep", "new", "sub"])
            gated.release(second)
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            try await waitUntil("the whole-account listing ended") { listingsIdle(fs) }

            #expect(try await names(fs, d) == ["keep", "new", "sub"])
            #expect(try await fs.lookup(parent: d, name: "new").size == 2)
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: d, name: "gone") }
            #expect(try await names(fs, try await inode(fs, "/d/sub")) == ["inside"])
        }

        /// The fill in one chain (parallelism 1) whose first page is asked late: a folder listed
        /// by itself meanwhile takes a newer sequence but an older snapshot, so the chain's pages
        /// do not land in it. A file added between the two snapshots is in neither that listing nor
        /// any change after the chain's own cursor: the fill must apply the changes since a cursor
        /// taken before the chain, as the parallel fill does.
        @Test func aChangeBetweenAFolderListingAndTheLaterChainOfTheFillIsNotLost() async throws {
            let fake = InMemoryDropbox()
            fake.longpollSecond = .milliseconds(5)
            fake.addFile("/d/keep", size: 1)
            fake.addFile("/e/f", size: 1)
            let gated = GatedClient(fake)
            let first = GatedClient.Call(listing: .init(path: "", recursive: true), page: 0)
            gated.hold(first)
            let fs = Filesystem(
                client: gated,
                options: options(
                    pageLimit: 2, prefetch: true, watchChanges: true, prefetchWait: 0.01, longpollTimeout: 30,
                    fill: FillOptions(parallelism: 1)))
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the whole-account listing asked for its first page") { gated.hasArrived(first) }

            let d = try await inode(fs, "/d")
            #expect(try await names(fs, d) == ["keep"], "/d listed by itself, before the change")
            fake.addFile("/d/new", size: 2)
            gated.release(first)  // the chain's snapshot, taken now, has /d/new
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            try await waitUntil("the whole-account listing ended") { listingsIdle(fs) }

            #expect(try await names(fs, d) == ["keep", "new"])
            #expect(try await fs.lookup(parent: d, name: "new").size == 2)
        }

        /// A listing in flight whose folder is removed, and whose index a new folder takes, is not
        /// applied to the new folder: the listing names its folder by index and generation.
        @Test func aListingOfARemovedFolderNeverLandsOnTheFolderThatReusedItsIndex() async throws {
            let fake = InMemoryDropbox()
            fake.longpollSecond = .milliseconds(5)
            fake.addFile("/old/a", size: 1)
            let old = try #require(id(of: fake.entry("/old")))
            let gated = GatedClient(fake)
            let held = GatedClient.Call(listing: .init(path: old, recursive: false), page: 0)
            gated.holdReply(held)
            let fs = Filesystem(client: gated, options: options(watchChanges: true, longpollTimeout: 30))
            fs.startSync()
            defer { fs.stop() }
            let oldInode = try await inode(fs, "/old")  // lists the root, not /old
            let user = Task { try await names(fs, oldInode) }
            try await waitUntil("the listing of /old was answered") { gated.hasArrived(held) }
            try await waitUntil("the watcher longpolls") { fake.callCount(.listFolderLongpoll) >= 1 }

            fake.delete("/old")
            fake.addFolder("/new")
            let root = MetadataTree.rootIndex
            let newIndex = try await {
                var found: UInt32?
                try await waitUntil("the watcher applied the changes") {
                    found = fs.tree.read { t -> UInt32? in
                        guard case .found(let index) = t.tree.lookup(parent: root, key: FoldKey("new")) else { return nil }
                        return index
                    }
                    return found != nil
                }
                return found!
            }()
            try #require(UInt64(newIndex) == oldInode, "the new folder took the removed one's index")

            gated.release(held)
            _ = try? await user.value
            try await waitUntil("the listing ended") { listingsIdle(fs) }
            #expect(try await names(fs, UInt64(newIndex)) == [], "the new folder is empty")
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
        }
    }
}
