// Tests of the content_hash check: bytes damaged once on the way are downloaded again (one
// warning); a file whose downloaded bytes do not match twice answers EIO (and logs one error)
// instead of wrong bytes; small files are checked before any byte is served; a
// whole sequential pass over a large file fails at its last read; the check survives buffers being
// evicted under a tight memory cap.

import DropboxAPI
@testable import DropboxFS
import DropboxTestSupport
import Synchronization
import Testing

private let K = 1 << 10
private let M = 1 << 20

@Suite struct ReaderIntegrityTests {
    @Test func aSmallFileThatDoesNotMatchItsHashIsNeverServed() async throws {
        LogCapture.start()
        let fixture = ReaderFixture(corruptAt: 100)
        fixture.fake.addFile("/integrity/small.bin", size: UInt64(3 * M), seed: 1)
        let opened = try await fixture.open("/integrity/small.bin")
        for offset in [UInt64(2 * M), 0, 100] {
            await #expect {
                try await fixture.fs.read(handle: opened.handle, offset: offset, size: 4 * K)
            } throws: { error in
                guard let error = error as? FilesystemError, case .integrity = error else { return false }
                return error.errno == 5
            }
        }
        let lines = LogCapture.lines(containing: "/integrity/small.bin")
        #expect(lines.count == 2, "one warning (downloading again), one error: \(lines)")
        #expect(lines.allSatisfy { $0.contains("content_hash") })
        #expect(lines.last?.contains("EIO") == true)
        let downloads = fixture.recorder.ranges(of: "/integrity/small.bin", in: fixture.fake)
        #expect(downloads.filter { $0.offset == 0 }.count == 2, "the file was downloaded twice, no more: \(downloads)")
    }

    @Test func bytesDamagedOnceAreDownloadedAgainAndServedExactly() async throws {
        LogCapture.start()
        let fixture = ReaderFixture(corruptAt: 100, corruptions: 1)
        fixture.fake.addFile("/integrity/once.bin", size: UInt64(3 * M), seed: 11)
        let bytes = try await fixture.readAll("/integrity/once.bin", chunk: 128 * K)
        #expect(bytes == fixture.fake.contents(of: "/integrity/once.bin"))
        let lines = LogCapture.lines(containing: "/integrity/once.bin")
        #expect(lines.count == 1 && lines.first?.contains("once more") == true, "\(lines)")
        // A large file damaged once: the pass that served damaged bytes fails at its end, the
        // next pass gets the exact bytes and the file is verified.
        let size = 12 * M + 5
        let large = ReaderFixture(corruptAt: UInt64(9 * M + 7), corruptions: 1)
        large.fake.addFile("/integrity/once-large.bin", size: UInt64(size), seed: 12)
        let opened = try await large.open("/integrity/once-large.bin")
        #expect(await Self.pass(large, opened.handle, size: size).failedAt != nil)
        let second = await Self.pass(large, opened.handle, size: size)
        #expect(second.failedAt == nil)
        #expect(second.bytes == large.fake.contents(of: "/integrity/once-large.bin"))
        let verification = large.fs.reader.state.withLock { s in
            s.contents.values.first { $0.label.hasPrefix("/integrity/once-large.bin") }?.check.verification
        }
        #expect(verification == .verified)
    }

    /// A mismatch drops the pages the kernel cached of the file at once (an inode invalidation),
    /// not only at its next open: a handle opened before the damaged pass would otherwise read
    /// them from the page cache, and its pass reach the check only at its end, under the new
    /// download, which matches.
    @Test func aMismatchDropsTheKernelsPagesOfTheFileAtOnce() async throws {
        let size = 12 * M
        let large = ReaderFixture(corruptAt: UInt64(5 * M + 3), corruptions: 1)
        let published = Mutex<[Invalidation]>([])
        large.fs.setInvalidationHandler { batch in published.withLock { $0 += batch } }
        large.fake.addFile("/integrity/pages.bin", size: UInt64(size), seed: 14)
        let inode = try await large.inode("/integrity/pages.bin")
        let before = try await large.fs.openFile(inode)  // opened before the damaged pass, left unread
        let opened = try await large.fs.openFile(inode)
        #expect(await Self.pass(large, opened.handle, size: size).failedAt != nil)
        try await CoreTests.waitUntil("the damaged file's pages were dropped") {
            published.withLock { $0 }.contains(.inode(inode))
        }
        // A file that matched drops nothing.
        let good = ReaderFixture()
        let goodPublished = Mutex<[Invalidation]>([])
        good.fs.setInvalidationHandler { batch in goodPublished.withLock { $0 += batch } }
        good.fake.addFile("/integrity/good.bin", size: UInt64(size), seed: 15)
        let goodHandle = try await good.open("/integrity/good.bin")
        #expect(await Self.pass(good, goodHandle.handle, size: size).failedAt == nil)
        #expect(goodPublished.withLock { $0 }.isEmpty)
        large.fs.releaseFile(handle: before.handle)
        large.fs.releaseFile(handle: opened.handle)
        good.fs.releaseFile(handle: goodHandle.handle)
    }

    /// Reads one whole pass in 128 KiB pieces; returns the offset of the failing read (nil: none).
    static func pass(_ fixture: ReaderFixture, _ handle: UInt64, size: Int) async -> (bytes: [UInt8], failedAt: Int?) {
        var bytes: [UInt8] = []
        while bytes.count < size {
            do {
                let piece = try await fixture.fs.read(handle: handle, offset: UInt64(bytes.count), size: 128 * K)
                if piece.isEmpty { break }
                bytes += piece
            } catch {
                #expect(error.errno == 5)
                return (bytes, bytes.count)
            }
        }
        return (bytes, nil)
    }

    @Test func aWholePassOverALargeFileFailsAtItsLastRead() async throws {
        LogCapture.start()
        let size = 20 * M + 3
        let fixture = ReaderFixture(corruptAt: UInt64(10 * M + 5))
        fixture.fake.addFile("/integrity/large.bin", size: UInt64(size), seed: 2)
        let opened = try await fixture.open("/integrity/large.bin")
        // Reads fail from the moment the mismatch is known, at the latest at the read reaching the
        // end, which waits for the check: the pass served bytes of the damaged download.
        let first = try #require(await Self.pass(fixture, opened.handle, size: size).failedAt)
        #expect(first > 10 * M && first <= size - size % (128 * K))
        #expect(LogCapture.lines(containing: "/integrity/large.bin").count == 1, "the file is downloaded once more")
        // The next pass reads the new download, damaged again: it fails too, now for good.
        // (It may fail before 10 MiB: the read-ahead can reach the end, and the check, first.)
        _ = try #require(await Self.pass(fixture, opened.handle, size: size).failedAt)
        #expect(LogCapture.lines(containing: "/integrity/large.bin").count == 2)
        await #expect(throws: FilesystemError.self) {
            try await fixture.fs.read(handle: opened.handle, offset: 0, size: 10)
        }
    }

    @Test func aMatchingFileIsVerifiedAfterAWholePass() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/integrity/good.bin", size: UInt64(13 * M + 1), seed: 3)
        let opened = try await fixture.open("/integrity/good.bin")
        var bytes: [UInt8] = []
        while true {
            let piece = try await fixture.fs.read(handle: opened.handle, offset: UInt64(bytes.count), size: 128 * K)
            if piece.isEmpty { break }
            bytes += piece
        }
        #expect(bytes == fixture.fake.contents(of: "/integrity/good.bin"))
        let verification = fixture.fs.reader.state.withLock { s in
            s.contents.values.first { $0.label.hasPrefix("/integrity/good.bin") }?.check.verification
        }
        #expect(verification == .verified)
    }

    @Test func theCheckCompletesWhenBuffersAreEvictedBeforeBeingHashed() async throws {
        // A 1 MiB cap with 1 MiB parts: buffers are dropped as soon as the next part is needed.
        let options = ReaderOptions(maxWindow: 2 * UInt64(M), partSize: 1 * UInt64(M), memoryLimit: 1 * UInt64(M))
        let fixture = ReaderFixture(options: options, latency: .milliseconds(2))
        fixture.fake.addFile("/integrity/tight.bin", size: UInt64(12 * M), seed: 4)
        let bytes = try await fixture.readAll("/integrity/tight.bin", chunk: 128 * K)
        #expect(bytes == fixture.fake.contents(of: "/integrity/tight.bin"))
    }

    /// A read completing a pass whose bytes were evicted before being hashed: the check fetches
    /// them again one part at a time, so it exceeds the buffer cap by one part at most, not by
    /// (almost) the whole file fetched at once as demand.
    @Test func theCheckDoesNotFetchTheWholeFileBeyondTheCap() async throws {
        let limit = UInt64(M)
        let options = ReaderOptions(initialWindow: UInt64(M), maxWindow: UInt64(M), partSize: UInt64(M), memoryLimit: limit)
        let fixture = ReaderFixture(options: options, latency: .milliseconds(20))
        let size = 12 * M
        fixture.fake.addFile("/backwards.bin", size: UInt64(size), seed: 71)
        let source = try #require(fixture.fake.contents(of: "/backwards.bin"))
        let opened = try await fixture.open("/backwards.bin")
        // Every unit but the first, last one first (a reader going backwards): none can be hashed yet.
        for unit in stride(from: size / (256 * K) - 1, through: 1, by: -1) {
            _ = try await fixture.fs.read(handle: opened.handle, offset: UInt64(unit * 256 * K), size: 4 * K)
        }
        _ = try await fixture.fs.read(handle: opened.handle, offset: 0, size: 4 * K)
        let before = fixture.recorder.ranges.count
        let tail = try await fixture.fs.read(handle: opened.handle, offset: UInt64(size - 4 * K), size: 4 * K)
        #expect(tail == Array(source[(size - 4 * K)...]))
        let after = Array(fixture.recorder.ranges[before...])
        #expect(fixture.recorder.maxInFlight <= 2, "\(fixture.recorder.maxInFlight) downloads in flight at once: \(after.map { ($0.offset, $0.length) })")
        fixture.fs.releaseFile(handle: opened.handle)
    }

    /// Bytes the reader accounts for, and bytes its segments actually hold or fetch.
    static func memory(_ fs: Filesystem) -> (used: UInt64, held: UInt64) {
        fs.reader.state.withLock { s in
            let held = s.contents.values.reduce(UInt64(0)) { sum, content in
                sum + content.buffers.segments.values.reduce(UInt64(0)) { $0 + ($1.range.upperBound - $1.range.lowerBound) }
            }
            return (s.memoryUsed, held)
        }
    }

    /// The inode of `path` in `fs` (for a filesystem built without ReaderFixture).
    static func inode(_ fs: Filesystem, _ path: String) async throws -> UInt64 {
        var inode = Filesystem.rootInode
        for component in path.split(separator: "/") {
            inode = try await fs.lookup(parent: inode, name: String(component)).inode
        }
        return inode
    }

    /// A mismatch found while another read's download is in flight: starting over gives back the
    /// memory reserved for that download too (memoryUsed would otherwise drift up for good), and
    /// the read waiting for it, whose bytes arrive intact, fetches them again instead of failing.
    @Test func startOverKeepsTheAccountOfDownloadsInFlight() async throws {
        let fake = InMemoryDropbox()
        let faults = FaultInjectingClient(fake)
        let recorder = RecordingClient(faults, corruptAt: 100, corruptions: 1)
        let held = HeldRangeClient(recorder)
        let options = ReaderOptions(
            initialWindow: 1 * UInt64(M), maxWindow: 2 * UInt64(M), partSize: 1 * UInt64(M), memoryLimit: 3 * UInt64(M))
        let fs = Filesystem(client: held, options: FilesystemOptions(reader: options))
        let size = 12 * M
        fake.addFile("/restart.bin", size: UInt64(size), seed: 77)
        let source = try #require(fake.contents(of: "/restart.bin"))
        let inode = try await Self.inode(fs, "/restart.bin")
        let a = try await fs.openFile(inode)
        let b = try await fs.openFile(inode)
        // A reads the first half: the first units (damaged, hashed) are evicted meanwhile.
        var offset = 0
        while offset < 6 * M {
            _ = try await fs.read(handle: a.handle, offset: UInt64(offset), size: 128 * K)
            offset += 128 * K
        }
        let unit0Gone = fs.reader.state.withLock { s in s.contents.values.first?.buffers.owners[0] == nil }
        try #require(unit0Gone)
        // B reads the start again: its download of unit 0 is held in flight.
        held.close(at: 0)
        let readB = Task { try await fs.read(handle: b.handle, offset: 0, size: 4 * K) }
        try await CoreTests.waitUntil("B's download to be in flight") { held.heldCount >= 1 }
        // A reads on to the end: the check finds the damage and the file starts over.
        while offset < size {
            do {
                _ = try await fs.read(handle: a.handle, offset: UInt64(offset), size: 128 * K)
            } catch { break }
            offset += 128 * K
        }
        let attempt = fs.reader.state.withLock { s in s.contents.values.first?.check.attempt }
        try #require(attempt == 1)
        held.open()
        let outcome = await readB.result
        let m = Self.memory(fs)
        #expect(m.used == m.held, "memoryUsed \(m.used) but segments hold \(m.held)")
        #expect((try? outcome.get()) == Array(source[0..<4 * K]), "B's read: \(outcome)")
        fs.releaseFile(handle: a.handle)
        fs.releaseFile(handle: b.handle)
    }

    @Test func readsOutsideAWholePassAreServedUnchecked() async throws {
        let fixture = ReaderFixture(corruptAt: UInt64(15 * M))
        fixture.fake.addFile("/integrity/tail.bin", size: UInt64(20 * M), seed: 5)
        let source = try #require(fixture.fake.contents(of: "/integrity/tail.bin"))
        let opened = try await fixture.open("/integrity/tail.bin")
        // A random read of the end cannot be checked (the rest of the file was never read): it is
        // answered, as documented in docs/READS.md.
        let tail = try await fixture.fs.read(handle: opened.handle, offset: UInt64(20 * M - 10), size: 100)
        #expect(tail == Array(source[(20 * M - 10)...]))
    }

    @Test func filesWithoutAHashAreServedWithoutACheck() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/integrity/nohash.bin", size: UInt64(2 * M), seed: 6)
        let inode = try await fixture.inode("/integrity/nohash.bin")
        let rev = try #require(fixture.fs.extendedAttributes(of: inode).first { $0.name == "user.dropbox.rev" }?.value)
        let opened = try await fixture.fs.reader.open(
            PinnedFile(inode: inode, path: "/integrity/nohash.bin", rev: rev, size: UInt64(2 * M), contentHash: nil))
        let bytes = try await fixture.fs.read(handle: opened.handle, offset: 0, size: 2 * M)
        #expect(bytes == fixture.fake.contents(of: "/integrity/nohash.bin"))
    }
}
