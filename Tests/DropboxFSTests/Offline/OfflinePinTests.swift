// Tests of "available offline" in the core, against the in-memory Dropbox with a real disk cache
// folder: a pinned folder's files land in the disk cache checked, a pinned file changed on Dropbox
// is downloaded again, eviction for other reads never drops a pinned entry (and does once unpinned),
// a pin that does not fit is refused with the numbers, a mount without a disk cache refuses, and the
// attribute says what is present. The space check and path rules are tested as pure functions.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Synchronization
import Testing

@testable import DropboxFS

private let K: UInt64 = 1 << 10

extension CoreTests {
    @Suite struct OfflinePinTests {
        struct Mounted {
            let fs: Filesystem
            let fake: InMemoryDropbox
            let folder: TemporaryFolder

            func index(_ path: String) async throws -> UInt32 {
                UInt32(try await CoreTests.inode(fs, path))
            }

            /// A pin or unpin request as the CLI makes it: named with a fresh nonce.
            func request(_ kind: String, _ path: String) async throws -> String {
                let nonce = String(UInt64.random(in: 1 << 60...UInt64.max), radix: 16)
                return try #require(try fs.pinRequest(Filesystem.requestAttribute(kind, nonce: nonce), of: try await index(path)))
            }

            /// Waits until the contents of `paths` are in the disk cache (the keeper's own loop may
            /// be the one downloading them, so a pass here may return before they land). With
            /// `passes: false` only the keeper's loop runs passes.
            func waitKept(_ paths: [String], passes: Bool = true) async throws {
                let keys = Set(try paths.map(hash))
                try await CoreTests.waitUntil("\(paths) are in the disk cache", timeout: .seconds(30)) {
                    if passes { await fs.offline.keepOnce() }
                    fs.finishDiskCacheWrites()
                    return try cached().isSuperset(of: keys)
                }
            }

            func cached() throws -> Set<String> { Set(try folder.items().filter { !$0.hasPrefix(".") }) }

            func hash(_ path: String) throws -> String {
                guard case .file(let file) = fake.entry(path), let hash = file.contentHash else {
                    throw WaitTimedOut(description: "\(path) is no file with a content_hash")
                }
                return hash.hex
            }
        }

        static func mount(
            capacity: UInt64, diskCache: Bool = true, client: ((InMemoryDropbox) -> any DropboxClient)? = nil,
            files: (InMemoryDropbox) -> Void = { _ in }
        ) async throws -> Mounted {
            let folder = try TemporaryFolder()
            let fake = InMemoryDropbox()
            files(fake)
            fake.addFile("/keep/a.bin", size: 300 * K, seed: 1)
            fake.addFile("/keep/sub/b.bin", size: 200 * K, seed: 2)
            fake.addFile("/other/big.bin", size: 600 * K, seed: 3)
            fake.addFile("/more/big.bin", size: 600 * K, seed: 4)
            var options = CoreTests.options(prefetch: true, watchChanges: true)
            options.reader = ReaderOptions(
                diskCache: diskCache ? DiskCacheOptions(directory: folder.path, capacity: capacity) : nil)
            let fs = Filesystem(client: client?(fake) ?? fake, options: options)
            fs.startSync()
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            return Mounted(fs: fs, fake: fake, folder: folder)
        }

        static func readAll(_ m: Mounted, _ path: String) async throws -> [UInt8] {
            let opened = try await m.fs.openFile(try await CoreTests.inode(m.fs, path))
            defer { m.fs.releaseFile(handle: opened.handle) }
            var bytes: [UInt8] = []
            while true {
                let piece = try await m.fs.read(handle: opened.handle, offset: UInt64(bytes.count), size: 128 << 10)
                if piece.isEmpty { return bytes }
                bytes += piece
            }
        }

