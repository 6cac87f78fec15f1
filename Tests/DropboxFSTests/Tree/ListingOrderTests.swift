// The rules for applying listing pages in whatever shape Dropbox sends them (docs/SEMANTICS.md,
// "Listing order"): children before their parents, repeated entries, file <-> folder replacement,
// deletions of unknown paths, hidden names after their children, and a `path_lower` folding that is
// not ours. Each test scripts the exact pages a server may send (ScriptedListingClient), runs the
// real fill, and walks the core; the race tests force a listing and a change batch to overlap.

import DropboxAPI
import DropboxTestSupport
import Synchronization
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct ListingOrderTests {
        // MARK: Entries

        static let time = DropboxTimestamp(secondsSinceEpoch: 1_600_000_000)

        static func file(_ lower: String, _ display: String, size: UInt64 = 1, rev: String = "0123456789") -> Metadata {
            .file(
                FileMetadata(
                    name: last(display), id: "id:file-\(lower)", pathLower: lower, pathDisplay: display,
                    clientModified: time, serverModified: time, rev: rev, size: size))
        }

        static func folder(_ lower: String, _ display: String) -> Metadata {
            .folder(FolderMetadata(name: last(display), id: "id:folder-\(lower)", pathLower: lower, pathDisplay: display))
        }

        static func deleted(_ lower: String, _ display: String) -> Metadata {
            .deleted(DeletedMetadata(name: last(display), pathLower: lower, pathDisplay: display))
        }

        static func last(_ path: String) -> String {
            String(path.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
        }

        /// Fills a core from `pages` (the whole-account listing) and returns it with its client.
        static func filled(_ pages: [[Metadata]], folders: [String: [[Metadata]]] = [:]) async throws
            -> (Filesystem, ScriptedListingClient)
        {
            let client = ScriptedListingClient(root: pages, folders: folders)
            let fs = Filesystem(client: client, options: options(prefetch: true))
            fs.startSync()
            try await waitUntil("the fill completed") { try rootIsComplete(fs) }
            return (fs, client)
        }

        /// The walked tree as "path kind size" lines, sorted.
        static func lines(_ fs: Filesystem) async throws -> [String] {
            try await walk(fs).map { "\(String(decoding: $0.key.bytes, as: UTF8.self)) \($0.value.kind) \($0.value.size)" }.sorted()
        }

        // MARK: Order

        @Test func childrenBeforeTheirFoldersAreKeptAndTheFoldersTakeTheirOwnNames() async throws {
            LogCapture.start()
            let (fs, client) = try await Self.filled([
                [Self.file("/order-a/b/c.txt", "/order-A/b/c.txt", size: 3), Self.file("/order-a/x.txt", "/ORDER-A/x.txt")],
                [],  // an empty page with has_more
                [Self.folder("/order-a/b", "/order-a/B"), Self.folder("/order-a", "/Order-A")],
            ])
            defer { fs.stop() }
            #expect(
                try await Self.lines(fs) == [
                    "/Order-A folder 0", "/Order-A/B folder 0", "/Order-A/B/c.txt file 3", "/Order-A/x.txt file 1",
                ])
            #expect(statusField(fs, "made_folders") == nil)
            #expect(client.listings == 1, "the fill completed every folder: a walk lists nothing")
            #expect(LogCapture.lines(containing: "order-a").isEmpty)
        }

        @Test func aFolderWhoseEntryNeverComesStillShowsItsEntriesAndIsLoggedOnce() async throws {
            LogCapture.start()
            let (fs, _) = try await Self.filled([
                [Self.file("/lost-parent/deep/f.txt", "/Lost-Parent/Deep/f.txt", size: 5)],
                [Self.file("/lost-parent/g.txt", "/lost-parent/g.txt", size: 6)],
            ])
            defer { fs.stop() }
            #expect(
                try await Self.lines(fs) == [
                    "/Lost-Parent folder 0", "/Lost-Parent/Deep folder 0", "/Lost-Parent/Deep/f.txt file 5",
                    "/Lost-Parent/g.txt file 6",
                ])
            #expect(statusField(fs, "made_folders") == 2)
            #expect(LogCapture.lines(containing: "\"/Lost-Parent\"").count == 1)
            #expect(LogCapture.lines(containing: "\"/Lost-Parent/Deep\"").count == 1)
        }

        /// The same on a refill (a cursor reset, the weekly relist): a folder the tree already
        /// holds from an earlier listing, whose own entry the new listing never sends, stays with
        /// what that listing found inside it, rather than removed with its subtree when the listing
        /// ends, as an entry the new snapshot had not seen.
        @Test func aRefillThatNeverListsAKnownFolderKeepsItWithItsEntries() throws {
            var t = LiveTree.State(tree: MetadataTree(folderTime: 0))
            var invalidations: [Invalidation] = []
            let root = MetadataTree.rootIndex
            t.apply(
                [
                    Self.folder("/top", "/top"), Self.folder("/top/sub", "/top/Sub"),
                    Self.file("/top/sub/f.txt", "/top/Sub/f.txt"),
                ],
                as: .listing(epoch: 1), changeEpoch: 0, invalidations: &invalidations)
            t.tree.completeSubtree(root, epoch: 1, at: 0, invalidations: &invalidations)
            // The refill lists everything again but the folder's own entry.
            t.apply(
                [Self.folder("/top", "/top"), Self.file("/top/sub/f.txt", "/top/Sub/f.txt", size: 4)],
                as: .listing(epoch: 2), changeEpoch: 0, invalidations: &invalidations)
            t.tree.completeSubtree(root, epoch: 2, at: 0, invalidations: &invalidations)
            let sub = try #require(t.tree.folder(atKeyPath: "/top/sub"), "the folder was removed")
            guard case .found(let file) = t.tree.lookup(parent: sub, key: FoldKey("f.txt")) else {
                Issue.record("the listed file was removed")
                return
            }
            #expect(t.tree.nodes[Int(file)].size == 4)
        }

        // MARK: Replacement, repeats, unknown deletions

        @Test func theLaterEntryAtAPathReplacesWhateverWasThere() async throws {
            let (fs, _) = try await Self.filled([
                [
                    // A folder with a child, then a file at its path: the file wins, the child goes.
                    Self.folder("/x", "/x"), Self.file("/x/child", "/x/child"),
                    // A file, then an entry below it: the file becomes a folder.
                    Self.file("/y", "/y", size: 9), Self.file("/y/z", "/y/z", size: 2),
                ],
                [
                    Self.file("/x", "/x", size: 4),
                    // A folder listed twice keeps its children.
                    Self.folder("/k", "/k"), Self.file("/k/c", "/k/c"),
                ],
                [Self.folder("/k", "/K"), Self.file("/r.txt", "/r.txt", size: 1, rev: "000000001")],
                [Self.file("/r.txt", "/r.txt", size: 2, rev: "000000002")],
            ])
            defer { fs.stop() }
            #expect(
                try await Self.lines(fs) == [
                    "/K folder 0", "/K/c file 1", "/r.txt file 2", "/x file 4", "/y folder 0", "/y/z file 2",
                ])
        }

        @Test func deletionsOfUnknownPathsChangeNothing() async throws {
            let (fs, _) = try await Self.filled([
                [Self.deleted("/ghost/in/nowhere.tmp", "/ghost/in/nowhere.tmp"), Self.file("/a/b", "/a/b")],
                [Self.deleted("/a/ghost.tmp", "/a/ghost.tmp"), Self.deleted("/ghost", "/ghost"), Self.folder("/a", "/a")],
            ])
            defer { fs.stop() }
            #expect(try await Self.lines(fs) == ["/a folder 0", "/a/b file 1"])
            #expect(fs.entryCount == 3)
        }

        @Test func aHiddenEntryAfterItsChildrenTakesTheFoldersMadeForThemAway() async throws {
            LogCapture.start()
            let (fs, _) = try await Self.filled([
                [Self.file("/hide-e/sub/dir/inside.txt", "/hide-e/sub/dir/inside.txt"), Self.file("/hide-e/ok", "/hide-e/ok")],
                [
                    // A folder named "sub/dir": the kernel cannot carry it.
                    .folder(FolderMetadata(name: "sub/dir", id: "id:evil", pathLower: "/hide-e/sub/dir", pathDisplay: "/hide-e/sub/dir")),
                    Self.folder("/hide-e", "/hide-e"),
                    // Children of a hidden entry that come after it are hidden too.
                    Self.file("/hide-e/sub/dir/later.txt", "/hide-e/sub/dir/later.txt"),
                ],
            ])
            defer { fs.stop() }
            #expect(try await Self.lines(fs) == ["/hide-e folder 0", "/hide-e/ok file 1"])
            #expect(LogCapture.lines(containing: "hide-e/sub/dir").count == 1)
        }

        // MARK: Folding

        /// Dropbox's `path_lower` folds Σ at a word's end to ς, ß to ss, İ to i: not what FoldKey
        /// gives. Entries, lookups and deletions still find each other.
        @Test func aPathLowerFoldingOtherThanOursLosesNothing() async throws {
            let greek = "\u{395}\u{39B}\u{39B}\u{391}\u{3A3}"  // ΕΛΛΑΣ
            let greekLower = "\u{3B5}\u{3BB}\u{3BB}\u{3B1}\u{3C2}"  // ελλας (final sigma)
            let (fs, _) = try await Self.filled([
                [
                    Self.file("/\(greekLower)/\u{3C3}\u{3C2}.txt", "/\(greek)/\u{3A3}\u{3A3}.txt", size: 1),
                    Self.file("/strasse/ss.txt", "/Straße/ß.txt", size: 2),
                    Self.file("/istanbul/ok", "/İstanbul/ok", size: 3),
                ],
                [Self.folder("/strasse", "/Straße"), Self.folder("/\(greekLower)", "/\(greek)"), Self.folder("/istanbul", "/İstanbul")],
            ])
            defer { fs.stop() }
            #expect(
                try await Self.lines(fs) == [
                    "/İstanbul folder 0", "/İstanbul/ok file 3", "/Straße folder 0", "/Straße/ß.txt file 2",
                    "/\(greek) folder 0", "/\(greek)/\u{3A3}\u{3A3}.txt file 1",
                ].sorted())
            #expect(try await resolve(fs, "/Straße/ß.txt").size == 2)
            await #expect(throws: FilesystemError.notFound) { try await resolve(fs, "/straße/ß.txt") }
            await #expect(throws: FilesystemError.notFound) { try await resolve(fs, "/\(greekLower)") }

            // Changes find the entries by Dropbox's keys too.
            fs.sync.applyPage(
                [
                    Self.deleted("/strasse/ss.txt", "/Straße/ß.txt"), Self.file("/\(greekLower)/new", "/\(greek)/new", size: 7),
                    Self.deleted("/istanbul", "/İstanbul"),
                ], as: .changes)
            #expect(
                try await Self.lines(fs) == [
                    "/Straße folder 0", "/\(greek) folder 0", "/\(greek)/new file 7", "/\(greek)/\u{3A3}\u{3A3}.txt file 1",
                ].sorted())
        }

        // MARK: Single-folder listings

        @Test func aFolderListingInAnyShapeGivesTheFolderExactly() async throws {
            let inner = [
                [Self.file("/lazy/b", "/Lazy/b", size: 2), Self.folder("/lazy/a", "/lazy/a"), Self.deleted("/lazy/ghost", "/lazy/ghost")],
                [],
                [Self.file("/lazy/b", "/lazy/b", size: 3), Self.file("/lazy/a", "/lazy/a", size: 1), Self.folder("/lazy/c", "/LAZY/c")],
            ]
            let client = ScriptedListingClient(
                root: [[Self.folder("/lazy", "/lazy")]], folders: ["id:folder-/lazy": inner])
            let fs = Filesystem(client: client, options: options())
            let lazy = try await inode(fs, "/lazy")
            #expect(try await names(fs, lazy) == ["a", "b", "c"])
            #expect(try await resolve(fs, "/lazy/a").kind == .file)
            #expect(try await resolve(fs, "/lazy/b").size == 3)
        }

        // MARK: Listings and changes never undo each other

        /// A folder listing whose snapshot predates a change batch the watcher applied meanwhile
        /// neither brings back the deleted entry nor removes the new one.
        @Test func aListingThatStartedBeforeAChangeDoesNotUndoIt() async throws {
            let fake = InMemoryDropbox()
            fake.longpollSecond = .milliseconds(5)
            for i in 0..<6 { fake.addFile("/race/f\(i)", size: 1) }
            fake.addFile("/race/doomed", size: 1)
            let gated = GatedClient(fake)
            let fs = Filesystem(client: gated, options: options(pageLimit: 2, watchChanges: true, longpollTimeout: 30))
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the watcher longpolls") { fake.callCount(.listFolderLongpoll) >= 1 }
            let race = try await inode(fs, "/race")
            let raceID = try #require(id(of: fake.entry("/race")))
            // The folder's listing takes its snapshot, then waits before its second page.
            let second = GatedClient.Call(listing: .init(path: raceID, recursive: false), page: 1)
            gated.hold(second)
            let listing = Task { try await names(fs, race) }
            try await waitUntil("the listing reached its second page") { gated.hasArrived(second) }
            fake.delete("/race/doomed")
            fake.addFile("/race/newcomer", size: 2)
            try await waitUntil("the watcher applied the changes") { statusField(fs, "delta_batches") ?? 0 >= 1 }
            gated.release(second)
            let listed = try await listing.value
            #expect(!listed.contains("doomed"), "a deleted entry came back: \(listed)")
            #expect(listed.contains("newcomer"), "a new entry was removed: \(listed)")
            #expect(try await names(fs, race) == ["f0", "f1", "f2", "f3", "f4", "f5", "newcomer"])
        }

        // MARK: A failed fill

        @Test func aFailedWholeAccountListingIsStartedAgainAndShownInTheStatus() async throws {
            let fake = InMemoryDropbox()
            for i in 0..<30 { fake.addFile("/retry/f\(i)", size: 1) }
            let faulty = FaultInjectingClient(fake)
            faulty.failNext(.listFolderContinue, with: .serverError(status: 500), count: 2)
            var opts = options(pageLimit: 5, prefetch: true)
            opts.fillRetryScale = 0.01
            let fs = Filesystem(client: faulty, options: opts)
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the fill completed after its failures") { try rootIsComplete(fs) }
            #expect(statusField(fs, "fill_failures") == 2)
            #expect(fs.syncStatus().contains("last_failure="))
            #expect(try await names(fs, inode(fs, "/retry")).count == 30)
        }
    }
}

