// Tests of open, read and release against the in-memory Dropbox: exact bytes for every size and
// access pattern, pinning to the revision seen at open, parallel ranged prefetch, the memory cap,
// short and failed downloads, concurrent readers, export-only documents and the page-cache policy.
// The fixture and the test clients at the end are shared by the other Reader*Tests files.

import DropboxAPI
@testable import DropboxFS
import DropboxTestSupport
import Log
import Synchronization
import Testing

private let K = 1 << 10
private let M = 1 << 20

@Suite struct ReaderTests {
    @Test(arguments: [0, 1, 4 * M - 1, 4 * M, 4 * M + 1, 9 * M + 7, 21 * M])
    func sequentialReadsReturnTheExactBytes(size: Int) async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/f.bin", size: UInt64(size), seed: 7)
        let bytes = try await fixture.readAll("/f.bin")
        #expect(bytes == fixture.fake.contents(of: "/f.bin"))
    }

    @Test func randomReadsReturnTheExactBytes() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/r.bin", size: UInt64(30 * M + 123), seed: 3)
        let source = try #require(fixture.fake.contents(of: "/r.bin"))
        let opened = try await fixture.open("/r.bin")
        var generator = SplitMix(seed: 42)
        for _ in 0..<200 {
            let offset = Int(generator.next() % UInt64(source.count + 100))
            let length = Int(generator.next() % UInt64(300 * K)) + 1
            let bytes = try await fixture.fs.read(handle: opened.handle, offset: UInt64(offset), size: length)
            let end = min(source.count, offset + length)
            #expect(bytes == (offset < source.count ? Array(source[offset..<end]) : []), "read \(offset)+\(length)")
        }
        fixture.fs.releaseFile(handle: opened.handle)
    }

    @Test func anOpenFileKeepsItsRevisionWhenDropboxChanges() async throws {
        let fixture = ReaderFixture()
        let original = fixture.fake.addFile("/p.bin", size: UInt64(12 * M), seed: 1)
        let old = try #require(fixture.fake.contents(of: "/p.bin"))
        let opened = try await fixture.open("/p.bin")
        let head = try await fixture.fs.read(handle: opened.handle, offset: 0, size: 6 * M)
        fixture.fake.modifyFile("/p.bin", contents: Array(repeating: 0xAB, count: 12 * M))
        let tail = try await fixture.fs.read(handle: opened.handle, offset: UInt64(6 * M), size: 6 * M)
        #expect(head + tail == old)
        let attributes = try fixture.fs.extendedAttributes(of: try await fixture.inode("/p.bin"))
        #expect(attributes.contains { $0.name == "user.dropbox.rev" && $0.value == original.rev })
    }

    @Test func aRevisionDropboxNoLongerHasMakesTheHandleStale() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/s.bin", size: UInt64(20 * M), seed: 2)
        let opened = try await fixture.open("/s.bin")
        fixture.faults.failNext(.download, with: .lookup(.notFound), count: 100)
        await #expect(throws: FilesystemError.stale) {
            try await fixture.fs.read(handle: opened.handle, offset: 0, size: 128 * K)
        }
    }

    /// Two files with the same content share downloads, and a download names the revision of the
    /// handle that started it: when that revision is gone, a read of the other file, whose revision
    /// Dropbox still has, fetches its bytes again under its own revision instead of failing too.
    @Test func aCopyIsNotStaleBecauseAnotherFileWithItsContentIs() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/p.bin", size: UInt64(20 * M), seed: 61)
        fixture.fake.addFile("/q.bin", size: UInt64(20 * M), seed: 61)
        let source = try #require(fixture.fake.contents(of: "/q.bin"))
        let p = try await fixture.open("/p.bin")
        let q = try await fixture.open("/q.bin")
        fixture.faults.hold(.download)
        fixture.faults.failNext(.download, with: .lookup(.notFound), count: 100)  // rev:P is gone
        let readP = Task { try await fixture.fs.read(handle: p.handle, offset: 0, size: 128 * K) }
        try await CoreTests.waitUntil("P's downloads to reach the server") { fixture.faults.heldCalls(.download) >= 1 }
        let readQ = Task { try await fixture.fs.read(handle: q.handle, offset: 0, size: 128 * K) }
        try await CoreTests.waitUntil("both reads to wait") { ReaderInterruptTests.waitingReads(fixture) >= 2 }
        fixture.faults.clearFaults()
        fixture.faults.release(.download)
        await #expect(throws: FilesystemError.stale) { try await readP.value }
        let bytesQ = await readQ.result
        #expect((try? bytesQ.get()) == Array(source[0..<128 * K]), "Q's read: \(bytesQ)")
        fixture.fs.releaseFile(handle: p.handle)
        fixture.fs.releaseFile(handle: q.handle)
    }

    @Test func sequentialReadsPrefetchGrowingWindowsInParallelParts() async throws {
        let options = ReaderOptions(initialWindow: 1 * UInt64(M), maxWindow: 16 * UInt64(M), partSize: 4 * UInt64(M))
        let fixture = ReaderFixture(options: options, latency: .milliseconds(20))
        fixture.fake.addFile("/big.bin", size: UInt64(64 * M), seed: 9)
        let bytes = try await fixture.readAll("/big.bin", chunk: 128 * K)
        #expect(bytes == fixture.fake.contents(of: "/big.bin"))
        let ranges = fixture.recorder.ranges
        #expect(ranges.allSatisfy { $0.length <= options.partSize })
        #expect(ranges.allSatisfy { $0.offset % options.unitSize == 0 })
        // 64 MiB in 4 MiB parts, plus the small first requests of the growing window.
        #expect(ranges.count < 30, "\(ranges.count) requests")
        #expect(fixture.recorder.maxInFlight >= 3, "parts should be fetched in parallel")
        // Nothing is downloaded twice.
        let total = ranges.reduce(0) { $0 + $1.length }
        #expect(total == 64 * UInt64(M))
    }

    @Test func randomReadsFetchSmallAlignedRanges() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/rand.bin", size: UInt64(100 * M), seed: 4)
        let opened = try await fixture.open("/rand.bin")
        for offset in [UInt64(70 * M + 5), UInt64(3 * M + 100), UInt64(90 * M)] {
            _ = try await fixture.fs.read(handle: opened.handle, offset: offset, size: 4 * K)
        }
        let ranges = fixture.recorder.ranges
        #expect(ranges.count == 3)
        #expect(ranges.allSatisfy { $0.length == 256 * UInt64(K) && $0.offset % (256 * UInt64(K)) == 0 })
    }

    @Test func bufferMemoryStaysUnderTheCap() async throws {
        let limit = UInt64(6 * M)
        let options = ReaderOptions(maxWindow: 4 * UInt64(M), partSize: 1 * UInt64(M), memoryLimit: limit)
        let fixture = ReaderFixture(options: options)
        for name in ["a", "b", "c"] { fixture.fake.addFile("/\(name).bin", size: UInt64(24 * M), seed: 5) }
        for name in ["a", "b", "c"] {
            let opened = try await fixture.open("/\(name).bin")
            var offset = 0
            var collected: [UInt8] = []
            while offset < 24 * M {
                collected += try await fixture.fs.read(handle: opened.handle, offset: UInt64(offset), size: 128 * K)
                offset += 128 * K
                let used = fixture.fs.reader.state.withLock { $0.memoryUsed }
                // A read may exceed the cap by what it is itself waiting for (one part).
                #expect(used <= limit + options.partSize, "\(used) bytes held")
            }
            #expect(collected == fixture.fake.contents(of: "/\(name).bin"))
            fixture.fs.releaseFile(handle: opened.handle)
        }
    }

    @Test func aShortDownloadIsRetried() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/t.bin", size: UInt64(2 * M), seed: 6)
        fixture.faults.truncateNextDownload(to: 1000)
        fixture.faults.truncateNextDownload(to: 0)
        let bytes = try await fixture.readAll("/t.bin")
        #expect(bytes == fixture.fake.contents(of: "/t.bin"))
    }

    @Test func repeatedShortDownloadsFailWithEIO() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/t.bin", size: UInt64(20 * M), seed: 6)
        let opened = try await fixture.open("/t.bin")
        for _ in 0..<3 { fixture.faults.truncateNextDownload(to: 10) }
        await #expect {
            try await fixture.fs.read(handle: opened.handle, offset: UInt64(10 * M), size: 4 * K)
        } throws: { error in
            (error as? FilesystemError)?.errno == 5
        }
        // Nothing broken was kept: the next read gets the right bytes.
        let bytes = try await fixture.fs.read(handle: opened.handle, offset: UInt64(10 * M), size: 4 * K)
        #expect(bytes == Array(try #require(fixture.fake.contents(of: "/t.bin"))[10 * M..<10 * M + 4 * K]))
    }

    @Test func aFailedDownloadIsAnIOErrorNotWrongBytes() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/e.bin", size: UInt64(1 * M), seed: 8)
        fixture.faults.failNext(.download, with: .serverError(status: 503))
        let opened = try await fixture.open("/e.bin")
        await #expect(throws: FilesystemError.remote(DropboxError.serverError(status: 503))) {
            try await fixture.fs.read(handle: opened.handle, offset: 0, size: 4 * K)
        }
        let bytes = try await fixture.fs.read(handle: opened.handle, offset: 0, size: 4 * K)
        #expect(bytes == Array(try #require(fixture.fake.contents(of: "/e.bin"))[0..<4 * K]))
    }

    @Test func concurrentReadersOfOneAndOfManyFiles() async throws {
        let fixture = ReaderFixture(latency: .milliseconds(5))
        fixture.fake.addFile("/same.bin", size: UInt64(18 * M), seed: 10)
        for i in 0..<4 { fixture.fake.addFile("/other\(i).bin", size: UInt64(6 * M + i), seed: UInt64(20 + i)) }
        let paths = Array(repeating: "/same.bin", count: 4) + (0..<4).map { "/other\($0).bin" }
        let results = try await withThrowingTaskGroup(of: (String, [UInt8]).self) { group in
            for path in paths {
                group.addTask { (path, try await fixture.readAll(path, chunk: 128 * K)) }
            }
            var results: [(String, [UInt8])] = []
            for try await result in group { results.append(result) }
            return results
        }
        #expect(results.count == 8)
        for (path, bytes) in results {
            #expect(bytes == fixture.fake.contents(of: path), "\(path)")
        }
        // Readers of one content share its downloads.
        let same = fixture.recorder.ranges(of: "/same.bin", in: fixture.fake)
        #expect(same.reduce(0) { $0 + $1.length } == 18 * UInt64(M))
    }

    /// `open` answers an export-only document later, with openExport (ReaderExportTests): its
    /// answer now downloads nothing and logs nothing.
    @Test func exportOnlyDocumentsAreNotDownloaded() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addNonDownloadable("/Notes.paper", exportAs: "markdown", size: 10)
        let inode = try await fixture.inode("/Notes.paper")
        LogCapture.start()
        #expect(try fixture.fs.openFileCached(inode) == nil, "answered later, by the export")
        #expect(FilesystemError.notDownloadable.errno == 13)
        #expect(LogCapture.lines(containing: "/Notes.paper").isEmpty)
        #expect(fixture.recorder.ranges.isEmpty)
        #expect(fixture.fake.callCount(.download) == 0)
    }

    @Test func foldersAndSymlinksCannotBeOpenedAsFiles() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFolder("/dir")
        fixture.fake.addSymlink("/link", target: "/dir")
        let folder = try await fixture.inode("/dir")
        #expect(throws: FilesystemError.isADirectory) { try fixture.fs.openFileCached(folder) }
        let link = try await fixture.inode("/link")
        #expect(throws: FilesystemError.notSupported) { try fixture.fs.openFileCached(link) }
        #expect(try fixture.fs.readlink(link) == "/dir")
    }

    @Test func unknownHandlesAreRejected() async throws {
        let fixture = ReaderFixture()
        await #expect(throws: FilesystemError.badHandle) { try await fixture.fs.read(handle: 999, offset: 0, size: 1) }
        fixture.fs.releaseFile(handle: 999)
    }

    @Test func readsPastTheEndAreEmpty() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/ten", contents: Array(0..<10))
        let opened = try await fixture.open("/ten")
        #expect(try await fixture.fs.read(handle: opened.handle, offset: 8, size: 100) == [8, 9])
        #expect(try await fixture.fs.read(handle: opened.handle, offset: 10, size: 100) == [])
        #expect(try await fixture.fs.read(handle: opened.handle, offset: 1000, size: 100) == [])
    }

    @Test func thePageCacheIsKeptOnlyForTheRevisionItHolds() async throws {
        let fixture = ReaderFixture()
        let first = fixture.fake.addFile("/pc.bin", contents: [1, 2, 3])
        let inode = try await fixture.inode("/pc.bin")
        let a = try await fixture.fs.openFile(inode)
        let b = try await fixture.fs.openFile(inode)
        #expect(a.pageCache == .drop)
        #expect(b.pageCache == .keep)
        // Another revision opened while the first is open must not share the page cache.
        let reader = fixture.fs.reader
        let other = PinnedFile(inode: inode, path: "/pc.bin", rev: first.rev + "0", size: 3, contentHash: nil)
        let c = try await reader.open(other)
        #expect(c.pageCache == .bypass)
        for handle in [a.handle, b.handle, c.handle] { fixture.fs.releaseFile(handle: handle) }
        // Once only the new revision is open, the kernel's pages of the old one are dropped.
        #expect(try await reader.open(other).pageCache == .drop)
        #expect(try await reader.open(other).pageCache == .keep)
    }

    /// The content_hash check is per content, but the page cache is per inode: pages an inode got
    /// from an unchecked random read (here: damaged bytes) are not kept at its next open because a
    /// copy of the same content under another name (another inode) was verified meanwhile.
    @Test func unverifiedPagesOfOneInodeAreNotKeptWhenACopyWasVerified() async throws {
        let options = ReaderOptions(
            initialWindow: 1 * UInt64(M), maxWindow: 1 * UInt64(M), partSize: 1 * UInt64(M), memoryLimit: 1 * UInt64(M))
        let fixture = ReaderFixture(options: options, corruptAt: UInt64(10 * M + 5), corruptions: 1)
        fixture.fake.addFile("/x.bin", size: UInt64(12 * M), seed: 91)
        fixture.fake.addFile("/y.bin", size: UInt64(12 * M), seed: 91)  // same bytes, same content_hash
        fixture.fake.addFile("/z.bin", size: UInt64(12 * M), seed: 92)
        let source = try #require(fixture.fake.contents(of: "/x.bin"))
        let x = try await fixture.inode("/x.bin")
        let first = try await fixture.fs.openFile(x)
        #expect(first.pageCache == .drop)
        // A random read of X: unchecked, and damaged on the way; the kernel caches this page of X.
        let random = try await fixture.fs.read(handle: first.handle, offset: UInt64(10 * M), size: 4 * K)
        #expect(random != Array(source[10 * M..<10 * M + 4 * K]), "the fault should damage this read")
        fixture.fs.releaseFile(handle: first.handle)
        // Other reads evict X's buffer; then the copy Y is read whole and verified.
        _ = try await fixture.readAll("/z.bin")
        #expect(try await fixture.readAll("/y.bin") == source)
        // X opened again: its page cache still holds the damaged, never-checked page.
        let again = try await fixture.fs.openFile(x)
        #expect(again.pageCache != .keep, "the kernel would serve X's damaged page to the next cat")
        fixture.fs.releaseFile(handle: again.handle)
    }

    @Test func extendedAttributesExposeDropboxFacts() async throws {
        let fixture = ReaderFixture()
        let file = fixture.fake.addFile("/x/attrs.txt", contents: Array("hello".utf8))
        let folder = try #require(fixture.fake.entry("/x"))
        let attributes = try fixture.fs.extendedAttributes(of: try await fixture.inode("/x/attrs.txt"))
        #expect(attributes.map(\.name) == ["user.dropbox.id", "user.dropbox.rev", "user.dropbox.content_hash"])
        #expect(attributes.map(\.value) == [file.id, file.rev, try #require(file.contentHash).hex])
        let folderAttributes = try fixture.fs.extendedAttributes(of: try await fixture.inode("/x"))
        if case .folder(let metadata) = folder {
            #expect(folderAttributes.map(\.name) == ["user.dropbox.id"])
            #expect(folderAttributes.map(\.value) == [metadata.id])
        }
    }

    @Test func releasedContentIsReusedWhileBuffered() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/photo.jpg", size: UInt64(3 * M), seed: 11)
        _ = try await fixture.readAll("/photo.jpg")
        _ = try await fixture.readAll("/photo.jpg")
        _ = try await fixture.readAll("/photo.jpg")
        #expect(fixture.recorder.ranges.reduce(0) { $0 + $1.length } == 3 * UInt64(M))
    }
}

