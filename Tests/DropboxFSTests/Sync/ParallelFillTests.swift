// The whole-account fill over parallel branches (Sync/ParallelFill.swift): the cursor first, the
// root by itself, each top-level folder recursively (big branches split), then the changes since
// the cursor. Whatever the listing shapes (adversarial modes) and whatever changes land while the
// branches are listed, the filled tree is the account; a walk during the fill sees it too; the
// requests stay close to the pages the data needs.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Synchronization
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct ParallelFillTests {
        static let parallel = FillOptions(parallelism: 4, maxListings: 64, splitAfterPages: 2)

        static func fake(seed: UInt64, entries: Int, modes: AdversarialModes = AdversarialModes()) -> InMemoryDropbox {
            let fake = InMemoryDropbox(adversarial: modes, adversarialSeed: seed)
            var builder = TreeBuilder(fake, seed: seed, nasty: true)
            builder.add(entries: entries)
            return fake
        }

        static func mount(_ client: some DropboxClient, fill: FillOptions = parallel, pageLimit: UInt32 = 7) -> Filesystem {
            Filesystem(
                client: client,
                options: options(pageLimit: pageLimit, prefetch: true, watchChanges: true, longpollTimeout: 30, fill: fill))
        }

        /// The fake's call counts once they stopped changing: a split branch's listing may still
        /// have its next page in flight (asked before it stopped) when the fill is done.
        static func settledCalls(_ fake: InMemoryDropbox) async throws -> [String: Int] {
            var last = fake.calls
            while true {
                try await Task.sleep(for: .milliseconds(50))
                let now = fake.calls
                if now == last { return now }
                last = now
            }
        }

        /// The recursive listings asked of the fake, by path.
        static func recursiveListings(_ fake: InMemoryDropbox) -> [String] {
            fake.listFolderArgs.filter(\.recursive).map(\.path)
        }

        @Test(arguments: [AdversarialModes(), .all], [1, 2, 3] as [UInt64])
        func theFilledTreeIsTheAccount(modes: AdversarialModes, seed: UInt64) async throws {
            let fake = Self.fake(seed: seed, entries: 250, modes: modes)
            let fs = Self.mount(fake)
            fs.startSync()
            defer { fs.stop() }
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            #expect(statusField(fs, "phase") == nil || fs.syncStatus().contains("phase=watching"))

            // The cursor came first, then the root by itself, then branches (not the root) recursively.
            let args = fake.listFolderArgs
            #expect(args.first == ListFolderArg(path: "", recursive: false, limit: 7))
            #expect(fake.callCount(.listFolderGetLatestCursor) == 1)
            let branches = Self.recursiveListings(fake)
            #expect(!branches.contains(""), "the root is never listed recursively")
            #expect(branches.count >= 2, "\(branches)")

            let requests = try await Self.settledCalls(fake)
            let core = try await walk(fs)
            #expect(fake.calls == requests, "every folder is complete after the fill")
            #expect(differences(core: core, expected: try await reference(fake)) == [])
        }

        /// Changes while the branches are listed: one branch's first page is held while the account
        /// changes (adds, modifications, deletions, moves across branches, a folder replaced by a
        /// file, hostile names), then released. The tree must end as the account, not as any
        /// branch's snapshot.
        @Test(arguments: [AdversarialModes(), .all], [4, 5, 6, 7] as [UInt64])
        func changesDuringTheFillEndInTheAccountState(modes: AdversarialModes, seed: UInt64) async throws {
            let fake = InMemoryDropbox(adversarial: modes, adversarialSeed: seed)
            fake.longpollSecond = .milliseconds(5)
            var mutator = ReferenceModelTests.Mutator(builder: TreeBuilder(fake, seed: seed, nasty: true))
            mutator.builder.add(entries: 200)
            for name in ["Alpha", "Beta"] {
                for i in 0..<12 { fake.addFile("/\(name)/sub\(i % 3)/f\(i).txt", size: UInt64(i)) }
            }
            let alpha = try #require(id(of: fake.entry("/Alpha")))
            let gated = GatedClient(fake)
            let held = GatedClient.Call(listing: .init(path: alpha, recursive: true), page: 0)
            gated.hold(held)
            let fs = Self.mount(gated)
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the fill asked for the first page of /Alpha") { gated.hasArrived(held) }

            var log: [String] = []
            for _ in 0..<15 { try await mutator.mutate(log: &log) }
            fake.move(from: "/Beta/sub1", to: "/Alpha/from-beta")
            fake.delete("/Beta/sub2")
            fake.addFile("/Beta/sub2", size: 7)  // a folder replaced by a file
            fake.addFile("/Alpha/sub0/new.txt", size: 3)
            log += ["move /Beta/sub1 -> /Alpha/from-beta", "replace /Beta/sub2 by a file", "add /Alpha/sub0/new.txt"]
            gated.release(held)

            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            let expected = try await reference(fake)
            #expect(differences(core: try await walk(fs), expected: expected) == [], "seed \(seed): \(log)")
            try await ChangeWatcherTests.catchUp(fs, fake, round: 1)
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [], "after a catch-up")
        }

        /// A walk racing the fill (waiting for branches, promoting queued ones, listing folders by
        /// itself) sees the whole tree, and nothing is listed after the fill.
        @Test(arguments: [0.5, 0.0] as [Double])
        func aWalkDuringTheFillSeesTheWholeTree(prefetchWait: Double) async throws {
            for seed in [31, 32] as [UInt64] {
                // Not `.replace`: its bogus entry of the other kind stands until the real one
                // comes, so a walk racing that listing may see it (the chain does too).
                let fake = Self.fake(seed: seed, entries: 200, modes: AdversarialModes.all.subtracting(.replace))
                fake.latency = .milliseconds(1)
                let fs = Filesystem(
                    client: fake,
                    options: options(pageLimit: 5, prefetch: true, prefetchWait: prefetchWait, fill: Self.parallel))
                fs.startSync()
                defer { fs.stop() }
                let expected = try await reference(fake)
                let duringDiff = differences(core: try await walk(fs), expected: expected)
                #expect(duringDiff == [], "seed \(seed), during the fill: \(duringDiff)")
                #expect(await fs.waitUntilCaughtUp(seconds: 60))
                try await waitUntil("the fill's listings ended") { listingsIdle(fs) }
                let requests = try await Self.settledCalls(fake)
                #expect(differences(core: try await walk(fs), expected: expected) == [], "seed \(seed), after")
                #expect(fake.calls == requests, "seed \(seed): no request after the fill")
            }
        }

        /// One big branch with a few subfolders: it is split (its folder listed by itself, each
        /// subfolder recursively) while slots are idle, and the tree is still exact.
        @Test func aBigBranchIsSplitIntoItsSubfolders() async throws {
            let fake = InMemoryDropbox(adversarial: .all, adversarialSeed: 3)
            for i in 0..<120 { fake.addFile("/Big/part\(i % 4)/deep\(i % 3)/f\(i)", size: UInt64(i)) }
            for i in 0..<5 { fake.addFile("/Big/top\(i).txt", size: 1) }
            fake.addFile("/Small/a.txt", size: 1)
            fake.latency = .milliseconds(2)
            // A small account: the request budget of a real fill would allow no split here.
            let fs = Self.mount(
                fake, fill: FillOptions(parallelism: 4, maxListings: 64, splitAfterPages: 2, requestSlack: 1000), pageLimit: 5)
            fs.startSync()
            defer { fs.stop() }
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            let big = try #require(id(of: fake.entry("/Big")))
            let parts = try (0..<4).map { try #require(id(of: fake.entry("/Big/part\($0)"))) }
            let recursive = Self.recursiveListings(fake)
            #expect(recursive.contains(big))
            #expect(Set(parts).isSubset(of: Set(recursive)), "every subfolder of the split branch listed: \(recursive)")
            #expect(fake.listFolderArgs.contains(ListFolderArg(path: big, recursive: false, limit: 5)))
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
        }

        /// Requests stay close to the pages the data needs: at most 1.3 times, plus 20.
        @Test func requestsStayCloseToThePagesTheDataNeeds() async throws {
            let fake = InMemoryDropbox()
            for top in 0..<6 {
                for i in 0..<(top == 0 ? 600 : 150) { fake.addFile("/T\(top)/s\(i % 5)/f\(i)", size: 1) }
            }
            let fs = Self.mount(fake, fill: FillOptions(parallelism: 4), pageLimit: 20)
            fs.startSync()
            defer { fs.stop() }
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            let pagesNeeded = (fake.entryCount + 19) / 20
            let listingRequests =
                fake.callCount(.listFolder) + fake.callCount(.listFolderContinue) + fake.callCount(.listFolderGetLatestCursor)
            #expect(listingRequests <= pagesNeeded * 13 / 10 + 20, "\(fake.calls), \(pagesNeeded) pages needed")
            #expect(Self.recursiveListings(fake).count >= 6)
        }

        /// More top-level folders than the fill may list one by one: the account is listed in one
        /// chain, as with parallelism 1.
        @Test func manyTopLevelFoldersAreListedInOneChain() async throws {
            let fake = InMemoryDropbox()
            for i in 0..<30 { fake.addFile("/folder\(i)/f.txt", size: 1) }
            let fs = Self.mount(fake, fill: FillOptions(parallelism: 4, maxListings: 10))
            fs.startSync()
            defer { fs.stop() }
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            #expect(Self.recursiveListings(fake) == [""])
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
        }

        /// A branch whose listing fails is listed again after a pause; the failure shows in the status.
        @Test func aFailedBranchIsListedAgain() async throws {
            let fake = InMemoryDropbox()
            for top in ["A", "B", "C"] {
                for i in 0..<10 { fake.addFile("/\(top)/f\(i)", size: 1) }
            }
            let faulty = FaultInjectingClient(fake)
            // Call 1 lists the root by itself; 2 and 3 are branches.
            faulty.failCall(number: 2, of: .listFolder, with: .serverError(status: 500))
            var options = options(pageLimit: 4, prefetch: true, watchChanges: true, fill: FillOptions(parallelism: 2))
            options.fillRetryScale = 0.01
            let fs = Filesystem(client: faulty, options: options)
            fs.startSync()
            defer { fs.stop() }
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            #expect(statusField(fs, "fill_failures") == 1)
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
        }

        /// A failed branch costs requests beyond the data's pages: the one that failed, and the
        /// listing started again. The request budget counts them, so a branch the server failed a
        /// few times leaves no room for a split the same fill makes without the failures. (They
        /// went uncounted, and a flaky server could push a fill past its request target.)
        @Test(arguments: [0, 10])
        func failedBranchesCountAgainstTheRequestBudget(failures: Int) async throws {
            let fake = InMemoryDropbox()
            for i in 0..<60 { fake.addFile("/Big/part\(i % 2)/f\(i)", size: 1) }
            fake.addFile("/Flaky/a.txt", size: 1)
            let big = GatedClient.Listing(path: try #require(id(of: fake.entry("/Big"))), recursive: true)
            let gated = GatedClient(fake)
            gated.hold(.init(listing: big, page: 0))
            let flaky = FailingListingClient(
                gated, path: try #require(id(of: fake.entry("/Flaky"))), failures: failures)
            // /Big is 13 pages at 5 entries a page; a split after its 2nd page into its 2
            // subfolders costs about 12 requests of a budget of 31 (the slack of 30 leaves room
            // for a late split on a loaded machine), and each failure costs 2 more.
            var options = options(
                pageLimit: 5, prefetch: true,
                fill: FillOptions(parallelism: 2, maxListings: 64, splitAfterPages: 2, requestSlack: 30))
            options.fillRetryScale = 0.001
            let fs = Filesystem(client: flaky, options: options)
            fs.startSync()
            defer { fs.stop() }
            // /Big starts listing once /Flaky has failed its times and been listed again.
            try await waitUntil("/Flaky listed \(failures + 1) times") { flaky.attempts == failures + 1 }
            gated.release(.init(listing: big, page: 0))
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            let parts = try (0..<2).map { try #require(id(of: fake.entry("/Big/part\($0)"))) }
            let recursive = Set(Self.recursiveListings(fake))
            if failures == 0 {
                #expect(Set(parts).isSubset(of: recursive), "the split fits the budget: \(recursive)")
            } else {
                #expect(Set(parts).isDisjoint(with: recursive), "a split past the budget: \(recursive)")
            }
            #expect((statusField(fs, "fill_failures") ?? 0) == failures)
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
        }

        /// A branch that cannot connect takes the mount offline. The fill keeps trying through the
        /// sync engine's client, as the one-chain fill does, and so brings the mount back: it is
        /// the only thing running (the watcher starts after it). Through the user's client, which
        /// fails at once while offline, the branch failed again and again and the mount stayed
        /// offline.
        @Test func aBranchThatCouldNotConnectIsListedAgainOnceDropboxAnswers() async throws {
            let fake = InMemoryDropbox()
            // One branch: no other request of the fill succeeds meanwhile and brings the mount back.
            for i in 0..<10 { fake.addFile("/A/f\(i)", size: 1) }
            let faulty = FaultInjectingClient(fake)
            // Call 1 lists the root by itself; 2 is the branch /A.
            faulty.failCall(
                number: 2, of: .listFolder, with: .transport(TransportError(kind: .couldNotConnect, message: "refused")))
            var options = options(pageLimit: 4, prefetch: true, watchChanges: true, fill: FillOptions(parallelism: 2))
            options.fillRetryScale = 0.01
            let fs = Filesystem(client: faulty, options: options)
            fs.startSync()
            defer { fs.stop() }
            #expect(await fs.waitUntilCaughtUp(seconds: 60), "status: \(fs.syncStatus())")
            #expect(!fs.connectivity.isOffline, "status: \(fs.syncStatus())")
            #expect(statusField(fs, "fill_failures") == 1)
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
        }

        /// A cursor reset shows in the status with the refill it starts: phase=filling, and the
        /// refill's own running time, not the finished time of the fill before it.
        @Test func aResetShowsTheRefillAtOnce() async throws {
            let fake = InMemoryDropbox()
            fake.longpollSecond = .milliseconds(5)
            for i in 0..<20 { fake.addFile("/A/f\(i)", size: 1) }
            let faulty = FaultInjectingClient(fake)
            let fs = Filesystem(
                client: faulty,
                options: options(pageLimit: 7, prefetch: true, watchChanges: true, longpollTimeout: 30, fill: Self.parallel))
            fs.startSync()
            defer { fs.stop() }
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            func fillSeconds() -> Double? {
                fs.syncStatus().split(separator: " ").first { $0.hasPrefix("fill_seconds=") }
                    .flatMap { Double($0.dropFirst("fill_seconds=".count)) }
            }
            faulty.hold(.listFolderGetLatestCursor)
            fake.resetCursors()
            try await waitUntil("the refill to ask for its cursor") { faulty.heldCalls(.listFolderGetLatestCursor) == 1 }
            let status = fs.syncStatus()
            #expect(status.contains("resets=1") && status.contains("phase=filling"), "\(status)")
            // The refill's running time grows while it waits; the last fill's would stay put
            // (however long that fill took on a loaded machine).
            let early = try #require(fillSeconds(), "\(status)")
            try await Task.sleep(for: .milliseconds(500))
            let later = try #require(fillSeconds())
            #expect(later > early, "the refill's own running time: \(early) s, then \(later) s")
            faulty.release(.listFolderGetLatestCursor)
            try await waitUntil("the refill to end") { fs.syncStatus().contains("phase=watching") }
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
        }

        /// A refill after a cursor reset, over branches, while the stored tree is served: the tree
        /// ends as the account (branches replaced or moved meanwhile included).
        @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
        func aResetRefillOverBranchesEndsAsTheAccount(seed: UInt64) async throws {
            let folder = TreeStoreTests.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let fake = InMemoryDropbox(adversarial: .all, adversarialSeed: seed)
            fake.longpollSecond = .milliseconds(5)
            var mutator = ReferenceModelTests.Mutator(builder: TreeBuilder(fake, seed: 9, nasty: false))
            mutator.builder.add(entries: 120)
            _ = try await TreeStoreTests.firstMount(fake, folder: folder, mutator: &mutator)
            var log: [String] = []
            for _ in 0..<10 { try await mutator.mutate(log: &log) }
            fake.resetCursors()
            let store = try TreeStoreTests.open(folder)
            defer { store.close() }
            let stored = try #require(store.loadTree(folderTime: CoreTests.folderTime, now: 0))
            var options = CoreTests.options(
                pageLimit: 7, prefetch: true, watchChanges: true, longpollTimeout: 30, fill: Self.parallel)
            options.store = store
            let fs = Filesystem(client: fake, options: options, restoring: stored)
            defer { fs.stop() }
            fs.startSync()
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            #expect(fs.syncStatus().contains("resets=1"))
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [], "\(log)")
        }

        /// The fill and the change watcher run below the requests' priority: on Linux each priority
        /// has its own threads, so a lookup is not queued behind pages being decoded and applied.
        /// A request's own listing keeps the priority of the task that asked.
        @Test func theFillRunsBelowTheRequests() async throws {
            let fake = Self.fake(seed: 11, entries: 120)
            let client = FaultInjectingClient(fake)
            let fs = Self.mount(client)
            fs.startSync()
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            fs.stop()
            #expect(client.priorities(.listFolderGetLatestCursor) == [.utility])
            #expect(client.priorities(.listFolder) == [.utility])
            #expect(client.priorities(.listFolderContinue) == [.utility])

            let lazyClient = FaultInjectingClient(fake)
            let lazy = Filesystem(client: lazyClient, options: options(pageLimit: 7))
            let names = try await Task(priority: .userInitiated) { try await CoreTests.names(lazy, Filesystem.rootInode) }.value
            #expect(!names.isEmpty)
            #expect(lazyClient.priorities(.listFolder) == [.userInitiated])
        }

        /// A readdir waiting for a queued branch (for a folder below its top) moves it to the front
        /// and runs it at the requests' priority; the other branches stay below.
        @Test func aBranchARequestWaitsForRunsAtTheRequestsPriority() async throws {
            let fake = InMemoryDropbox()
            let names = ["A", "B", "C", "D"]
            for name in names {
                for i in 0..<6 { fake.addFile("/\(name)/sub\(i % 2)/f\(i).txt", size: UInt64(i)) }
            }
            let gated = GatedClient(fake)
            let branches = try names.map { name in
                GatedClient.Listing(path: try #require(id(of: fake.entry("/\(name)"))), recursive: true)
            }
            for branch in branches { gated.hold(.init(listing: branch, page: 0)) }
            // Two branches at a time (both held), no splits, and a readdir that waits for its branch.
            let fs = Filesystem(
                client: gated,
                options: options(
                    pageLimit: 3, prefetch: true, prefetchWait: 60,
                    fill: FillOptions(parallelism: 2, maxListings: 64, splitAfterPages: 1000)))
            fs.startSync()
            defer { fs.stop() }
            func started() -> [Int] { branches.indices.filter { gated.hasArrived(.init(listing: branches[$0], page: 0)) } }
            try await waitUntil("the fill started two branches") { started().count == 2 }
            let first = started()[0]
            let last = try #require(branches.indices.last { !started().contains($0) })
            let name = names[last]
            // A subfolder: the branch's own folder is listed by itself (its lookup of sub0 did so).
            let readdir = Task(priority: TaskPriorities.requests) {
                try await CoreTests.names(fs, try await CoreTests.inode(fs, "/\(name)/sub0"))
            }
            try await waitUntil("the readdir promoted its queued branch") {
                fs.sync.state.withLock { s in s.fillQueue.map { q in q.waiting.contains { q.isPromoted($0) } } ?? false }
            }
            for branch in branches { gated.release(.init(listing: branch, page: 0)) }
            #expect(try await readdir.value.sorted() == ["f0.txt", "f2.txt", "f4.txt"])
            #expect(gated.priorities(branches[last]) == [TaskPriorities.requests])
            #expect(gated.priorities(branches[first]) == [TaskPriorities.background])
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
        }
    }
}

/// Fails the first `failures` recursive listings of one folder (`path`) with a 500, as a flaky
/// server does; everything else goes through.
private final class FailingListingClient: ForwardingClient, Sendable {
    let forwardee: any DropboxClient
    private let path: String
    private let failures: Int
    /// Recursive listings of `path` asked so far, failed ones included.
    private let asked = Mutex(0)

    init(_ forwardee: any DropboxClient, path: String, failures: Int) {
        self.forwardee = forwardee
        self.path = path
        self.failures = failures
    }

    var attempts: Int { asked.withLock { $0 } }

    func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
        if arg.recursive, arg.path == path {
            let attempt = asked.withLock { count in
                count += 1
                return count
            }
            if attempt <= failures { throw .serverError(status: 500) }
        }
        return try await forwardee.listFolder(arg)
    }
}
