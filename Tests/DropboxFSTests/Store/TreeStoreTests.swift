// The tree store against the in-memory Dropbox under adversarial listing shapes: a tree stored by
// one Filesystem is served by the next one at once, with no listing, exactly as the first one last
// showed it; it then catches up with changes made meanwhile (or refills after a reset) and ends
// equal to the account. A damaged, foreign or old database, or rows that do not form a tree, are
// set aside or refused, never served; a second opener of the same store is refused.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite(.serialized) struct TreeStoreTests {
        static let identity = TreeStoreIdentity(accountID: "dbid:test", pathRoot: .home, endpoint: "memory:")

        static func folder() -> String {
            let path = NSTemporaryDirectory() + "dropboxfs-store-\(UUID().uuidString)"
            return path
        }

        static func open(_ folder: String) throws -> TreeStore {
            try TreeStore.open(folder: folder, identity: identity, email: "t@example.com", mountpoint: "/mnt")
        }

        static func mount(_ fake: InMemoryDropbox, store: TreeStore, stored: StoredTree?, pageLimit: UInt32 = 7)
            -> Filesystem
        {
            var options = CoreTests.options(pageLimit: pageLimit, prefetch: true, watchChanges: true, longpollTimeout: 30)
            options.store = store
            return Filesystem(client: fake, options: options, restoring: stored)
        }

        /// A first mount fills and follows changes, then unmounts; returns its last walk.
        static func firstMount(_ fake: InMemoryDropbox, folder: String, mutator: inout ReferenceModelTests.Mutator)
            async throws -> [BytePath: Observed]
        {
            let store = try open(folder)
            #expect(store.loadTree(folderTime: CoreTests.folderTime, now: 0) == nil, "a new store has no tree")
            let fs = mount(fake, store: store, stored: nil)
            fs.startSync()
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            var log: [String] = []
            for round in 1...2 {
                for _ in 0..<10 { try await mutator.mutate(log: &log) }
                try await ChangeWatcherTests.catchUp(fs, fake, round: round)
            }
            let last = try await walk(fs)
            #expect(differences(core: last, expected: try await reference(fake)) == [])
            fs.stop()
            store.close()
            return last
        }

        /// A 40-entry account after a first mount into `folder`, its store opened again (close it)
        /// and the tree that store holds; the first mount's last requests (a listing's next page
        /// asked before it stopped) have landed.
        static func storedAccount(_ folder: String) async throws -> (InMemoryDropbox, TreeStore, StoredTree) {
            let fake = InMemoryDropbox()
            fake.longpollSecond = .milliseconds(5)
            var mutator = ReferenceModelTests.Mutator(builder: TreeBuilder(fake, seed: 2, nasty: false))
            mutator.builder.add(entries: 40)
            _ = try await firstMount(fake, folder: folder, mutator: &mutator)
            let store = try open(folder)
            let stored = try #require(store.loadTree(folderTime: CoreTests.folderTime, now: 0), "the first mount stored its tree")
            _ = try await ParallelFillTests.settledCalls(fake)
            return (fake, store, stored)
        }

        @Test(arguments: [AdversarialModes(), .all])
        func aRemountServesTheStoredTreeAtOnceAndCatchesUp(modes: AdversarialModes) async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let fake = InMemoryDropbox(adversarial: modes, adversarialSeed: 11)
            fake.longpollSecond = .milliseconds(5)
            var mutator = ReferenceModelTests.Mutator(builder: TreeBuilder(fake, seed: 5, nasty: true))
            mutator.builder.add(entries: 150)
            let before = try await Self.firstMount(fake, folder: folder, mutator: &mutator)

            // Unmounted: more changes.
            var log: [String] = []
            for _ in 0..<12 { try await mutator.mutate(log: &log) }

            let store = try Self.open(folder)
            defer { store.close() }
            let stored = try #require(store.loadTree(folderTime: CoreTests.folderTime, now: 0))
            #expect(stored.cursor != nil)
            // The first mount's last requests (a listing's next page asked before it stopped) may
            // still land: count from when they did.
            _ = try await ParallelFillTests.settledCalls(fake)
            fake.resetCalls()
            let fs = Self.mount(fake, store: store, stored: stored)
            defer { fs.stop() }
            let served = try await walk(fs)
            #expect(differences(core: served, expected: before) == [], "the stored tree, served before any request")
            #expect(fake.callCount(.listFolder) == 0 && fake.callCount(.listFolderContinue) == 0)

            fs.startSync()
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            #expect(fake.callCount(.listFolder) == 0, "catching up needs no listing")
            let after = try await walk(fs)
            #expect(differences(core: after, expected: try await reference(fake)) == [], "changes: \(log)")
        }

        @Test func aResetCursorRefillsWhileTheStoredTreeIsServed() async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let fake = InMemoryDropbox(adversarial: .all, adversarialSeed: 3)
            fake.longpollSecond = .milliseconds(5)
            var mutator = ReferenceModelTests.Mutator(builder: TreeBuilder(fake, seed: 9, nasty: false))
            mutator.builder.add(entries: 120)
            _ = try await Self.firstMount(fake, folder: folder, mutator: &mutator)
            var log: [String] = []
            for _ in 0..<10 { try await mutator.mutate(log: &log) }
            fake.resetCursors()

            let store = try Self.open(folder)
            defer { store.close() }
            let stored = try #require(store.loadTree(folderTime: CoreTests.folderTime, now: 0))
            let fs = Self.mount(fake, store: store, stored: stored)
            defer { fs.stop() }
            fs.startSync()
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            #expect(fs.syncStatus().contains("resets=1"))
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [], "\(log)")
            fs.stop()
            store.close()

            // The refilled tree was stored with its new cursor.
            let again = try Self.open(folder)
            defer { again.close() }
            let refilled = try #require(again.loadTree(folderTime: CoreTests.folderTime, now: 0))
            #expect(refilled.cursor != nil)
            let fs2 = Self.mount(fake, store: again, stored: refilled)
            defer { fs2.stop() }
            #expect(differences(core: try await walk(fs2), expected: try await reference(fake)) == [])
        }

        /// A quiet account: longpolls that find no change still confirm the tree as of their time,
        /// so an offline remount says how old the tree really is (`stored_as_of`).
        @Test func longpollsWithoutChangesKeepTheStoredTimeCurrent() async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let fake = InMemoryDropbox()
            fake.longpollSecond = .milliseconds(5)
            var builder = TreeBuilder(fake, seed: 4, nasty: false)
            builder.add(entries: 20)
            let store = try Self.open(folder)
            let fs = Self.mount(fake, store: store, stored: nil)
            fs.startSync()
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            let filledAt = Int64(time(nil))
            // Longpolls of 30 "seconds" of 5 ms each. Once the clock is 3 s past the fill, the
            // second longpoll to start after that shows the one before it started, returned and
            // stored the time after it: no fixed sleep that a loaded machine could outlast.
            try await CoreTests.waitUntil("3 s past the fill") { Int64(time(nil)) >= filledAt + 3 }
            let polls = fake.callCount(.listFolderLongpoll)
            try await CoreTests.waitUntil("a longpoll after that") { fake.callCount(.listFolderLongpoll) > polls + 1 }
            fs.stop()
            store.close()
            let again = try Self.open(folder)
            defer { again.close() }
            let stored = try #require(again.loadTree(folderTime: CoreTests.folderTime, now: 0))
            #expect(stored.syncedAt >= filledAt + 3, "synced_at \(stored.syncedAt), filled at \(filledAt)")
        }

        @Test func aStoredTreeListedLongAgoIsListedAgainAfterItsCatchUp() async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let (fake, store, stored) = try await Self.storedAccount(folder)
            defer { store.close() }
            #expect(stored.filledAt > 0)
            fake.resetCalls()
            var options = CoreTests.options(pageLimit: 7, prefetch: true, watchChanges: true, longpollTimeout: 30)
            options.store = store
            options.relistStoredAfter = 0
            let fs = Filesystem(client: fake, options: options, restoring: stored)
            defer { fs.stop() }
            fs.startSync()
            try await waitUntil("the account was listed again") {
                fake.callCount(.listFolder) >= 1 && fs.syncStatus().contains("phase=watching")
                    && fake.callCount(.listFolderLongpoll) >= 1
            }
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
        }

        @Test func anUnfinishedFillIsNotServed() async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let fake = InMemoryDropbox()
            for i in 0..<50 { fake.addFile("/f\(i)", size: 1) }
            do {
                let store = try Self.open(folder)
                _ = store.loadTree(folderTime: CoreTests.folderTime, now: 0)
                let fs = Self.mount(fake, store: store, stored: nil)
                // A folder listed on its own, but no whole-account fill: the rows are written, the tree is not complete.
                _ = try await names(fs, Filesystem.rootInode)
                fs.stop()
                store.close()
            }
            let store = try Self.open(folder)
            defer { store.close() }
            #expect(store.loadTree(folderTime: CoreTests.folderTime, now: 0) == nil)
        }

        @Test func aSecondOpenerIsRefused() throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let first = try Self.open(folder)
            #expect(throws: TreeStoreError.busy(path: first.path)) { try Self.open(folder) }
            first.close()
            let second = try Self.open(folder)
            second.close()
        }

        /// A bare access token's tag is kept with the tree: a later open without one (a stored
        /// sign-in of the same account) keeps it, another tag replaces it, and what the store says
        /// of itself (what an offline mount picks its tree by) shows it.
        @Test func aTokenTagIsKeptWithTheTree() async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let path = try await Self.storedSmallTree(folder)
            #expect(TreeStore.info(path: path)?.tokenTag == nil)
            let tagged = try TreeStore.open(
                folder: folder, identity: Self.identity, email: "t@example.com", mountpoint: "/mnt", tokenTag: "hmac-sha256:aa")
            tagged.close()
            #expect(TreeStore.info(path: path)?.tokenTag == "hmac-sha256:aa")
            try Self.open(folder).close()
            #expect(TreeStore.info(path: path)?.tokenTag == "hmac-sha256:aa")
            try TreeStore.open(
                folder: folder, identity: Self.identity, email: "t@example.com", mountpoint: "/mnt", tokenTag: "hmac-sha256:bb"
            ).close()
            let info = try #require(TreeStore.info(path: path))
            #expect(info.tokenTag == "hmac-sha256:bb")
            #expect(info.complete)
            #expect(TreeStore.storedTrees(in: folder).map(\.tokenTag) == ["hmac-sha256:bb"])
        }

        /// Stores a small complete tree and returns the database's path.
        static func storedSmallTree(_ folder: String) async throws -> String {
            let fake = InMemoryDropbox()
            fake.addFile("/A/b.txt", size: 3)
            fake.addFile("/A/C/d.txt", size: 4)
            fake.addSymlink("/link", target: "A/b.txt")
            let store = try open(folder)
            _ = store.loadTree(folderTime: CoreTests.folderTime, now: 0)
            let fs = mount(fake, store: store, stored: nil)
            fs.startSync()
            #expect(await fs.waitUntilCaughtUp(seconds: 30))
            fs.stop()
            store.close()
            return store.path
        }

        static func edit(_ path: String, _ sql: String) throws {
            let database = try SQLiteDatabase(path: path)
            try database.execute(sql)
            database.close()
        }

        @Test(arguments: [
            "UPDATE meta SET value = 'dbid:other' WHERE key = 'account_id'",
            "PRAGMA user_version = 7",
            "PRAGMA application_id = 1",
        ])
        func aForeignOrOldDatabaseIsSetAside(sql: String) async throws {
            try await Self.expectRefused(setAside: true) { path in try Self.edit(path, sql) }
        }

        @Test func aDamagedFileIsSetAside() async throws {
            try await Self.expectRefused(setAside: true) { path in
                #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0xA5, count: 8192)))
            }
        }

        /// A file whose header is sound but whose rows are damaged (a bad page in the entries
        /// table: a failing disk, a copy taken mid-write) is set aside like any damaged file, and
        /// the next fill is stored again. Left in place (emptying it reads the damaged table too),
        /// it would stop the store from writing at every mount, for good.
        @Test func aFileWithDamagedRowsIsSetAsideAndStoredAgain() async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let path = try await Self.storedSmallTree(folder)
            try Self.damageEntries(path)

            let fake = InMemoryDropbox()
            fake.addFile("/A/b.txt", size: 3)
            do {
                let store = try Self.open(folder)
                #expect(store.loadTree(folderTime: CoreTests.folderTime, now: 0) == nil)
                let fs = Self.mount(fake, store: store, stored: nil)
                fs.startSync()
                #expect(await fs.waitUntilCaughtUp(seconds: 30))
                fs.stop()
                store.close()
            }
            #expect(FileManager.default.fileExists(atPath: path + ".bad"))
            let store = try Self.open(folder)
            defer { store.close() }
            let stored = try #require(
                store.loadTree(folderTime: CoreTests.folderTime, now: 0), "the new fill was not stored")
            #expect(stored.entryCount == 2)
        }

        /// Overwrites the root page of the entries table of the (closed) store at `path` with garbage.
        static func damageEntries(_ path: String) throws {
            let database = try SQLiteDatabase(path: path)
            let query = try database.prepare(
                "SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_master WHERE name = 'entries'")
            #expect(try query.step())
            let (page, pageSize) = (query.int64(0), query.int64(1))
            query.finalize()
            database.close()
            let handle = try #require(FileHandle(forWritingAtPath: path))
            try handle.seek(toOffset: UInt64((page - 1) * pageSize))
            try handle.write(contentsOf: Data(repeating: 0xA5, count: Int(pageSize)))
            try handle.close()
        }

        /// A file found damaged while a mount writes to it (a page gone bad after the load; here
        /// the mount does not load) is set aside like one found damaged at load, and the mount goes
        /// on serving from memory. Its tree cannot be written into a new file batch by batch (a
        /// new file needs a whole listing first), so the new file stays empty and the next mount
        /// lists the account. The damaged file used to stay as it was (the store only stopped
        /// writing), and every later mount served its ever older tree, or failed to load it.
        @Test func aFileFoundDamagedWhileWritingIsSetAside() async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let path = try await Self.storedSmallTree(folder)
            try Self.damageEntries(path)
            let fake = InMemoryDropbox()
            fake.addFile("/A/b.txt", size: 3)
            fake.addFile("/new.txt", size: 5)
            do {
                let store = try Self.open(folder)
                let fs = Self.mount(fake, store: store, stored: nil)
                fs.startSync()
                #expect(await fs.waitUntilCaughtUp(seconds: 30))
                #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
                fs.stop()
                store.close()
            }
            #expect(FileManager.default.fileExists(atPath: path + ".bad"), "the damaged file was set aside")
            #expect(TreeStore.info(path: path)?.complete == false, "the file in its place holds no servable tree")
            #expect(TreeStore.storedTrees(in: folder).isEmpty)
            let store = try Self.open(folder)
            defer { store.close() }
            #expect(store.loadTree(folderTime: CoreTests.folderTime, now: 0) == nil, "the next mount lists afresh")
        }

        /// A row whose index is far beyond the number of rows (a damaged or hand-edited file)
        /// would make the load create an empty node for every index below it: at 4,000,000,000,
        /// hundreds of gigabytes. Such a tree is refused before that gap is allocated, like rows
        /// that do not form a tree.
        @Test(arguments: [100_000, 4_000_000_000])
        func anIndexFarBeyondTheRowsIsRefused(index: Int64) async throws {
            try await Self.expectRefused(setAside: false) { path in
                try Self.edit(path, "UPDATE entries SET idx = \(index) WHERE name = 'link'")
            }
        }

        /// A wide gap early in the indices (the first entries listed, later deleted) is kept when
        /// the rows after it are enough to account for it.
        @Test func aWideGapThatTheRowsAccountForLoads() async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let path = try await Self.storedSmallTree(folder)
            // 70,000 is past 2 × 5 rows + 65,536, and within 2 × 5,005 rows + 65,536 (75,546).
            try Self.edit(
                path,
                """
                UPDATE entries SET idx = 70000 WHERE name = 'link';
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
                INSERT INTO entries(idx, parent, name, kind, flags, size, mtime, ctime)
                    SELECT 70000 + i, 1, 'g' || i, 0, 1, 1, 0, 0 FROM n;
                """)
            let store = try Self.open(folder)
            defer { store.close() }
            let stored = try #require(store.loadTree(folderTime: CoreTests.folderTime, now: 0))
            #expect(stored.entryCount == 5_005)
        }

        /// Stores a small tree, damages it with `damage`, and expects the next opener to refuse it
        /// (setting the file aside, or emptying the store, so that a second load is refused too).
        static func expectRefused(setAside: Bool, damage: (String) throws -> Void) async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let path = try await Self.storedSmallTree(folder)
            try damage(path)
            let store = try Self.open(folder)
            defer { store.close() }
            #expect(store.loadTree(folderTime: CoreTests.folderTime, now: 0) == nil)
            #expect(store.loadTree(folderTime: CoreTests.folderTime, now: 0) == nil)
            #expect(FileManager.default.fileExists(atPath: path + ".bad") == setAside)
        }

        @Test(arguments: [
            // A parent cycle, a parent that is a file, a name Linux cannot carry, two children under one key.
            "UPDATE entries SET parent = (SELECT idx FROM entries WHERE name = 'C') WHERE name = 'A'",
            "UPDATE entries SET parent = (SELECT idx FROM entries WHERE name = 'b.txt') WHERE name = 'd.txt'",
            "UPDATE entries SET name = 'x/y' WHERE name = 'b.txt'",
            "UPDATE entries SET key = 'a' WHERE name = 'link'",
            "UPDATE entries SET hash = x'00' WHERE name = 'b.txt'",
        ])
        func rowsThatAreNotATreeAreRefused(sql: String) async throws {
            // Refused once, the store is emptied for a new fill (the file itself is sound).
            try await Self.expectRefused(setAside: false) { path in try Self.edit(path, sql) }
        }

        /// An index is reused for a new entry, so a folder can be stored after its children (and
        /// with a gap before it): the load files them all the same, keys included.
        @Test func aFolderStoredAfterItsChildrenLoads() async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let fake = InMemoryDropbox()
            fake.addFile("/A/b.txt", size: 3)
            fake.addFile("/A/C/d.txt", size: 4)
            fake.addFile("/A/C/Ε.txt", size: 5)
            fake.addSymlink("/link", target: "A/b.txt")
            do {
                let store = try Self.open(folder)
                _ = store.loadTree(folderTime: CoreTests.folderTime, now: 0)
                let fs = Self.mount(fake, store: store, stored: nil)
                fs.startSync()
                #expect(await fs.waitUntilCaughtUp(seconds: 30))
                fs.stop()
                store.close()
                try Self.edit(
                    store.path,
                    """
                    UPDATE entries SET parent = 1000 WHERE parent = (SELECT idx FROM entries WHERE name = 'A');
                    UPDATE entries SET idx = 1000 WHERE name = 'A';
                    UPDATE entries SET parent = 900 WHERE parent = (SELECT idx FROM entries WHERE name = 'C');
                    UPDATE entries SET idx = 900 WHERE name = 'C';
                    """)
            }
            let store = try Self.open(folder)
            defer { store.close() }
            let stored = try #require(store.loadTree(folderTime: CoreTests.folderTime, now: 0))
            let fs = Self.mount(fake, store: store, stored: stored)
            defer { fs.stop() }
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
            #expect(try await names(fs, try await inode(fs, "/A/C")).sorted() == ["d.txt", "Ε.txt"])
        }

        @Test func theFilesAreTheUsersOnly() async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let path = try await Self.storedSmallTree(folder)
            let folderMode = try FileManager.default.attributesOfItem(atPath: folder)[.posixPermissions] as? Int
            let fileMode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(folderMode == 0o700)
            #expect(fileMode == 0o600)
        }

        /// The relist of a stored tree listed long ago, in one chain: when that whole-account
        /// listing fails, it is started again after a pause like any failed fill. It used to
        /// count as done (the fill took the cursor the catch-up had left in the engine): never
        /// tried again, and the status stayed at phase=filling.
        @Test func aFailedRelistOfAStoredTreeIsStartedAgain() async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let (fake, store, stored) = try await Self.storedAccount(folder)
            defer { store.close() }
            let faulty = FaultInjectingClient(fake)
            // The relist's recursive listing of the account (its first list_folder) fails once.
            faulty.failCall(number: 1, of: .listFolder, with: .serverError(status: 500))
            var options = CoreTests.options(pageLimit: 7, prefetch: true, watchChanges: true, longpollTimeout: 30)
            #expect(options.fill.parallelism == 1, "the one-chain fill")
            options.store = store
            options.relistStoredAfter = 0
            options.fillRetryScale = 0.01
            let fs = Filesystem(client: faulty, options: options, restoring: stored)
            defer { fs.stop() }
            fs.startSync()
            try await waitUntil("the relist was started again and ended: \(fs.syncStatus())") {
                faulty.callCount(.listFolder) >= 2 && fs.syncStatus().contains("phase=watching")
            }
            #expect(statusField(fs, "fill_failures") == 1)
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
        }

        /// Refuses the listings of one folder (by its id) with a lookup error that is not
        /// not_found, as Dropbox does for restricted or locked content.
        final class RefusingClient: ForwardingClient, Sendable {
            let forwardee: any DropboxClient
            let refused: String
            let failure: LookupFailure

            init(_ base: InMemoryDropbox, refusing path: String, with failure: LookupFailure) {
                self.forwardee = base
                self.refused = path
                self.failure = failure
            }

            func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
                if arg.path == refused { throw .lookup(failure) }
                return try await forwardee.listFolder(arg)
            }
        }

        /// Completeness is stored per folder: a branch the fill gave up on (a lookup error other
        /// than not_found) stays unlisted in the store, and a remount lists it when it is reached
        /// instead of answering its names "no such entry".
        @Test(arguments: [LookupFailure.restrictedContent, .locked, .malformedPath])
        func aBranchTheFillGaveUpOnIsListedWhenReachedAfterARemount(failure: LookupFailure) async throws {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let fake = InMemoryDropbox()
            fake.longpollSecond = .milliseconds(5)
            for i in 0..<4 { fake.addFile("/ok\(i)/f.txt", size: 1) }
            fake.addFile("/shut/inside.txt", size: 2)
            fake.addFile("/shut/sub/deep.txt", size: 3)
            let shut = try #require(id(of: fake.entry("/shut")))
            do {
                let store = try Self.open(folder)
                _ = store.loadTree(folderTime: CoreTests.folderTime, now: 0)
                var options = CoreTests.options(
                    pageLimit: 7, prefetch: true, watchChanges: true, longpollTimeout: 30,
                    fill: FillOptions(parallelism: 3))
                options.store = store
                let fs = Filesystem(client: RefusingClient(fake, refusing: shut, with: failure), options: options)
                fs.startSync()
                #expect(await fs.waitUntilCaughtUp(seconds: 60))
                try await waitUntil("the watcher longpolls") { fake.callCount(.listFolderLongpoll) >= 1 }
                fs.stop()
                store.close()
            }
            let store = try Self.open(folder)
            defer { store.close() }
            let stored = try #require(store.loadTree(folderTime: CoreTests.folderTime, now: 0))
            let fs = Self.mount(fake, store: store, stored: stored)
            defer { fs.stop() }
            let ok = try await inode(fs, "/ok0")
            let requests = fake.callCount(.listFolder)
            #expect(try await names(fs, ok) == ["f.txt"], "a listed branch is served from the store")
            #expect(fake.callCount(.listFolder) == requests, "with no request")
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
            #expect(fake.listFolderPaths.contains(shut), "the unlisted branch was listed when reached")
        }
    }
}