/// Serves scripted list_folder pages: `root` for the recursive listing of the whole account, and
/// `folders[path]` for the listing of one folder; a listing's pages come back exactly as given
/// (empty ones included). Changes are never reported.
final class ScriptedListingClient: DropboxClient, Sendable {
    let root: [[Metadata]]
    let folders: [String: [[Metadata]]]
    /// Guards the count of list_folder calls.
    private let count = Mutex(0)

    init(root: [[Metadata]], folders: [String: [[Metadata]]] = [:]) {
        self.root = root
        self.folders = folders
    }

    var listings: Int { count.withLock { $0 } }

    private func pages(_ path: String) -> [[Metadata]]? { path.isEmpty ? root : folders[path] }

    /// Cursors are "<path>\n<page>"; past the last page a cursor stays put.
    private func page(_ path: String, _ n: Int) -> ListFolderResult {
        let pages = pages(path) ?? [[]]
        let entries = n < pages.count ? pages[n] : []
        return ListFolderResult(entries: entries, cursor: "\(path)\n\(min(n + 1, pages.count))", hasMore: n + 1 < pages.count)
    }

    func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
        count.withLock { $0 += 1 }
        guard pages(arg.path) != nil else { throw .lookup(.notFound) }
        return page(arg.path, 0)
    }

    func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
        let parts = cursor.split(separator: "\n", omittingEmptySubsequences: false)
        guard parts.count == 2, let n = Int(parts[1]) else { throw .cursorReset }
        return page(String(parts[0]), n)
    }

    func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String { "\(arg.path)\n999" }

    func listFolderLongpoll(cursor: String, timeoutSeconds: Int) async throws(DropboxError) -> LongpollResult {
        try? await Task.sleep(for: .seconds(timeoutSeconds))
        return LongpollResult(changes: false)
    }

    func getMetadata(path: String) async throws(DropboxError) -> Metadata { throw .lookup(.notFound) }
    func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult { throw .lookup(.notFound) }
    func export(path: String) async throws(DropboxError) -> ExportResult { throw .lookup(.notFound) }
    func getThumbnailBatch(_ entries: [ThumbnailArg]) async throws(DropboxError) -> [Result<[UInt8], ThumbnailFailure>] {
        entries.map { _ in .failure(.path(.notFound)) }
    }
    func listRevisions(_ arg: ListRevisionsArg) async throws(DropboxError) -> ListRevisionsResult { throw .lookup(.notFound) }
    func getCurrentAccount() async throws(DropboxError) -> FullAccount { InMemoryDropbox.defaultAccount }
    func getSpaceUsage() async throws(DropboxError) -> SpaceUsage { SpaceUsage(used: 0, allocation: .individual(allocated: 1)) }
}
