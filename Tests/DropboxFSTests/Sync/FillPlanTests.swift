// Planning a refill from the tree's sizes (Sync/FillPlan.swift): the pure rule (which branches are
// split, in which order they start), and refills after a cursor reset that split the big branch
// before listing it, also when the sizes are stale, and still end as the account.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct FillPlanTests {
        static func branch(_ folder: UInt32, _ entries: Int, subfolders: Int = 3, children: Int = 10) -> SizedBranch {
            SizedBranch(folder: folder, entries: entries, subfolders: subfolders, children: children)
        }

        static func splits(
            _ branches: [SizedBranch], total: Int, parallelism: Int = 4, minimum: Int = 10, pageLimit: Int = 100,
            room: inout PlanRoom
        ) -> [UInt32] {
            FillPlan.splits(
                branches, total: total, parallelism: parallelism, minimum: minimum, pageLimit: pageLimit, room: &room)
        }

        @Test func theBiggestBranchesStartFirstAndTiesKeepTheirOrder() {
            let plan = FillPlan.ordered([
                Self.branch(1, 10), Self.branch(2, 300), Self.branch(3, 10), Self.branch(4, 0), Self.branch(5, 40),
            ])
            #expect(plan.map(\.folder) == [2, 5, 1, 3, 4])
        }

        @Test func onlyBranchesOverASlotsShareAreSplit() {
            // 1,000 entries over 4 slots: a share of 250.
            let branches = [Self.branch(1, 600), Self.branch(2, 250), Self.branch(3, 100), Self.branch(4, 50)]
            var room = PlanRoom(listings: 100, requests: 100)
            #expect(Self.splits(branches, total: 1000, room: &room) == [1])
            #expect(
                room == PlanRoom(listings: 98, requests: 97),
                "3 subfolders: 2 more listings, and the folder's own listing as a request")
        }

        @Test func aBranchOfAFewPagesWithoutSubfoldersOrWithABigOwnListingIsNotSplit() {
            var room = PlanRoom(listings: 100, requests: 100)
            let small = [Self.branch(1, 30), Self.branch(2, 5)]
            #expect(Self.splits(small, total: 35, minimum: 40, room: &room) == [])
            let flat = [Self.branch(1, 900, subfolders: 0), Self.branch(2, 100)]
            #expect(Self.splits(flat, total: 1000, room: &room) == [])
            // 5,000 photos and one subfolder: its own listing would be a chain of pages while
            // every slot waits.
            let photos = [Self.branch(1, 5500, subfolders: 1, children: 5001), Self.branch(2, 100)]
            #expect(Self.splits(photos, total: 5600, pageLimit: 2000, room: &room) == [])
            #expect(room == PlanRoom(listings: 100, requests: 100))
        }

        @Test func splitsStopWhereEitherRoomEndsBiggestFirst() {
            let branches = [
                Self.branch(1, 400, subfolders: 5), Self.branch(2, 500, subfolders: 6),
                Self.branch(3, 300, subfolders: 2), Self.branch(4, 10),
            ]
            var requests = PlanRoom(listings: 100, requests: 8)
            // 2 first (6 requests), then 1 does not fit (5), 3 does (2).
            #expect(Self.splits(branches, total: 1210, parallelism: 6, room: &requests) == [2, 3])
            #expect(requests == PlanRoom(listings: 94, requests: 0))
            var listings = PlanRoom(listings: 6, requests: 100)
            // 2 first (5 more listings), then 1 does not fit (4), 3 does (1).
            #expect(Self.splits(branches, total: 1210, parallelism: 6, room: &listings) == [2, 3])
            #expect(listings == PlanRoom(listings: 0, requests: 92))
        }

        @Test func aColdFillPlansNoSplit() {
            // A cold fill's top-level folders are empty in the tree.
            var room = PlanRoom(listings: 100, requests: 100)
            let branches = (1...12).map { Self.branch(UInt32($0), 0, subfolders: 0, children: 0) }
            #expect(Self.splits(branches, total: 0, parallelism: 6, minimum: 0, room: &room) == [])
            #expect(FillPlan.ordered(branches).map(\.folder) == Array(1...12))
        }

        /// The account of the refill tests: /Big (four parts of different sizes) is most of it.
        static func account(_ fake: InMemoryDropbox) {
            for (part, count) in [80, 50, 40, 30].enumerated() {
                for i in 0..<count { fake.addFile("/Big/part\(part)/d\(i % 3)/f\(i)", size: UInt64(i)) }
            }
            fake.addFile("/Big/top.txt", size: 1)  // 5 children: its own listing is one page of 5
            for top in ["A", "B", "C"] {
                for i in 0..<8 { fake.addFile("/\(top)/f\(i)", size: 1) }
            }
        }

        /// A mount of `fake` that fills and is stored, then a remount of that tree after a cursor
        /// reset (its refill runs over the stored tree); `change` runs between them.
        static func refill(
            _ fake: InMemoryDropbox, change: (InMemoryDropbox) -> Void = { _ in }
        ) async throws -> (Filesystem, () -> Void) {
            let folder = TreeStoreTests.folder()
            let fill = FillOptions(parallelism: 4, maxListings: 64, splitAfterPages: 1000)
            let options = CoreTests.options(pageLimit: 5, prefetch: true, watchChanges: true, longpollTimeout: 30, fill: fill)
            do {
                let store = try TreeStoreTests.open(folder)
                _ = store.loadTree(folderTime: CoreTests.folderTime, now: 0)
                var options = options
                options.store = store
                let fs = Filesystem(client: fake, options: options)
                fs.startSync()
                #expect(await fs.waitUntilCaughtUp(seconds: 60))
                fs.stop()
                store.close()
            }
            change(fake)
            fake.resetCursors()
            _ = try await ParallelFillTests.settledCalls(fake)
            fake.resetCalls()
            let store = try TreeStoreTests.open(folder)
            let stored = try #require(store.loadTree(folderTime: CoreTests.folderTime, now: 0))
            var refilling = options
            refilling.store = store
            let fs = Filesystem(client: fake, options: refilling, restoring: stored)
            fs.startSync()
            return (fs, {
                fs.stop()
                store.close()
                try? FileManager.default.removeItem(atPath: folder)
            })
        }

        /// A refill splits the branch the stored tree shows as big before listing it: its folder is
        /// listed by itself, its parts recursively, the biggest first, and /Big itself never. The
        /// biggest part (83 entries) is still over a slot's share (241 / 4) and is split in turn.
        @Test(arguments: [AdversarialModes(), .all])
        func aRefillSplitsTheBranchTheTreeShowsAsBig(modes: AdversarialModes) async throws {
            let fake = InMemoryDropbox(adversarial: modes, adversarialSeed: 11)
            Self.account(fake)
            let (fs, close) = try await Self.refill(fake)
            defer { close() }
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            #expect(fs.syncStatus().contains("resets=1"))
            let ids = try ["/Big", "/Big/part0", "/Big/part1", "/Big/part2", "/Big/part3"].map {
                try #require(id(of: fake.entry($0)))
            }
            let deep = try (0..<3).map { try #require(id(of: fake.entry("/Big/part0/d\($0)"))) }
            let recursive = ParallelFillTests.recursiveListings(fake)
            #expect(!recursive.contains(ids[0]) && !recursive.contains(ids[1]), "split folders: \(recursive)")
            #expect(Set(ids[2...] + deep).isSubset(of: Set(recursive)), "\(recursive)")
            // The first 4 listings asked (parallelism 4) are the first 4 started, in any order:
            // the biggest (part1 to part3, then a part of part0), not the small top-level folders.
            let small = try ["/A", "/B", "/C"].map { try #require(id(of: fake.entry($0))) }
            let first = Set(recursive.prefix(4))
            #expect(Set(ids[2...]).isSubset(of: first) && first.isDisjoint(with: small), "\(recursive)")
            for split in ids[0...1] {
                #expect(fake.listFolderArgs.contains(ListFolderArg(path: split, recursive: false, limit: 5)))
            }
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
        }

        /// The tree knew 2 subfolders of /Big; its fresh listing shows 42, more listings than the
        /// request budget allows: /Big stays one branch instead of becoming 42.
        @Test func aSplitWhoseFreshListingOutgrowsTheBudgetStaysOneBranch() async throws {
            let fake = InMemoryDropbox()
            for part in 0..<2 {
                for i in 0..<100 { fake.addFile("/Big/part\(part)/f\(i)", size: 1) }
            }
            for top in ["A", "B", "C"] {
                for i in 0..<8 { fake.addFile("/\(top)/f\(i)", size: 1) }
            }
            let (fs, close) = try await Self.refill(fake) { fake in
                for i in 0..<40 { fake.addFile("/Big/extra\(i)/f.txt", size: 1) }
            }
            defer { close() }
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            let big = try #require(id(of: fake.entry("/Big")))
            let recursive = ParallelFillTests.recursiveListings(fake)
            #expect(fake.listFolderArgs.contains(ListFolderArg(path: big, recursive: false, limit: 5)), "it was split")
            #expect(recursive.count == 4 && recursive.contains(big), "one listing per top-level folder: \(recursive)")
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
        }

        /// The stored sizes are stale: a part of /Big was deleted and a new one made after the tree
        /// was stored. The split follows /Big's fresh listing, not the stored tree.
        @Test(arguments: [AdversarialModes(), .all])
        func aRefillFromStaleSizesEndsAsTheAccount(modes: AdversarialModes) async throws {
            let fake = InMemoryDropbox(adversarial: modes, adversarialSeed: 12)
            Self.account(fake)
            let (fs, close) = try await Self.refill(fake) { fake in
                fake.delete("/Big/part1")
                for i in 0..<20 { fake.addFile("/Big/new part/f\(i)", size: 2) }
            }
            defer { close() }
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            let recursive = ParallelFillTests.recursiveListings(fake)
            let added = try #require(id(of: fake.entry("/Big/new part")))
            #expect(recursive.contains(added), "a part made since is listed: \(recursive)")
            #expect(!recursive.contains(try #require(id(of: fake.entry("/Big")))))
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
        }
    }
}
