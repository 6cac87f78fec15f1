// The thumbnail writer driven through the core (Filesystem.thumbnailsWanted) against the in-memory
// Dropbox, writing into a temporary thumbnail cache: one valid PNG per image and size (`normal`
// and `large`) named by the MD5 of its URI, with the standard's text; batches of at most 25 and of
// one size, one in flight per size, the folder shown last first; the listing waits for the
// `normal` ones only; files Dropbox cannot thumbnail skipped; current cache files
// left alone and stale ones (a changed photo) written again; the cap, counting both sizes; one
// size only when asked; nothing at all for a folder without images.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

@testable import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

extension ThumbnailTests {
    @Suite struct WriterTests {
        static let mountpoint = "/home/u/Drop box"

        /// A Filesystem over `fake` writing thumbnails into a fresh temporary folder.
        struct Setup {
            let fake: InMemoryDropbox
            let client: FaultInjectingClient<InMemoryDropbox>
            let fs: Filesystem
            /// `$XDG_CACHE_HOME/thumbnails`.
            let folder: String
            var normal: String { folder + "/normal" }
            var large: String { folder + "/large" }

            init(
                _ fake: InMemoryDropbox, capacity: UInt64 = 200 << 20, listingTTL: Double = .infinity,
                listingWait: Double = 60, sizes: [ThumbnailSize] = [.normal, .large], sharing other: Setup? = nil
            ) {
                self.fake = fake
                client = FaultInjectingClient(fake)
                // A setup that shares another's folder is a later mount of the same profile.
                folder = other?.folder ?? FileManager.default.temporaryDirectory.path + "/thumbs-\(UUID().uuidString)/thumbnails"
                var options = CoreTests.options(folderListingTTL: listingTTL)
                options.thumbnails = ThumbnailOptions(
                    mountpoint: WriterTests.mountpoint, folder: folder, capacity: capacity,
                    ledger: (folder as NSString).deletingLastPathComponent + "/thumbnails.ledger", listingWait: listingWait,
                    sizes: sizes)
                fs = Filesystem(client: client, options: options)
            }

            /// What a file manager's listing does: returns once the thumbnails are written (or
            /// after `listingWait`).
            func show(_ path: String) async throws {
                await fs.thumbnailsWanted(folder: try await CoreTests.inode(fs, path))
            }

            func settle() async throws {
                try await CoreTests.waitUntil("the thumbnail writer is idle") { fs.thumbnails?.isIdle ?? true }
            }

            /// The cache file of a file in the mount, or nil.
            func cacheFile(_ path: String, _ size: ThumbnailSize = .normal) -> [UInt8]? {
                let name = ThumbnailNames.cacheFileName(uri: ThumbnailNames.fileURI(WriterTests.mountpoint + path))
                return FileManager.default.contents(atPath: folder + "/" + size.rawValue + "/" + name).map { Array($0) }
            }

            /// The files in the `normal` folder.
            var cacheFiles: [String] { files(.normal) }

            func files(_ size: ThumbnailSize) -> [String] {
                ((try? FileManager.default.contentsOfDirectory(atPath: folder + "/" + size.rawValue)) ?? []).sorted()
            }

            func remove() {
                try? FileManager.default.removeItem(atPath: (folder as NSString).deletingLastPathComponent)
            }
        }

        static func mode(_ path: String) -> mode_t? {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
        }

        static func photos(_ fake: InMemoryDropbox, _ count: Int, in folder: String = "/Camera Uploads") {
            for i in 1...count {
                fake.addFile(
                    folder + String(format: "/IMG_%04d.jpg", i), size: 3000 + UInt64(i),
                    clientModified: DropboxTimestamp(secondsSinceEpoch: 1_700_000_000 + Int64(i)))
            }
        }

