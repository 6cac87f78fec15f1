// The change watcher: longpoll + list_folder/continue deltas applied by path_lower, the kernel
// invalidations they publish, recovery from a reset cursor (with prefetch: a new full listing; lazy:
// every folder listed again when next needed) without failing requests, and stop().
//
// Longpolls are shortened with InMemoryDropbox.longpollSecond; every wait polls the core.

import DropboxAPI
import DropboxTestSupport
import Synchronization
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct ChangeWatcherTests {
        enum Mode: String, CustomTestStringConvertible, CaseIterable {
            case lazy, prefetch
            var testDescription: String { rawValue }
        }

        static func sampleFake() -> InMemoryDropbox {
            let fake = InMemoryDropbox()
            fake.addFile("/docs/a.txt", contents: [1, 2, 3])
            fake.addFile("/docs/b.txt", contents: [4])
            fake.addFile("/photos/p1.jpg", size: 100)
            fake.addFile("/photos/2024/p2.jpg", size: 200)
            fake.addFile("/stable/keep.txt", size: 7)
            fake.addFile("/top.txt", size: 1)
            fake.addFolder("/folder-to-file")
            fake.addFile("/folder-to-file/child", size: 1)
            return fake
        }

        /// Starts the watcher (and the fill with prefetch) and returns once it longpolls; the tree
        /// is then walked once, so every folder is complete in both modes.
        static func watched(
            _ fake: InMemoryDropbox, _ mode: Mode, pageLimit: UInt32 = 2000
        ) async throws -> Filesystem {
            fake.longpollSecond = .milliseconds(5)
            let fs = Filesystem(
                client: fake,
                options: options(pageLimit: pageLimit, prefetch: mode == .prefetch, watchChanges: true, longpollTimeout: 30))
            fs.startSync()
            try await waitUntil("the watcher longpolls") { fake.callCount(.listFolderLongpoll) >= 1 }
            _ = try await walk(fs)
            return fs
        }

        /// Makes one more change at the root and waits until the core shows it: deltas are applied
        /// in order, so every earlier change has been applied too. The root must be complete.
        static func catchUp(_ fs: Filesystem, _ fake: InMemoryDropbox, round: Int) async throws {
            fake.addFile("/#canary", size: UInt64(round))
            try await waitUntil("the watcher applied change round \(round)") {
                switch try fs.lookupCached(parent: Filesystem.rootInode, name: "#canary") {
                case .found(let attributes):
                    fs.forget(attributes.inode, count: 1)
                    return attributes.size == UInt64(round)
                case .notFound:
                    return false
                case .needsListing:
                    throw WaitTimedOut(description: "the root is not complete, so the canary cannot tell")
                }
            }
        }

        @Test(arguments: Mode.allCases)
        func remoteChangesShowUpWithTheirInvalidations(mode: Mode) async throws {
            let fake = Self.sampleFake()
            let fs = try await Self.watched(fake, mode, pageLimit: 3)
            defer { fs.stop() }
            let log = InvalidationLog(fs)
            let root = Filesystem.rootInode
            let docs = try await inode(fs, "/docs")
            let a = try await resolve(fs, "/docs/a.txt")
            let b = try await resolve(fs, "/docs/b.txt")
            let photos = try await fs.lookup(parent: root, name: "photos")  // held by the kernel

            fake.addFile("/docs/new.txt", size: 11)
            let modified = fake.modifyFile("/docs/a.txt", contents: Array(repeating: 5, count: 1000))
            fake.delete("/docs/b.txt")
            fake.move(from: "/photos", to: "/docs/pics")
            fake.addFolder("/empty")
            fake.addFile("/newdir/inner/deep.txt", size: 3)
            fake.addSymlink("/docs/link", target: "a.txt")
            fake.addFolder("/top.txt")  // a file replaced by a folder
            fake.addFile("/folder-to-file", size: 9)  // a folder replaced by a file
            try await Self.catchUp(fs, fake, round: 1)

            let listings = fake.callCount(.listFolder)
            let core = try await walk(fs)
            #expect(fake.callCount(.listFolder) == listings, "deltas keep every folder complete")
            #expect(differences(core: core, expected: try await reference(fake)) == [])
            let requests = fake.calls

            // A new revision is a new inode (SEMANTICS.md): the name now leads elsewhere.
            let aNow = try await resolve(fs, "/docs/a.txt")
            #expect(aNow.inode != a.inode || aNow.generation != a.generation)
            #expect(aNow.size == 1000 && aNow.ctime == modified.serverModified.secondsSinceEpoch)
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: docs, name: "b.txt") }
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: root, name: "photos") }
            #expect(try fs.attributes(of: photos.inode).kind == .folder, "the kernel still holds the old folder")
            #expect(try await resolve(fs, "/docs/pics/2024/p2.jpg").size == 200)
            #expect(try await resolve(fs, "/top.txt").kind == .folder)
            #expect(try await resolve(fs, "/folder-to-file").size == 9)
            let link = try await inode(fs, "/docs/link")
            #expect(try fs.readlink(link) == "a.txt")
            #expect(fake.calls["list_folder", default: 0] == requests["list_folder", default: 0])

            let expected: [Invalidation] = [
                .entry(parent: docs, name: "new.txt"),
                .inode(a.inode),
                .entry(parent: docs, name: "b.txt"),
                .entry(parent: root, name: "photos"),
                .entry(parent: docs, name: "pics"),
                .entry(parent: root, name: "empty"),
                .entry(parent: root, name: "newdir"),
                .entry(parent: docs, name: "link"),
                .entry(parent: root, name: "top.txt"),
                .entry(parent: root, name: "folder-to-file"),
                .inode(docs),
                .inode(root),
            ]
            try await waitUntil("every invalidation was delivered: missing \(expected.filter { !log.contains($0) })") {
                expected.allSatisfy(log.contains)
            }
            #expect(!log.contains(.entry(parent: root, name: "stable")), "unchanged names are not invalidated")
            #expect(!log.contains(.inode(b.inode)) || log.contains(.entry(parent: docs, name: "b.txt")))
        }

        @Test func newNamesInFoldersNeverListedAreNotInvalidated() async throws {
            let fake = Self.sampleFake()
            fake.longpollSecond = .milliseconds(5)
            let fs = Filesystem(client: fake, options: options(watchChanges: true, longpollTimeout: 30))
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the watcher longpolls") { fake.callCount(.listFolderLongpoll) >= 1 }
            let log = InvalidationLog(fs)
            let docs = try await inode(fs, "/docs")  // the root is listed, docs is not
            fake.addFile("/docs/new.txt", size: 2)
            try await Self.catchUp(fs, fake, round: 1)
            try await waitUntil("the canary's invalidation arrived") { log.contains(.entry(parent: 1, name: "#canary")) }
            #expect(!log.contains(.entry(parent: docs, name: "new.txt")))
            guard case .found(let new) = try fs.lookupCached(parent: docs, name: "new.txt") else {
                Issue.record("the delta did not reach the known folder")
                return
            }
            #expect(new.size == 2)
            #expect(try fs.lookupCached(parent: docs, name: "a.txt") == .needsListing, "docs is still not complete")
            #expect(try await names(fs, docs) == ["a.txt", "b.txt", "new.txt"])
        }

        @Test(arguments: Mode.allCases)
        func aCursorResetRebuildsTheTreeWithoutFailingRequests(mode: Mode) async throws {
            let fake = Self.sampleFake()
            var builder = TreeBuilder(fake, seed: 41, nasty: false)
            builder.add(entries: 60)
            let fs = try await Self.watched(fake, mode, pageLimit: 10)
            defer { fs.stop() }
            let log = InvalidationLog(fs)
            let docs = try await inode(fs, "/docs")
            let a = try await resolve(fs, "/docs/a.txt")
            let stable = try await inode(fs, "/stable")
            fake.latency = .milliseconds(1)

            // Requests keep being answered while the watcher recovers.
            let failures = Locked<[String]>([])
            let stop = Locked(false)
            let hammer = Task {
                var rounds = 0
                while !stop.value || rounds < 5 {
                    rounds += 1
                    do {
                        let keep = try await fs.lookup(parent: stable, name: "keep.txt")
                        fs.forget(keep.inode, count: 1)
                        if keep.size != 7 { failures.value.append("keep.txt has size \(keep.size)") }
                        _ = try await names(fs, stable)
                        _ = try await names(fs, Filesystem.rootInode)
                        _ = try fs.attributes(of: docs)
                    } catch {
                        failures.value.append("\(error)")
                    }
                    await Task.yield()
                }
            }

            fake.resetCursors()
            fake.delete("/docs/b.txt")
            fake.addFile("/docs/c.txt", size: 4)
            fake.modifyFile("/docs/a.txt", contents: Array(repeating: 1, count: 64))
            try await waitUntil("the watcher saw the reset") { statusField(fs, "resets") == 1 }
            let expected = try await reference(fake)
            try await waitUntil("the tree matches Dropbox again") {
                differences(core: try await walk(fs), expected: expected).isEmpty
            }
            stop.value = true
            await hammer.value
            #expect(failures.value == [])

            #expect(try fs.attributes(of: a.inode).size == 64)
            try await waitUntil("a.txt's change was invalidated") { log.contains(.inode(a.inode)) }
            if mode == .lazy {
                try await waitUntil("the recovery invalidated the folders") {
                    log.contains(.inode(docs)) && log.contains(.inode(Filesystem.rootInode))
                }
                try await waitUntil("a new cursor was taken") { fake.callCount(.listFolderGetLatestCursor) == 2 }
            }
            // Changes after the recovery arrive as deltas again.
            _ = try await walk(fs)
            try await Self.catchUp(fs, fake, round: 1)
            fake.addFile("/docs/after-reset.txt", size: 5)
            try await Self.catchUp(fs, fake, round: 2)
            #expect(try await resolve(fs, "/docs/after-reset.txt").size == 5)
            let requests = fake.calls
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
            #expect(fake.callCount(.listFolder) == requests["list_folder", default: 0], "the walk needs no listing")
        }

        @Test func stopEndsTheWatcher() async throws {
            let fake = Self.sampleFake()
            let fs = try await Self.watched(fake, .lazy)
            try await Self.catchUp(fs, fake, round: 1)
            fs.stop()
            try await Task.sleep(for: .milliseconds(30))  // lets the cancelled longpoll unwind
            let polls = fake.callCount(.listFolderLongpoll)
            fake.addFile("/late.txt", size: 1)
            try await Task.sleep(for: .milliseconds(200))  // many longpoll periods
            #expect(fake.callCount(.listFolderLongpoll) == polls)
            #expect(try fs.lookupCached(parent: Filesystem.rootInode, name: "late.txt") == .notFound)
        }

        @Test func theWatcherRetriesAfterLongpollFailures() async throws {
            let fake = Self.sampleFake()
            fake.longpollSecond = .milliseconds(5)
            let client = FaultInjectingClient(fake)
            client.failNext(.listFolderLongpoll, with: .serverError(status: 503))
            let fs = Filesystem(client: client, options: options(watchChanges: true, longpollTimeout: 30))
            fs.startSync()
            defer { fs.stop() }
            _ = try await walk(fs)
            try await waitUntil("the watcher longpolls again after its 1 s back-off") {
                client.callCount(.listFolderLongpoll) >= 2
            }
            fake.addFile("/docs/after-failure.txt", size: 1)
            try await Self.catchUp(fs, fake, round: 1)
            #expect(try await resolve(fs, "/docs/after-failure.txt").size == 1)
        }
    }
}