        @Test func aPinnedFolderIsKeptCheckedAndItsAttributeSaysSo() async throws {
            let m = try await Self.mount(capacity: 1024 * K)
            defer { m.fs.stop() }
            let answer = try await m.request(Filesystem.pinRequestAttribute, "/keep")
            #expect(answer.hasPrefix("pinned /keep: 2 files, 500.0 KiB (512000 bytes), 500.0 KiB (512000 bytes) to download"), "\(answer)")
            try await m.waitKept(["/keep/a.bin", "/keep/sub/b.bin"])
            #expect(try m.cached() == [try m.hash("/keep/a.bin"), try m.hash("/keep/sub/b.bin")])
            #expect(m.fs.offline.attribute(of: try await m.index("/keep/a.bin")) == "present")
            #expect(m.fs.offline.attribute(of: try await m.index("/keep")) == "present 2/2 files")
            // Through the facade the adapter calls, listed beside Dropbox's attributes.
            let inode = UInt64(try await m.index("/keep/a.bin"))
            #expect(try m.fs.extendedAttribute(Filesystem.offlineAttribute, of: inode) == "present")
            #expect(try m.fs.extendedAttributes(of: inode).map(\.name).last == Filesystem.offlineAttribute)
            #expect(try m.fs.extendedAttribute(Filesystem.pinsAttribute, of: Filesystem.rootInode)
                == "/keep\tpresent\t2\t2\t512000\t512000\t0")
            #expect(m.fs.offline.attribute(of: try await m.index("/other/big.bin")) == nil)
            let report = try #require(m.fs.offline.reports().first)
            #expect(report == OfflineKeeper.PinReport(
                path: "/keep", state: "present", files: 2, presentFiles: 2, bytes: 500 * K, presentBytes: 500 * K, unavailable: 0))
            #expect(m.fs.syncStatus().contains("pins=1 pinned_files=2 pinned_present_files=2 pinned_bytes=512000 pinned_present_bytes=512000"))
            // Pinning it again, or a folder inside it, changes nothing.
            #expect(try await m.request(Filesystem.pinRequestAttribute, "/keep").contains("all present"))
            #expect(try await m.request(Filesystem.pinRequestAttribute, "/keep/sub")
                == "refused: /keep/sub is available offline already, inside the pin /keep")
            #expect(try await m.request(Filesystem.unpinRequestAttribute, "/keep/sub")
                == "refused: /keep/sub is not pinned itself: it is inside the pin /keep")
        }

        @Test func aRequestIsCarriedOutOncePerNonceAndABareNameIsRefused() async throws {
            let m = try await Self.mount(capacity: 1024 * K)
            defer { m.fs.stop() }
            let keep = try await m.index("/keep")
            let pin = Filesystem.requestAttribute(Filesystem.pinRequestAttribute, nonce: "first-pin")
            let unpin = Filesystem.requestAttribute(Filesystem.unpinRequestAttribute, nonce: "first_unpin")
            let pinned = try #require(try m.fs.pinRequest(pin, of: keep))
            #expect(pinned.hasPrefix("pinned /keep: 2 files"))
            // `getfattr` reads a name twice (its size, then its value): the same answer, no second effect.
            let inode = UInt64(keep)
            #expect(try m.fs.extendedAttribute(unpin, of: inode) == "unpinned /keep")
            #expect(try m.fs.extendedAttribute(unpin, of: inode) == "unpinned /keep")
            #expect(m.fs.offline.pins == [])
            #expect(try m.fs.pinRequest(pin, of: keep) == pinned, "an old nonce pins nothing again")
            #expect(m.fs.offline.pins == [])
            // A bare name, or a nonce that is not one, is no request that runs.
            let bare = try #require(try m.fs.extendedAttribute(Filesystem.pinRequestAttribute, of: inode))
            #expect(bare.hasPrefix("refused: ") && bare.contains("dropboxfs pin"))
            #expect(m.fs.offline.pins == [])
            #expect(throws: FilesystemError.noAttribute) {
                try m.fs.extendedAttribute(Filesystem.pinRequestAttribute + ".x", of: inode)
            }
            #expect(try m.fs.pinRequest(Filesystem.requestAttribute(Filesystem.pinRequestAttribute, nonce: "second-pin"), of: keep)?
                .hasPrefix("pinned /keep") == true)
            #expect(m.fs.offline.pins == ["/keep"])
        }

        @Test func aPinnedFileChangedOnDropboxIsDownloadedAgain() async throws {
            let m = try await Self.mount(capacity: 1024 * K)
            defer { m.fs.stop() }
            _ = try await m.request(Filesystem.pinRequestAttribute, "/keep")
            try await m.waitKept(["/keep/a.bin", "/keep/sub/b.bin"])
            let old = try m.hash("/keep/a.bin")
            m.fake.modifyFile("/keep/a.bin", contents: [UInt8](repeating: 7, count: 100_000))
            let new = try m.hash("/keep/a.bin")
            #expect(old != new)
            try await CoreTests.waitUntil("the change reached the tree") {
                m.fs.tree.read { t in PinPlan.coverage(of: "/keep", in: t.tree).files.contains { $0.key == new } }
            }
            try await m.waitKept(["/keep/a.bin"])
            #expect(try m.cached().contains(new))
            #expect(m.fs.offline.attribute(of: try await m.index("/keep/a.bin")) == "present")
            #expect(try await Self.readAll(m, "/keep/a.bin") == [UInt8](repeating: 7, count: 100_000))
        }

        /// The status and the keeper's passes walk the pinned subtrees under the tree's lock: while
        /// the tree and the pins stay as they are, the last walk is used again; a change makes the
        /// next one walk, and it sees the change.
        @Test func thePinnedSubtreesAreWalkedAgainOnlyAfterTheTreeChanged() async throws {
            let m = try await Self.mount(capacity: 1024 * K)
            defer { m.fs.stop() }
            _ = try await m.request(Filesystem.pinRequestAttribute, "/keep")
            try await m.waitKept(["/keep/a.bin", "/keep/sub/b.bin"])
            let walks = { m.fs.offline.state.withLock { $0.coverageWalks } }
            let before = walks()
            for _ in 0..<5 { #expect(m.fs.syncStatus().contains("pinned_files=2 pinned_present_files=2")) }
            await m.fs.offline.keepOnce()
            #expect(walks() == before, "nothing changed: no walk")
            m.fake.addFile("/keep/sub/c.bin", size: 10 * K, seed: 9)
            try await CoreTests.waitUntil("the new file reached the status") {
                m.fs.syncStatus().contains("pinned_files=3 ")
            }
            #expect(walks() > before)
        }

        @Test func aPinFollowsItsFolderMovedOnDropbox() async throws {
            let m = try await Self.mount(capacity: 2048 * K)
            defer { m.fs.stop() }
            _ = try await m.request(Filesystem.pinRequestAttribute, "/keep")
            _ = try await m.request(Filesystem.pinRequestAttribute, "/more")
            try await m.waitKept(["/keep/a.bin", "/keep/sub/b.bin", "/more/big.bin"])
            m.fake.move(from: "/keep", to: "/kept")
            try await CoreTests.waitUntil("the move reached the tree") {
                m.fs.tree.read { t in PinPlan.index(of: "/kept/sub/b.bin", in: t.tree) != nil }
            }
            await m.fs.offline.keepOnce()
            #expect(m.fs.offline.pins == ["/kept", "/more"])
            #expect(m.fs.offline.attribute(of: try await m.index("/kept")) == "present 2/2 files")
            #expect(m.fs.offline.reports().map(\.state) == ["present", "present"])
            // Moved into another pin: absorbed by it.
            m.fake.move(from: "/kept", to: "/more/kept")
            try await CoreTests.waitUntil("the second move reached the tree") {
                m.fs.tree.read { t in PinPlan.index(of: "/more/kept/a.bin", in: t.tree) != nil }
            }
            await m.fs.offline.keepOnce()
            #expect(m.fs.offline.pins == ["/more"])
            #expect(m.fs.offline.attribute(of: try await m.index("/more")) == "present 3/3 files")
            // A pinned folder deleted, and another made at its path: the pin keeps the path.
            _ = try await m.request(Filesystem.pinRequestAttribute, "/other")
            m.fake.delete("/other")
            m.fake.addFile("/other/new.bin", size: 10 * K, seed: 9)
            try await CoreTests.waitUntil("the new folder reached the tree") {
                m.fs.tree.read { t in PinPlan.index(of: "/other/new.bin", in: t.tree) != nil }
            }
            try await m.waitKept(["/other/new.bin"])
            #expect(m.fs.offline.pins == ["/more", "/other"])
        }

        /// Records the pacer lane of each download and how many run at once (each held a moment,
        /// so downloads that may overlap do).
        final class DownloadRecorder: ForwardingClient, @unchecked Sendable {
            let forwardee: any DropboxClient
            let record = Mutex((lanes: Set<Int>(), running: 0, bigRunning: 0, most: 0, mostBig: 0))
            init(_ forwardee: any DropboxClient) { self.forwardee = forwardee }

            func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult {
                let big = (range?.length ?? 0) > 1 << 20 || (range?.offset ?? 0) > 0
                record.withLock { r in
                    r.lanes.insert(Pacer.lane.rawValue)
                    r.running += 1
                    r.most = max(r.most, r.running)
                    if big {
                        r.bigRunning += 1
                        r.mostBig = max(r.mostBig, r.bigRunning)
                    }
                }
                try? await Task.sleep(for: .milliseconds(30))
                defer {
                    record.withLock { r in
                        r.running -= 1
                        if big { r.bigRunning -= 1 }
                    }
                }
                return try await forwardee.download(path: path, range: range)
            }
        }

        @Test func aPinDownloadsInTheReadAheadLaneManySmallFilesAndFewBigOnesAtOnce() async throws {
            let recorder = Mutex<DownloadRecorder?>(nil)
            let m = try await Self.mount(
                capacity: 64 << 20,
                client: { fake in
                    let client = DownloadRecorder(fake)
                    recorder.withLock { $0 = client }
                    return client
                },
                files: { fake in
                    for i in 0..<40 { fake.addFile("/many/small\(i).txt", size: 2 * K + UInt64(i), seed: UInt64(100 + i)) }
                    for i in 0..<6 { fake.addFile("/many/big\(i).bin", size: (1 << 20) + 5 * K, seed: UInt64(200 + i)) }
                })
            defer { m.fs.stop() }
            _ = try await m.request(Filesystem.pinRequestAttribute, "/many")
            // The keeper's loop alone runs passes here: a pass of the test's beside it would download
            // other files at the same time.
            try await m.waitKept((0..<40).map { "/many/small\($0).txt" } + (0..<6).map { "/many/big\($0).bin" }, passes: false)
            let r = try #require(recorder.withLock { $0 }).record.withLock { $0 }
            #expect(r.lanes == [PacerLane.readAhead.rawValue], "a pin's downloads never take the programs' lane")
            #expect(r.most > 4 && r.most <= 16, "up to 16 at once: \(r.most)")
            #expect(r.mostBig >= 1 && r.mostBig <= 4, "files over 1 MiB, 4 at once at most: \(r.mostBig)")
        }

        @Test func evictionNeverDropsAPinnedEntryUntilItIsUnpinned() async throws {
            let m = try await Self.mount(capacity: 1024 * K)
            defer { m.fs.stop() }
            _ = try await m.request(Filesystem.pinRequestAttribute, "/keep")
            try await m.waitKept(["/keep/a.bin", "/keep/sub/b.bin"])
            let pinned: Set<String> = [try m.hash("/keep/a.bin"), try m.hash("/keep/sub/b.bin")]
            // 600 KiB beside 500 KiB pinned do not fit in 1 MiB: the read works, nothing pinned goes.
            #expect(try await Self.readAll(m, "/other/big.bin") == m.fake.contents(of: "/other/big.bin"))
            m.fs.finishDiskCacheWrites()
            #expect(try m.cached() == pinned)
            #expect(try await m.request(Filesystem.unpinRequestAttribute, "/keep") == "unpinned /keep")
            #expect(try await m.request(Filesystem.unpinRequestAttribute, "/keep") == "refused: /keep is not pinned")
            #expect(m.fs.offline.attribute(of: try await m.index("/keep/a.bin")) == nil)
            // Now a read of as much makes room by evicting what was pinned (the first file is still
            // in memory, so another one).
            #expect(try await Self.readAll(m, "/more/big.bin") == m.fake.contents(of: "/more/big.bin"))
            m.fs.finishDiskCacheWrites()
            let now = try m.cached()
            #expect(now.contains(try m.hash("/more/big.bin")))
            #expect(!now.isSuperset(of: pinned))
        }

        /// Bytes that do not match the content_hash never become a disk cache entry: the pin says
        /// it is failing, and nothing is left in the cache folder.
        @Test func damagedDownloadsAreNotKept() async throws {
            let m = try await Self.mount(capacity: 1024 * K) { RecordingClient($0, corruptAt: 0) }
            defer { m.fs.stop() }
            _ = try await m.request(Filesystem.pinRequestAttribute, "/keep")
            try await CoreTests.waitUntil("the pin fails", timeout: .seconds(30)) {
                await m.fs.offline.keepOnce()
                return m.fs.offline.reports().first?.state == "failing"
            }
            m.fs.finishDiskCacheWrites()
            #expect(try m.folder.items() == [])
            #expect(m.fs.offline.attribute(of: try await m.index("/keep/a.bin")) == "pending")
            #expect(m.fs.offline.reports().first?.presentFiles == 0)
        }

        @Test func aPinThatDoesNotFitIsRefusedWithTheNumbers() async throws {
            let m = try await Self.mount(capacity: 1024 * K)
            defer { m.fs.stop() }
            _ = try await m.request(Filesystem.pinRequestAttribute, "/keep")
            let answer = try await m.request(Filesystem.pinRequestAttribute, "/other")
            #expect(answer == "refused: /other does not fit: it needs 600.0 KiB (614400 bytes) beside 500.0 KiB (512000 bytes) "
                + "pinned already, and the disk cache holds at most 1.0 MiB (1048576 bytes) (mount with a larger --cache-size, or unpin something)")
            #expect(m.fs.offline.pins == ["/keep"])
        }

        @Test func withoutADiskCacheAPinIsRefused() async throws {
            let m = try await Self.mount(capacity: 0, diskCache: false)
            defer { m.fs.stop() }
            let answer = try await m.request(Filesystem.pinRequestAttribute, "/keep")
            #expect(answer.hasPrefix("refused: available offline keeps files in the disk cache, and this mount has none"))
            #expect(m.fs.offline.pins.isEmpty)
        }

        /// A mount of `fake` from the tree stored in `storeFolder`, with its disk cache in `cache`:
        /// what a remount is.
        static func mountStored(
            _ fake: InMemoryDropbox, store storeFolder: String, cache: TemporaryFolder, capacity: UInt64
        ) throws -> (Filesystem, TreeStore) {
            let store = try TreeStoreTests.open(storeFolder)
            let stored = store.loadTree(folderTime: CoreTests.folderTime, now: 0)
            var options = CoreTests.options(prefetch: true, watchChanges: true)
            options.store = store
            options.reader = ReaderOptions(diskCache: DiskCacheOptions(directory: cache.path, capacity: capacity))
            return (Filesystem(client: fake, options: options, restoring: stored), store)
        }

        /// A remount with a smaller cap trims the cache at open: the stored pins' entries stay, the
        /// newer unpinned one goes, though least recently used order would drop the pinned first.
        @Test func theTrimAtARemountKeepsThePinnedEntries() async throws {
            let storeFolder = TreeStoreTests.folder()
            defer { try? FileManager.default.removeItem(atPath: storeFolder) }
            let cache = try TemporaryFolder()
            let fake = InMemoryDropbox()
            fake.addFile("/keep/a.bin", size: 300 * K, seed: 1)
            fake.addFile("/keep/sub/b.bin", size: 200 * K, seed: 2)
            fake.addFile("/other/big.bin", size: 600 * K, seed: 3)
            func mount(capacity: UInt64) throws -> (Filesystem, TreeStore) {
                try Self.mountStored(fake, store: storeFolder, cache: cache, capacity: capacity)
            }
            let (first, firstStore) = try mount(capacity: 2048 * K)
            first.startSync()
            #expect(await first.waitUntilCaughtUp(seconds: 60))
            let m = Mounted(fs: first, fake: fake, folder: cache)
            _ = try await m.request(Filesystem.pinRequestAttribute, "/keep")
            try await m.waitKept(["/keep/a.bin", "/keep/sub/b.bin"])
            #expect(try await Self.readAll(m, "/other/big.bin") == fake.contents(of: "/other/big.bin"))
            first.finishDiskCacheWrites()
            #expect(try m.cached().count == 3)
            first.stop()
            firstStore.close()

            let (second, secondStore) = try mount(capacity: 700 * K)
            defer {
                second.stop()
                secondStore.close()
            }
            #expect(second.offline.pins == ["/keep"])
            #expect(try m.cached() == [try m.hash("/keep/a.bin"), try m.hash("/keep/sub/b.bin")])
        }

        @Test func aPinMovedWhileNothingWasMountedIsFollowedAtTheRemount() async throws {
            let storeFolder = TreeStoreTests.folder()
            defer { try? FileManager.default.removeItem(atPath: storeFolder) }
            let cache = try TemporaryFolder()
            let fake = InMemoryDropbox()
            fake.addFile("/keep/a.bin", size: 300 * K, seed: 1)
            fake.addFile("/keep/sub/b.bin", size: 200 * K, seed: 2)
            func mount() throws -> (Filesystem, TreeStore) {
                try Self.mountStored(fake, store: storeFolder, cache: cache, capacity: 2048 * K)
            }
            let (first, firstStore) = try mount()
            first.startSync()
            #expect(await first.waitUntilCaughtUp(seconds: 60))
            let m = Mounted(fs: first, fake: fake, folder: cache)
            _ = try await m.request(Filesystem.pinRequestAttribute, "/keep")
            try await m.waitKept(["/keep/a.bin", "/keep/sub/b.bin"])
            first.stop()
            firstStore.close()

            fake.move(from: "/keep", to: "/Projects/keep")
            let (second, secondStore) = try mount()
            defer {
                second.stop()
                secondStore.close()
            }
            #expect(second.offline.pins == ["/keep"], "as stored")
            second.startSync()
            #expect(await second.waitUntilCaughtUp(seconds: 60))
            await second.offline.keepOnce()
            #expect(second.offline.pins == ["/Projects/keep"])
            second.finishDiskCacheWrites()
            #expect(try m.cached() == [try m.hash("/Projects/keep/a.bin"), try m.hash("/Projects/keep/sub/b.bin")])
            // The store's queue writes the pins before it answers this read.
            #expect(secondStore.storedPins().map(\.path) == ["/Projects/keep"])
            #expect(secondStore.storedPins().first?.id.hasPrefix("id:") == true)
        }

        @Test func theSpaceCheckSaysTheNumbers() {
            #expect(PinSpace.refusal(path: "/a", pinnedBytes: 10, otherPinnedBytes: 0, newBytes: 10, capacity: 10, free: 10) == nil)
            #expect(PinSpace.refusal(path: "/a", pinnedBytes: 11, otherPinnedBytes: 0, newBytes: 11, capacity: 10, free: 100)
                == "/a does not fit: it needs 11 B, and the disk cache holds at most 10 B (mount with a larger --cache-size, or unpin something)")
            #expect(PinSpace.refusal(path: "/a", pinnedBytes: 5 << 20, otherPinnedBytes: 0, newBytes: 3 << 20, capacity: 1 << 30, free: 2 << 20)
                == "/a does not fit: 3.0 MiB (3145728 bytes) are still to download, and the disk of the cache folder has 2.0 MiB (2097152 bytes) free")
            #expect(PinPlan.covers("/Keep", "/keep/Sub"))
            #expect(!PinPlan.covers("/keep", "/keeper"))
            #expect(PinPlan.covers("/", "/anything"))
        }
    }
}