// MARK: - Fixture

/// A filesystem over an in-memory Dropbox, with a fault seam and a download recorder between them.
struct ReaderFixture: Sendable {
    let fake: InMemoryDropbox
    let faults: FaultInjectingClient<InMemoryDropbox>
    let recorder: RecordingClient
    let fs: Filesystem

    init(
        options: ReaderOptions = ReaderOptions(), latency: Duration = .zero, fake: InMemoryDropbox = InMemoryDropbox(),
        corruptAt: UInt64? = nil, corruptions: Int? = nil
    ) {
        self.fake = fake
        fake.latency = latency
        faults = FaultInjectingClient(fake)
        recorder = RecordingClient(faults, corruptAt: corruptAt, corruptions: corruptions)
        fs = Filesystem(client: recorder, options: FilesystemOptions(reader: options))
    }

    /// The inode of `path`, looked up one component at a time as the kernel does.
    func inode(_ path: String) async throws -> UInt64 {
        var inode = Filesystem.rootInode
        for component in path.split(separator: "/") {
            inode = try await fs.lookup(parent: inode, name: String(component)).inode
        }
        return inode
    }

    func open(_ path: String) async throws -> OpenedFile {
        try await fs.openFile(try await inode(path))
    }

    /// Opens `path`, reads it from start to end in `chunk`-byte reads, and releases it.
    func readAll(_ path: String, chunk: Int = 128 << 10) async throws -> [UInt8] {
        let opened = try await open(path)
        defer { fs.releaseFile(handle: opened.handle) }
        var bytes: [UInt8] = []
        while true {
            let piece = try await fs.read(handle: opened.handle, offset: UInt64(bytes.count), size: chunk)
            if piece.isEmpty { return bytes }
            bytes += piece
        }
    }
}

