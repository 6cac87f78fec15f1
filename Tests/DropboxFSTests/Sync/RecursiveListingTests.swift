// The whole-tree listing (prefetch): one recursive list_folder plus its continue pages fills every
// folder, after which a full walk costs no request; a walk that runs during the fill sees the
// complete, correct tree however it races the background listing (lazy listings, subtree listings).

import DropboxAPI
import DropboxTestSupport
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct RecursiveListingTests {
        static func randomFake(seed: UInt64, entries: Int, nasty: Bool = false) -> InMemoryDropbox {
            let fake = InMemoryDropbox()
            var builder = TreeBuilder(fake, seed: seed, nasty: nasty)
            builder.add(entries: entries)
            return fake
        }

        @Test func afterTheFillEveryFolderIsCompleteAndAWalkMakesNoRequest() async throws {
            let fake = Self.randomFake(seed: 11, entries: 150)
            let total = fake.entryCount
            let fs = Filesystem(client: fake, options: options(pageLimit: 7, prefetch: true))
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the whole-tree listing completed") { try rootIsComplete(fs) }

            let pages = (total + 6) / 7
            #expect(fake.callCount(.listFolder) == 1)
            #expect(fake.callCount(.listFolderContinue) == pages - 1)
            #expect(fake.listFolderArgs == [ListFolderArg(path: "", recursive: true, limit: 7)])
            #expect(statusField(fs, "pages") == pages)
            #expect(fs.entryCount == total + 1)
            #expect(fake.callCount(.listFolderGetLatestCursor) == 0, "no watcher was asked for")

            let requests = fake.calls
            let core = try await walk(fs)
            #expect(fake.calls == requests, "every folder is complete")
            let expected = try await reference(fake)
            #expect(differences(core: core, expected: expected) == [])
            #expect(core.count == total)
        }

        @Test func missingNamesAnywhereAreAnsweredWithoutRequests() async throws {
            let fake = Self.randomFake(seed: 12, entries: 80)
            let fs = Filesystem(client: fake, options: options(pageLimit: 50, prefetch: true))
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the whole-tree listing completed") { try rootIsComplete(fs) }
            let requests = fake.calls
            var folders: [UInt64] = [Filesystem.rootInode]
            while let folder = folders.popLast() {
                #expect(try fs.lookupCached(parent: folder, name: ".hidden") == .notFound)
                #expect(try fs.lookupCached(parent: folder, name: "desktop.ini") == .notFound)
                #expect(try fs.isDirectoryReady(folder))
                for entry in try fs.directoryEntries(folder, from: 2) where entry.attributes.kind == .folder {
                    folders.append(entry.attributes.inode)
                }
            }
            #expect(fake.calls == requests)
        }

        /// A walk started with the fill: it waits for the fill, lists folders itself, or starts
        /// subtree listings, depending on the knobs; the answer must always be the whole tree.
        @Test(arguments: [
            (0.5, 2.0),  // waits for the fill
            (0.0, 100.0),  // lists every folder itself at once
            (0.003, 0.0),  // waits a little, then starts subtree listings
            (0.0, 0.0),  // starts subtree listings and lists folders itself
        ])
        func aWalkDuringTheFillSeesTheWholeTree(prefetchWait: Double, subtreeListingAfter: Double) async throws {
            for seed in [21, 22, 23] as [UInt64] {
                let fake = Self.randomFake(seed: seed, entries: 120, nasty: true)
                fake.latency = .milliseconds(1)
                let fs = Filesystem(
                    client: fake,
                    options: options(
                        pageLimit: 5, prefetch: true, prefetchWait: prefetchWait, subtreeListingAfter: subtreeListingAfter))
                fs.startSync()
                defer { fs.stop() }
                let during = try await walk(fs)
                let expected = try await reference(fake)
                #expect(differences(core: during, expected: expected) == [], "seed \(seed), walk during the fill")

                try await waitUntil("the fill and every subtree listing ended") { try rootIsComplete(fs) && listingsIdle(fs) }
                let requests = fake.calls
                let after = try await walk(fs)
                #expect(differences(core: after, expected: expected) == [], "seed \(seed), walk after the fill")
                #expect(fake.calls == requests, "seed \(seed): no request after the fill")
            }
        }

        /// A subtree listing started by a walk must not drop entries that the whole-account listing
        /// applied while the subtree listing was still running (a forced interleaving).
        @Test func aSubtreeListingKeepsEntriesTheWholeListingSawMeanwhile() async throws {
            let fake = InMemoryDropbox()
            for i in 1...6 { fake.addFile("/F/f\(i)", size: UInt64(i)) }
            let folderId = try #require(id(of: fake.entry("/F")))
            let gated = GatedClient(fake)
            let whole = GatedClient.Call(listing: .init(path: "", recursive: true), page: 0)
            let subtreeLast = GatedClient.Call(listing: .init(path: folderId, recursive: true), page: 3)
            gated.hold(whole)
            gated.hold(subtreeLast)
            let clock = ManualClock(start: 100)
            let fs = Filesystem(
                client: gated,
                options: options(pageLimit: 2, prefetch: true, prefetchWait: 0, subtreeListingAfter: 10, clock: clock))
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the whole-account listing asked for its first page") { gated.hasArrived(whole) }
            clock.advance(by: 100)

            // The walk: the root is listed by itself, entering F starts a subtree listing of F.
            let f = try await fs.lookup(parent: Filesystem.rootInode, name: "F")
            #expect(try await names(fs, f.inode) == ["f1", "f2", "f3", "f4", "f5", "f6"])
            try await waitUntil("the subtree listing applied 3 pages and asked for its last") {
                statusField(fs, "pages") == 3 && gated.hasArrived(subtreeLast)
            }
            // The whole-account listing now runs to its end (4 pages), then the subtree listing ends.
            gated.release(whole)
            try await waitUntil("the whole-account listing applied its pages") { statusField(fs, "pages") == 7 }
            gated.release(subtreeLast)
            try await waitUntil("every listing ended") { listingsIdle(fs) }

            #expect(try await names(fs, f.inode) == ["f1", "f2", "f3", "f4", "f5", "f6"])
            for i in 1...6 {
                #expect(try fs.lookupCached(parent: f.inode, name: "f\(i)") != .notFound, "f\(i)")
            }
        }

        /// Entries are placed by their path_lower; a name starting with a character that joins the
        /// preceding "/" into one Character (combining mark, ZWJ, emoji modifier) must still be
        /// placed in its own folder.
        @Test(arguments: ["\u{301}x", "\u{200D}zwj", "\u{1F3FD}tone", "\u{FE0F}vs"])
        func aNameStartingWithAJoiningCharacterIsPlacedInItsFolder(name: String) async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/dir/zz-joined", size: 4)
            fake.addFile("/dir/plain", size: 5)
            let client = RenamingClient(fake, renames: ["zz-joined": name])
            let fs = Filesystem(client: client, options: options(prefetch: true))
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the whole-tree listing completed") { try rootIsComplete(fs) }
            #expect(try await names(fs, Filesystem.rootInode) == ["dir"])
            let dir = try await inode(fs, "/dir")
            #expect(try await names(fs, dir).map { Array($0.utf8) } == [Array("plain".utf8), Array(name.utf8)])
            #expect(try await fs.lookup(parent: dir, name: name).size == 4)
        }

        /// SEMANTICS: a request for a folder the fill has not finished waits up to prefetchWait for
        /// it, then lists that folder alone.
        @Test func aRequestWaitsForTheFillThenListsTheFolderAlone() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/F/a", size: 1)
            let folderId = try #require(id(of: fake.entry("/F")))
            let gated = GatedClient(fake)
            let whole = GatedClient.Call(listing: .init(path: "", recursive: true), page: 0)
            gated.hold(whole)
            let fs = Filesystem(
                client: gated, options: options(prefetch: true, prefetchWait: 0.05, subtreeListingAfter: 1_000))
            fs.startSync()
            defer {
                fs.stop()
                gated.release(whole)
            }
            try await waitUntil("the fill started") { gated.hasArrived(whole) }
            let f = try await inode(fs, "/F")  // the root is the fill's own top: listed at once
            let clock = ContinuousClock()
            let start = clock.now
            #expect(try await names(fs, f) == ["a"])
            #expect(clock.now - start >= .milliseconds(50), "waited for the fill first")
            // (The held whole-account listing has not reached the fake.)
            #expect(fake.listFolderArgs.map { "\($0.path) \($0.recursive)" } == [" false", "\(folderId) false"])
        }

        /// SEMANTICS: a lookup (someone opening a path) does not wait for the fill: each folder on
        /// the path the fill has not brought yet is listed alone at once.
        @Test func aLookupDoesNotWaitForTheFill() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/F/G/a.txt", size: 3)
            let gated = GatedClient(fake)
            let whole = GatedClient.Call(listing: .init(path: "", recursive: true), page: 0)
            gated.hold(whole)
            let fs = Filesystem(client: gated, options: options(prefetch: true, prefetchWait: 120, subtreeListingAfter: 1_000))
            fs.startSync()
            defer {
                fs.stop()
                gated.release(whole)
            }
            try await waitUntil("the fill started") { gated.hasArrived(whole) }
            let clock = ContinuousClock()
            let start = clock.now
            let a = try await inode(fs, "/F/G/a.txt")
            #expect(clock.now - start < .seconds(60), "a 120 s wait for the fill would show here")
            #expect(try fs.attributes(of: a).size == 3)
            #expect(fake.listFolderArgs.filter { !$0.recursive }.count == 3, "the root, F and G, each alone")
        }

        @Test func aRequestCoveredByAFillThatEndsMeanwhileMakesNoRequest() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/F/a", size: 1)
            let gated = GatedClient(fake)
            let whole = GatedClient.Call(listing: .init(path: "", recursive: true), page: 0)
            gated.hold(whole)
            let fs = Filesystem(client: gated, options: options(prefetch: true, prefetchWait: 120, subtreeListingAfter: 1_000))
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the fill started") { gated.hasArrived(whole) }
            let f = try await inode(fs, "/F")
            let waiting = Task { try await names(fs, f) }
            gated.release(whole)
            #expect(try await waiting.value == ["a"])
            #expect(fake.listFolderArgs.map { "\($0.path) \($0.recursive)" } == [" false", " true"])
        }

        /// SEMANTICS: once the fill has run longer than subtreeListingAfter, a walk entering an
        /// unfilled folder gets a recursive listing of that subtree.
        @Test func aWalkIntoALongFillStartsASubtreeListing() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/F/G/deep", size: 1)
            let folderId = try #require(id(of: fake.entry("/F")))
            let gated = GatedClient(fake)
            let whole = GatedClient.Call(listing: .init(path: "", recursive: true), page: 0)
            gated.hold(whole)
            let clock = ManualClock()
            let fs = Filesystem(
                client: gated,
                options: options(prefetch: true, prefetchWait: 30, subtreeListingAfter: 2, clock: clock))
            fs.startSync()
            defer {
                fs.stop()
                gated.release(whole)
            }
            try await waitUntil("the fill started") { gated.hasArrived(whole) }
            clock.advance(by: 3)
            let f = try await inode(fs, "/F")
            #expect(try await names(fs, f) == ["G"])
            let g = try await inode(fs, "/F/G")
            try await waitUntil("the subtree listing ended") { try fs.lookupCached(parent: g, name: "x") == .notFound }
            #expect(try await names(fs, g) == ["deep"])
            #expect(fake.listFolderArgs.contains(ListFolderArg(path: folderId, recursive: true, limit: 2000)))
        }

        /// stop() (unmount) ends the whole-tree listing: at most the page already asked for ahead
        /// is fetched after it, never the one after that.
        @Test func stopEndsTheBackgroundFill() async throws {
            let fake = InMemoryDropbox()
            for i in 0..<10 { fake.addFile("/f\(i)", size: 1) }
            let gated = GatedClient(fake)
            let fill = GatedClient.Listing(path: "", recursive: true)
            gated.hold(.init(listing: fill, page: 2))
            let fs = Filesystem(client: gated, options: options(pageLimit: 1, prefetch: true))
            fs.startSync()
            try await waitUntil("the fill asked for its third page") { gated.hasArrived(.init(listing: fill, page: 2)) }
            fs.stop()
            gated.release(.init(listing: fill, page: 2))
            let fourth = GatedClient.Call(listing: fill, page: 4)
            try await waitUntil("the fill ended or went on") { gated.hasArrived(fourth) || listingsIdle(fs) }
            #expect(!gated.hasArrived(fourth), "the fill kept listing after stop()")
        }
    }
}