        @Test func oneValidThumbnailPerImageInBatchesOfTwentyFive() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 60)
            fake.addFile("/Camera Uploads/PANO_0001.jpg", size: 21 << 20)
            fake.addFile("/Camera Uploads/notes.txt", size: 100)
            fake.addFile("/Camera Uploads/empty.png", contents: [])
            fake.addSymlink("/Camera Uploads/link.jpg", target: "IMG_0001.jpg")
            fake.addFolder("/Camera Uploads/Edited.jpg")
            let setup = Setup(fake)
            defer { setup.remove() }
            try await setup.show("/Camera Uploads")
            try await setup.settle()

            // One size a batch; each size in name order.
            let batches = fake.thumbnailBatches
            #expect(batches.allSatisfy { Set($0.map(\.size)).count == 1 })
            let normal = batches.filter { $0[0].size == .w128h128 }
            let large = batches.filter { $0[0].size == .w256h256 }
            #expect(normal.map(\.count) == [25, 25, 10] && large.map(\.count) == [25, 25, 10])
            #expect(batches.joined().allSatisfy { $0.path.hasPrefix("rev:") && $0.format == .png && $0.mode == .strict })
            #expect(normal.joined().map(\.path) == large.joined().map(\.path), "the same images")
            #expect(fake.callCount(.download) == 0)
            #expect(setup.cacheFiles.count == 60)
            #expect(setup.files(.large) == setup.cacheFiles, "the same names in large/")
            #expect(Self.mode(setup.normal) == 0o700)
            #expect(Self.mode(setup.large) == 0o700)
            #expect(Self.mode(setup.folder) == 0o700)
            for i in [1, 26, 60] {
                for size in ThumbnailSize.defaults {
                    let path = String(format: "/Camera Uploads/IMG_%04d.jpg", i)
                    let png = try #require(setup.cacheFile(path, size), "\(path) \(size)")
                    let chunks = try #require(PNGTextTests.independentChunks(png))
                    #expect(chunks.first?.0 == "IHDR" && chunks.last?.0 == "IEND")
                    let text = try #require(PNGText.text(of: png))
                    let uri = "file:///home/u/Drop%20box/Camera%20Uploads/" + String(format: "IMG_%04d.jpg", i)
                    #expect(text["Thumb::URI"] == uri)
                    #expect(text["Thumb::MTime"] == String(1_700_000_000 + i))
                    #expect(text["Thumb::Size"] == String(3000 + i))
                    let attributes = try await CoreTests.resolve(setup.fs, path)
                    #expect(text["Thumb::MTime"] == String(attributes.mtime), "Thumb::MTime is what stat shows")
                }
            }
            for size in ThumbnailSize.defaults {
                let folder = setup.folder + "/" + size.rawValue
                for file in setup.files(size) {
                    #expect(Self.mode(folder + "/" + file) == 0o600)
                    #expect(file.hasSuffix(".png") && !file.hasPrefix("."), "no temporary file left: \(file)")
                }
                for other in ["PANO_0001.jpg", "notes.txt", "empty.png", "link.jpg", "Edited.jpg"] {
                    #expect(setup.cacheFile("/Camera Uploads/" + other, size) == nil, "\(other)")
                }
            }
        }

        @Test func currentThumbnailsAreKeptAndAChangedPhotoGetsANewOne() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 3, in: "/p")
            // Without a watcher, a folder is listed again once its listing expired: at once here.
            let setup = Setup(fake, listingTTL: 0)
            defer { setup.remove() }
            try await setup.show("/p")
            try await setup.settle()
            #expect(fake.thumbnailBatches.map(\.count) == [3, 3])
            #expect(Set(fake.thumbnailBatches.map(\.[0].size)) == [.w128h128, .w256h256])
            let before = try #require(setup.cacheFile("/p/IMG_0002.jpg"))
            let beforeLarge = try #require(setup.cacheFile("/p/IMG_0002.jpg", .large))
            var kept = stat()
            let keptName = setup.normal + "/" + ThumbnailNames.cacheFileName(uri: ThumbnailNames.fileURI(Self.mountpoint + "/p/IMG_0001.jpg"))
            #expect(stat(keptName, &kept) == 0)

            // Shown again, unchanged: nothing is asked of Dropbox and no file is written.
            try await setup.show("/p")
            try await setup.settle()
            #expect(fake.callCount(.getThumbnailBatch) == 2)

            // A new revision with a new mtime: only that photo is fetched again.
            fake.modifyFile("/p/IMG_0002.jpg", contents: [9, 9, 9], clientModified: DropboxTimestamp(secondsSinceEpoch: 1_800_000_000))
            try await setup.show("/p")
            try await setup.settle()
            #expect(try await CoreTests.resolve(setup.fs, "/p/IMG_0002.jpg").mtime == 1_800_000_000)
            #expect(fake.thumbnailBatches.map(\.count) == [3, 3, 1, 1])
            #expect(Set(fake.thumbnailBatches[2...].map(\.[0].size)) == [.w128h128, .w256h256])
            let after = try #require(setup.cacheFile("/p/IMG_0002.jpg"))
            #expect(after != before)
            let afterText = try #require(PNGText.text(of: after))
            #expect(afterText["Thumb::MTime"] == "1800000000")
            let afterLarge = try #require(setup.cacheFile("/p/IMG_0002.jpg", .large))
            #expect(afterLarge != beforeLarge)
            #expect(PNGText.text(of: afterLarge)?["Thumb::MTime"] == "1800000000")
            var still = stat()
            #expect(stat(keptName, &still) == 0)
            #expect(still.st_ino == kept.st_ino, "an unchanged photo's thumbnail is not written again")
        }

        @Test func aStaleOrDamagedCacheFileIsWrittenAgain() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 2, in: "/p")
            let setup = Setup(fake)
            defer { setup.remove() }
            let uri = ThumbnailNames.fileURI(Self.mountpoint + "/p/IMG_0001.jpg")
            let damaged = ThumbnailNames.cacheFileName(uri: ThumbnailNames.fileURI(Self.mountpoint + "/p/IMG_0002.jpg"))
            try FileManager.default.createDirectory(atPath: setup.normal, withIntermediateDirectories: true)
            // A thumbnail another program made of an older version (another MTime), and a cut one.
            let stale = try #require(PNGText.adding([("Thumb::URI", uri), ("Thumb::MTime", "5")], to: PNGTextTests.picture))
            #expect(FileManager.default.createFile(atPath: setup.normal + "/" + ThumbnailNames.cacheFileName(uri: uri), contents: Data(stale)))
            #expect(FileManager.default.createFile(atPath: setup.normal + "/" + damaged, contents: Data(stale.prefix(40))))
            try await setup.show("/p")
            try await setup.settle()
            #expect(fake.thumbnailBatches.map(\.count) == [2, 2])
            let first = try #require(setup.cacheFile("/p/IMG_0001.jpg"))
            #expect(PNGText.text(of: first)?["Thumb::MTime"] == "1700000001")
            let second = try #require(setup.cacheFile("/p/IMG_0002.jpg"))
            #expect(PNGText.text(of: second)?["Thumb::MTime"] == "1700000002")
        }

        // GLib (and with it PCManFM, Thunar, Nautilus, Nemo, Caja) rejects a thumbnail whose
        // Thumb::Size is not the file's size. A photo edited with its modification time kept
        // (`exiftool -P`, `touch -r`, a sync tool keeping times) is a new revision of another size
        // under the same client_modified: its thumbnail must be written again, or the file
        // manager finds it wrong and reads the photo.
        @Test func aNewRevisionWithTheSameMTimeButAnotherSizeGetsANewThumbnail() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 2, in: "/p")
            let setup = Setup(fake, listingTTL: 0)
            defer { setup.remove() }
            try await setup.show("/p")
            try await setup.settle()
            #expect(fake.thumbnailBatches.map(\.count) == [2, 2])
            let before = try #require(setup.cacheFile("/p/IMG_0002.jpg"))
            #expect(PNGText.text(of: before)?["Thumb::Size"] == "3002")

            fake.modifyFile(
                "/p/IMG_0002.jpg", contents: [UInt8](repeating: 7, count: 5000),
                clientModified: DropboxTimestamp(secondsSinceEpoch: 1_700_000_002))
            try await setup.show("/p")
            try await setup.settle()
            let attributes = try await CoreTests.resolve(setup.fs, "/p/IMG_0002.jpg")
            #expect(attributes.size == 5000 && attributes.mtime == 1_700_000_002)
            #expect(fake.thumbnailBatches.map(\.count) == [2, 2, 1, 1], "only the edited photo, both sizes")
            for size in ThumbnailSize.defaults {
                let after = try #require(setup.cacheFile("/p/IMG_0002.jpg", size))
                #expect(PNGText.text(of: after)?["Thumb::Size"] == "5000", "\(size)")
            }
            #expect(setup.cacheFile("/p/IMG_0002.jpg") != before, "the new revision's picture")
        }

        // Something not a regular file at a cache file's name (a FIFO) must not block the disk
        // queue: opening a FIFO to read waits for a writer, and every later check and write of
        // this mount would wait behind it.
        @Test func aFIFOAtACacheFileNameDoesNotStopTheWriter() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 2, in: "/p")
            let setup = Setup(fake, listingWait: 1, sizes: [.normal])
            defer { setup.remove() }
            try FileManager.default.createDirectory(atPath: setup.normal, withIntermediateDirectories: true)
            let fifo = setup.normal + "/"
                + ThumbnailNames.cacheFileName(uri: ThumbnailNames.fileURI(Self.mountpoint + "/p/IMG_0001.jpg"))
            #expect(mkfifo(fifo, 0o600) == 0)
            defer {
                // Lets a reader blocked on the FIFO go (it reads nothing).
                let writer = open(fifo, O_WRONLY | O_NONBLOCK)
                if writer >= 0 { close(writer) }
            }
            try await setup.show("/p")
            try await CoreTests.waitUntil("the writer is idle", timeout: .seconds(10)) { setup.fs.thumbnails?.isIdle ?? true }
            #expect(setup.cacheFiles.count == 2)
            let written = try #require(setup.cacheFile("/p/IMG_0001.jpg"))
            #expect(PNGText.text(of: written)?["Thumb::MTime"] == "1700000001")
        }

        @Test func theFolderShownLastGoesFirst() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 60, in: "/a")
            Self.photos(fake, 5, in: "/b")
            let setup = Setup(fake)
            defer { setup.remove() }
            let a = try await CoreTests.inode(setup.fs, "/a")
            let b = try await CoreTests.inode(setup.fs, "/b")
            setup.client.hold(.getThumbnailBatch)
            let showA = Task { await setup.fs.thumbnailsWanted(folder: a) }
            try await CoreTests.waitUntil("the first batches of /a, one of each size, are in flight") {
                setup.client.heldCalls(.getThumbnailBatch) == 2
            }
            let showB = Task { await setup.fs.thumbnailsWanted(folder: b) }
            try await Task.sleep(for: .milliseconds(50))
            #expect(setup.client.heldCalls(.getThumbnailBatch) == 2, "one batch in flight per size")
            setup.client.release(.getThumbnailBatch)
            await showA.value
            await showB.value
            try await setup.settle()
            func revs(_ folder: String) -> Set<String> {
                Set(fake.entries.compactMap { entry in
                    guard case .file(let file) = entry, file.pathLower?.hasPrefix(folder + "/") == true else { return nil }
                    return "rev:" + file.rev
                })
            }
            let (inA, inB) = (revs("/a"), revs("/b"))
            func order(_ size: ThumbnailArg.Size) -> [String] {
                fake.thumbnailBatches.filter { $0.allSatisfy { $0.size == size } }.map { batch in
                    let paths = Set(batch.map(\.path))
                    return (paths.isSubset(of: inA) ? "a" : paths.isSubset(of: inB) ? "b" : "mixed") + "\(batch.count)"
                }
            }
            // In each size, /b, shown while /a's first batches were in flight, goes before the rest of /a.
            #expect(order(.w128h128) == ["a25", "b5", "a25", "a10"])
            #expect(order(.w256h256) == ["a25", "b5", "a25", "a10"])
            #expect(fake.thumbnailBatches.count == 8)
            #expect(setup.cacheFiles.count == 65)
            #expect(setup.files(.large).count == 65)
        }

        /// The bytes of the files in the `normal` folder.
        static func sizes(_ setup: Setup, _ size: ThumbnailSize = .normal) throws -> [String: Int] {
            var sizes: [String: Int] = [:]
            for name in setup.files(size) {
                sizes[name] = try FileManager.default.attributesOfItem(atPath: setup.folder + "/" + size.rawValue + "/" + name)[.size] as? Int ?? 0
            }
            return sizes
        }

        @Test func theCapKeepsTheNewestFolderTheOldestThumbnailsGoFirst() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 30, in: "/full")
            Self.photos(fake, 2, in: "/next")
            // The in-memory PNGs plus their text are a few hundred bytes each: room for about ten.
            // (One size, so one batch is in flight; both sizes: theCapCountsBothSizes.)
            let setup = Setup(fake, capacity: 3000, sizes: [.normal])
            defer { setup.remove() }
            LogCapture.start()
            try await setup.show("/full")
            try await setup.settle()
            let first = try Self.sizes(setup)
            #expect(!first.isEmpty && first.count < 30)
            #expect(first.values.reduce(0, +) <= 3000)
            #expect(fake.callCount(.getThumbnailBatch) == 1, "the folder's rest is not fetched: the cap is full of it")
            #expect(LogCapture.lines(containing: "--thumbnail-cache-size").filter { $0.contains("/full") }.count == 1)
            #expect(setup.fs.wantsThumbnails, "later folders still get thumbnails")
            #expect(setup.fs.thumbnails?.ledger.total == UInt64(first.values.reduce(0, +)))
            // The next folder makes room by removing the oldest of the first.
            try await setup.show("/next")
            try await setup.settle()
            #expect(fake.callCount(.getThumbnailBatch) == 2)
            let second = try Self.sizes(setup)
            #expect(second.values.reduce(0, +) <= 3000)
            for path in ["/next/IMG_0001.jpg", "/next/IMG_0002.jpg"] { #expect(setup.cacheFile(path) != nil, "\(path)") }
            #expect(setup.cacheFile("/full/IMG_0001.jpg") == nil, "the oldest went first")
            let kept = Set(second.keys).intersection(first.keys)
            #expect(kept.count == second.count - 2, "only the new folder's two are new")
        }

        @Test func theCapHoldsAcrossMountsAndLeavesOtherThumbnailsAlone() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 8, in: "/a")
            Self.photos(fake, 8, in: "/b")
            Self.photos(fake, 8, in: "/c")
            // What one folder takes: the cap holds one and a half of them.
            let probe = Setup(fake, sizes: [.normal])
            try await probe.show("/a")
            try await probe.settle()
            let cap = try Self.sizes(probe).values.reduce(0, +) * 3 / 2
            probe.remove()
            let first = Setup(fake, capacity: UInt64(cap), sizes: [.normal])
            defer { first.remove() }
            try await first.show("/a")
            try await first.settle()
            let written = try Self.sizes(first)
            #expect(written.count == 8)
            let perThumbnail = written.values.max()!
            // A file manager replaced one of ours with its own: not ours to remove.
            let theirs = ThumbnailNames.cacheFileName(uri: ThumbnailNames.fileURI(WriterTests.mountpoint + "/a/IMG_0001.jpg"))
            #expect(FileManager.default.createFile(atPath: first.normal + "/" + theirs, contents: Data(repeating: 1, count: 10)))

            // Two later mounts of the same profile: the cap counts what earlier ones wrote.
            for folder in ["/b", "/c"] {
                let later = Setup(fake, capacity: UInt64(cap), sizes: [.normal], sharing: first)
                try await later.show(folder)
                try await later.settle()
                let now = try Self.sizes(later)
                let ours = now.filter { $0.key != theirs }
                #expect(ours.values.reduce(0, +) <= cap, "\(folder): \(ours.values.reduce(0, +)) bytes")
                #expect(ours.count >= cap / perThumbnail - 1)
                #expect(now[theirs] == 10, "the file manager's own thumbnail stays")
                #expect(later.fs.thumbnails!.ledger.total <= UInt64(cap))
            }
            let last = try Self.sizes(first)
            for i in 1...8 {
                let name = ThumbnailNames.cacheFileName(uri: ThumbnailNames.fileURI(WriterTests.mountpoint + String(format: "/c/IMG_%04d.jpg", i)))
                #expect(last[name] != nil, "the newest folder is whole")
            }
        }

        @Test func aFolderWithoutImagesWritesNothing() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/docs/a.txt", size: 10)
            fake.addFile("/docs/b.pdf", size: 10)
            fake.addFolder("/docs/photos.jpg")
            let setup = Setup(fake)
            defer { setup.remove() }
            try await setup.show("/docs")
            try await setup.settle()
            #expect(fake.callCount(.getThumbnailBatch) == 0)
            #expect(!FileManager.default.fileExists(atPath: setup.folder), "not even the folder is made")
        }

        @Test func aFailedRequestLeavesTheFolderToTheFileManager() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 30, in: "/p")
            Self.photos(fake, 3, in: "/q")
            let setup = Setup(fake)
            defer { setup.remove() }
            setup.client.failNext(.getThumbnailBatch, with: .serverError(status: 503))
            try await setup.show("/p")
            try await setup.settle()
            // The first batch (of either size) failed as a whole: the rest of the folder, every size,
            // is not asked for; the other size's first batch may have been in flight already.
            #expect(setup.client.callCount(.getThumbnailBatch) <= 2)
            #expect(setup.cacheFiles.count + setup.files(.large).count <= 25)
            // The next folder is tried as usual.
            #expect(setup.fs.wantsThumbnails)
            let before = (setup.cacheFiles.count, setup.files(.large).count)
            try await setup.show("/q")
            #expect(setup.cacheFiles.count == before.0 + 3)
            try await setup.settle()
            #expect(setup.files(.large).count == before.1 + 3)
        }

        @Test func theListingIsAnsweredOnceTheThumbnailsAreWritten() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 30, in: "/p")
            let setup = Setup(fake)
            defer { setup.remove() }
            try await setup.show("/p")
            #expect(setup.cacheFiles.count == 30, "every file is there when the listing is answered")
            try await setup.settle()
            #expect(setup.files(.large).count == 30)
        }

        // No clock here: with no listing wait at all, the listing is answered only because the
        // normal thumbnails are written, and waiting for the large ones would hang until the time
        // limit. (A wall-clock bound failed when the task pool ran other tests first.)
        @Test(.timeLimit(.minutes(2))) func theListingWaitsForTheNormalOnesOnly() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 30, in: "/p")
            let setup = Setup(fake, listingWait: .infinity)
            defer { setup.remove() }
            // The normal batches go through; the large ones stall.
            setup.client.holdThumbnailBatches { $0.contains { $0.size == .w256h256 } }
            try await setup.show("/p")
            #expect(setup.cacheFiles.count == 30)
            try await CoreTests.waitUntil("the large batch is in flight") {
                setup.client.heldCalls(.getThumbnailBatch) == 1
            }
            #expect(setup.files(.large).isEmpty)
            // Shown again meanwhile: the normal ones are current, so it is answered at once too.
            try await setup.show("/p")
            setup.client.release(.getThumbnailBatch)
            try await setup.settle()
            #expect(setup.files(.large).count == 30)
            #expect(fake.thumbnailBatches.map(\.count).sorted() == [5, 5, 25, 25])
        }

        @Test func theCapCountsBothSizes() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 10, in: "/p")
            // What both sizes take, without a cap.
            let probe = Setup(fake)
            try await probe.show("/p")
            try await probe.settle()
            func bytes(_ size: ThumbnailSize) throws -> Int {
                try probe.files(size).reduce(0) { total, name in
                    let path = probe.folder + "/" + size.rawValue + "/" + name
                    return total + (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0)
                }
            }
            let (normalBytes, largeBytes) = (try bytes(.normal), try bytes(.large))
            probe.remove()
            #expect(probe.fs.thumbnails?.bytesWritten == UInt64(normalBytes + largeBytes))

            // Room for about three quarters of them.
            let setup = Setup(fake, capacity: UInt64(normalBytes + largeBytes / 2))
            defer { setup.remove() }
            try await setup.show("/p")
            try await setup.settle()
            // The two sizes are fetched side by side: which of them the cap cut short may vary.
            let count = setup.cacheFiles.count + setup.files(.large).count
            #expect(count > 10 && count < 20, "\(count)")
            #expect(setup.fs.thumbnails!.bytesWritten <= UInt64(normalBytes + largeBytes / 2))
            #expect(setup.fs.thumbnails!.ledger.total == setup.fs.thumbnails!.bytesWritten)
        }

        @Test func oneSizeOnlyWhenAsked() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 3, in: "/p")
            let normalOnly = Setup(fake, sizes: [.normal])
            defer { normalOnly.remove() }
            try await normalOnly.show("/p")
            try await normalOnly.settle()
            #expect(fake.thumbnailBatches.map { $0.map(\.size) } == [[.w128h128, .w128h128, .w128h128]])
            #expect(normalOnly.cacheFiles.count == 3)
            #expect(!FileManager.default.fileExists(atPath: normalOnly.large))

            fake.resetCalls()
            // Large only: the listing then waits for the large ones.
            let largeOnly = Setup(fake, sizes: [.large])
            defer { largeOnly.remove() }
            try await largeOnly.show("/p")
            #expect(largeOnly.files(.large).count == 3)
            try await largeOnly.settle()
            #expect(fake.thumbnailBatches.map { $0.map(\.size) } == [[.w256h256, .w256h256, .w256h256]])
            #expect(!FileManager.default.fileExists(atPath: largeOnly.normal))
            let options = ThumbnailOptions(mountpoint: "/m", folder: "/t", sizes: [.large, .normal, .large])
            #expect(options.sizes == [.normal, .large], "smallest first, once each")
        }

        // The batches are held until released, so the listing's answer can only come from its
        // wait running out: the time limit catches a wait that never ends, with no upper bound
        // on the clock that a busy task pool could break.
        @Test(.timeLimit(.minutes(2))) func aStalledDropboxHoldsTheListingBriefly() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 3, in: "/q")
            let setup = Setup(fake, listingWait: 0.3)
            defer { setup.remove() }
            // The listing waits `listingWait` only; the work goes on.
            setup.client.hold(.getThumbnailBatch)
            let start = ContinuousClock.now
            try await setup.show("/q")
            let waited = ContinuousClock.now - start
            #expect(waited >= .milliseconds(250), "\(waited)")
            #expect(setup.client.heldCalls(.getThumbnailBatch) <= 2)
            setup.client.release(.getThumbnailBatch)
            try await setup.settle()
            #expect(setup.cacheFiles.count == 3)
            #expect(setup.files(.large).count == 3)
        }

        @Test func unmountingEndsTheWait() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 3, in: "/p")
            let setup = Setup(fake)
            defer { setup.remove() }
            setup.client.hold(.getThumbnailBatch)
            let listing = Task { try await setup.show("/p") }
            try await CoreTests.waitUntil("the batches are in flight") { setup.client.heldCalls(.getThumbnailBatch) == 2 }
            setup.fs.stop()
            try await listing.value
            try await CoreTests.waitUntil("the held requests were cancelled") {
                setup.client.cancelledCalls(.getThumbnailBatch) == 2
            }
            #expect(setup.cacheFiles.isEmpty)
            #expect(!setup.fs.wantsThumbnails)
        }

        @Test func offWithoutOptions() async throws {
            let fake = InMemoryDropbox()
            Self.photos(fake, 2, in: "/p")
            let fs = Filesystem(client: fake, options: CoreTests.options())
            #expect(!fs.wantsThumbnails)
            await fs.thumbnailsWanted(folder: try await CoreTests.inode(fs, "/p"))
            #expect(fake.callCount(.getThumbnailBatch) == 0)
        }
    }
}