/// Records every download (path, range) and the most downloads in flight at once; can flip one
/// byte of every download covering `corruptAt`, as a broken network or server would.
final class RecordingClient: ForwardingClient, Sendable {
    struct Download: Sendable {
        var path: String
        var offset: UInt64
        var length: UInt64
    }

    private struct Record {
        var downloads: [Download] = []
        var inFlight = 0
        var maxInFlight = 0
    }

    let base: any DropboxClient
    var forwardee: any DropboxClient { base }
    let corruptAt: UInt64?
    /// How many downloads covering `corruptAt` are damaged (nil: all of them).
    private let corruptionsLeft: Mutex<Int?>
    private let record = Mutex(Record())

    init(_ base: any DropboxClient, corruptAt: UInt64? = nil, corruptions: Int? = nil) {
        self.base = base
        self.corruptAt = corruptAt
        self.corruptionsLeft = Mutex(corruptions)
    }

    var ranges: [Download] { record.withLock { $0.downloads } }
    var maxInFlight: Int { record.withLock { $0.maxInFlight } }

    /// The downloads of the revisions `path` has had.
    func ranges(of path: String, in fake: InMemoryDropbox) -> [Download] {
        guard case .file(let file) = fake.entry(path) else { return [] }
        return ranges.filter { $0.path == "rev:" + file.rev }
    }

