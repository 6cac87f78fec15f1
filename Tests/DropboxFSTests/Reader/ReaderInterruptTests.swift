// Interrupted reads (docs/SEMANTICS.md "Interrupted requests"): a read whose task is cancelled stops
// waiting at once with `.interrupted`; the download it waited for is cancelled when no other read
// waits for it, and goes on when one does; downloads still running when the last handle on their
// file is closed are cancelled; the same read afterwards returns the exact bytes. A stalled server
// is a FaultInjectingClient hold, which never ends by itself (CoreTests.InterruptTests).

import DropboxAPI
import DropboxTestSupport
import Testing

@testable import DropboxFS

private let M = 1 << 20

@Suite struct ReaderInterruptTests {
    /// Reads waiting for downloads in flight now (reads the reader's state).
    static func waitingReads(_ fixture: ReaderFixture) -> Int {
        fixture.fs.reader.state.withLock { s in
            s.contents.values.reduce(0) { sum, content in
                sum + content.buffers.segments.values.reduce(0) { $0 + ($1.fetch?.waiterCount ?? 0) }
            }
        }
    }

    @Test func anInterruptedReadStopsAtOnceAndItsDownloadIsCancelled() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/interrupted.bin", size: UInt64(20 * M), seed: 5)
        let opened = try await fixture.open("/interrupted.bin")
        fixture.faults.hold(.download)
        let read = Task { try await fixture.fs.read(handle: opened.handle, offset: 0, size: 128 << 10) }
        try await CoreTests.waitUntil("a download to reach the server") { fixture.faults.heldCalls(.download) >= 1 }
        read.cancel()
        let outcome = try await CoreTests.InterruptTests.outcome(of: read)
        #expect(throws: FilesystemError.interrupted) { try outcome.get() }
        try await CoreTests.waitUntil("the download nobody waits for to be cancelled") {
            fixture.faults.cancelledCalls(.download) >= 1
        }
        fixture.faults.release(.download)
        let bytes = try await fixture.fs.read(handle: opened.handle, offset: 0, size: 128 << 10)
        #expect(bytes == Array(try #require(fixture.fake.contents(of: "/interrupted.bin"))[0..<(128 << 10)]))
        fixture.fs.releaseFile(handle: opened.handle)
    }

    @Test func aDownloadAnotherReadWaitsForGoesOn() async throws {
        // A 6 MiB file is fetched whole at its first read: a read at its start and one 4 MiB in
        // wait for the same downloads.
        let fixture = ReaderFixture()
        fixture.fake.addFile("/shared.bin", size: UInt64(6 * M), seed: 6)
        let source = try #require(fixture.fake.contents(of: "/shared.bin"))
        let first = try await fixture.open("/shared.bin")
        let second = try await fixture.open("/shared.bin")
        fixture.faults.hold(.download)
        let interrupted = Task { try await fixture.fs.read(handle: first.handle, offset: 0, size: 128 << 10) }
        try await CoreTests.waitUntil("the downloads to reach the server") { fixture.faults.heldCalls(.download) >= 1 }
        let patient = Task { try await fixture.fs.read(handle: second.handle, offset: UInt64(4 * M), size: 128 << 10) }
        try await CoreTests.waitUntil("both reads to wait") { Self.waitingReads(fixture) >= 2 }
        let downloads = fixture.faults.callCount(.download)
        interrupted.cancel()
        let outcome = try await CoreTests.InterruptTests.outcome(of: interrupted)
        #expect(throws: FilesystemError.interrupted) { try outcome.get() }
        #expect(fixture.faults.cancelledCalls(.download) == 0, "the other read still needs them")
        fixture.faults.release(.download)
        #expect(try await patient.value == Array(source[(4 * M)..<(4 * M + (128 << 10))]))
        #expect(fixture.faults.callCount(.download) == downloads, "nothing downloaded again")
        fixture.fs.releaseFile(handle: first.handle)
        fixture.fs.releaseFile(handle: second.handle)
    }

    @Test func closingTheLastHandleCancelsTheDownloadsInFlight() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addFile("/closed.bin", size: UInt64(40 * M), seed: 7)
        let opened = try await fixture.open("/closed.bin")
        let other = try await fixture.open("/closed.bin")
        fixture.faults.hold(.download)
        let read = Task { try await fixture.fs.read(handle: opened.handle, offset: 0, size: 128 << 10) }
        try await CoreTests.waitUntil("downloads to reach the server") { fixture.faults.heldCalls(.download) >= 2 }
        read.cancel()
        _ = await read.result
        // The read-ahead beyond the interrupted read still runs while a handle is open...
        fixture.fs.releaseFile(handle: opened.handle)
        #expect(fixture.faults.heldCalls(.download) >= 1)
        // ... and nobody waits for it once the last one is closed.
        fixture.fs.releaseFile(handle: other.handle)
        try await CoreTests.waitUntil("every download to be cancelled") { fixture.faults.heldCalls(.download) == 0 }
        #expect(fixture.fs.reader.state.withLock { $0.memoryUsed } == 0)
        fixture.faults.release(.download)
        #expect(try await fixture.readAll("/closed.bin") == fixture.fake.contents(of: "/closed.bin"))
    }

    @Test func aCancelledDownloadIsNotWarnedAbout() async throws {
        LogCapture.start()
        let fixture = ReaderFixture()
        fixture.fake.addFile("/quiet-cancelled-download.bin", size: UInt64(2 * M), seed: 8)
        let opened = try await fixture.open("/quiet-cancelled-download.bin")
        fixture.faults.hold(.download)
        let read = Task { try await fixture.fs.read(handle: opened.handle, offset: 0, size: 4096) }
        try await CoreTests.waitUntil("a download to reach the server") { fixture.faults.heldCalls(.download) >= 1 }
        read.cancel()
        _ = await read.result
        fixture.fs.releaseFile(handle: opened.handle)
        try await CoreTests.waitUntil("the downloads to end") { fixture.faults.heldCalls(.download) == 0 }
        #expect(LogCapture.lines(containing: "quiet-cancelled-download").isEmpty)
        fixture.faults.release(.download)
    }

    /// The check of a disk cache entry written by an earlier mount reads the whole entry; a read
    /// waiting for it stops at once when interrupted, the check stops at its next piece since
    /// nobody waits for it, and the entry is neither discarded nor taken as checked: the next read
    /// checks it again and serves it with no download.
    @Test func anInterruptedReadStopsWaitingForTheCheckOfADiskEntry() async throws {
        let folder = try TemporaryFolder()
        let fake = InMemoryDropbox()
        fake.addFile("/checked.bin", size: UInt64(20 * M), seed: 12)
        let source = try #require(fake.contents(of: "/checked.bin"))
        let options = ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path, capacity: UInt64(64 * M)))
        let earlier = ReaderFixture(options: options, fake: fake)
        #expect(try await earlier.readAll("/checked.bin") == source)
        earlier.fs.finishDiskCacheWrites()

        let fixture = ReaderFixture(options: options, fake: fake)
        // The check stops between its pieces (of `partSize`, 8 MiB: three here) while `hold` is
        // set, whether or not it was cancelled meanwhile.
        let hold = CoreTests.Locked(true)
        let pauses = CoreTests.Locked(0)
        fixture.fs.reader.diskCheckPause.withLock {
            $0.call = {
                pauses.value += 1
                while hold.value { try? await Task.sleep(for: .milliseconds(5)) }
            }
        }
        let opened = try await fixture.open("/checked.bin")
        let read = Task { try await fixture.fs.read(handle: opened.handle, offset: 0, size: 128 << 10) }
        try await CoreTests.waitUntil("the check to reach its first pause") { pauses.value == 1 }
        read.cancel()
        let outcome = try await CoreTests.InterruptTests.outcome(of: read)
        #expect(throws: FilesystemError.interrupted) { try outcome.get() }
        #expect(pauses.value == 1 && hold.value, "the read returned while the check was still held")

        hold.value = false
        try await CoreTests.waitUntil("the check nobody waits for to stop") {
            fixture.fs.reader.state.withLock { $0.contents.values.allSatisfy { $0.disk.check == nil } }
        }
        #expect(pauses.value == 1, "the cancelled check went on to its next piece")
        let bytes = try await fixture.fs.read(handle: opened.handle, offset: 0, size: 128 << 10)
        #expect(bytes == Array(source[0..<(128 << 10)]))
        #expect(pauses.value == 4, "the next read checked all three pieces again")
        #expect(fixture.recorder.ranges.isEmpty, "the entry was served from the disk, not downloaded")
        fixture.fs.releaseFile(handle: opened.handle)
    }
}