    func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult {
        record.withLock { r in
            r.downloads.append(Download(path: path, offset: range?.offset ?? 0, length: range?.length ?? 0))
            r.inFlight += 1
            r.maxInFlight = max(r.maxInFlight, r.inFlight)
        }
        defer { record.withLock { $0.inFlight -= 1 } }
        var result = try await base.download(path: path, range: range)
        let start = range?.offset ?? 0
        if let corruptAt, corruptAt >= start, corruptAt < start + UInt64(result.data.count) {
            let damage = corruptionsLeft.withLock { left -> Bool in
                guard let count = left else { return true }
                left = count - 1
                return count > 0
            }
            if damage { result.data[Int(corruptAt - start)] ^= 0xFF }
        }
        return result
    }

}

/// Holds the downloads whose range starts at the offset given to `close(at:)` until `open()`: a
/// download kept in flight while a test does something else.
final class HeldRangeClient: ForwardingClient, Sendable {
    private struct Gate {
        var offset: UInt64?
        var held: [CheckedContinuation<Void, Never>] = []
    }

    let base: any DropboxClient
    var forwardee: any DropboxClient { base }
    private let gate = Mutex(Gate())

    init(_ base: any DropboxClient) { self.base = base }

    func close(at offset: UInt64) { gate.withLock { $0.offset = offset } }
    func open() {
        let held = gate.withLock { g -> [CheckedContinuation<Void, Never>] in
            g.offset = nil
            defer { g.held = [] }
            return g.held
        }
        for c in held { c.resume() }
    }
    var heldCount: Int { gate.withLock { $0.held.count } }

    func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let hold = gate.withLock { g -> Bool in
                guard let offset = g.offset, range?.offset == offset else { return false }
                g.held.append(c)
                return true
            }
            if !hold { c.resume() }
        }
        return try await base.download(path: path, range: range)
    }

}

/// Every log line of the test process from `start()` on (tests run in parallel, so each looks for
/// lines naming its own paths). The tap is installed once and stays, beside other captures.
enum LogCapture {
    private static let lines = Mutex<[String]>([])
    private static let tap: @Sendable (LogLevel, String) -> Void = { _, line in lines.withLock { $0.append(line) } }

    static func start() { _ = installed }

    /// The tap, installed once for the whole test process.
    private static let installed = Log.addSink(tap)

    static func lines(containing text: String) -> [String] {
        lines.withLock { $0.filter { $0.contains(text) } }
    }
}
