// Tests of the content_hash check: a file whose downloaded bytes do not match answers EIO (and
// logs one error) instead of wrong bytes; small files are checked before any byte is served; a
// whole sequential pass over a large file fails at its last read; the check survives buffers being
// evicted under a tight memory cap.

import DropboxAPI
@testable import DropboxFS
import DropboxTestSupport
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
        #expect(lines.count == 1)
        #expect(lines.first?.contains("content_hash") == true)
    }

    @Test func aWholePassOverALargeFileFailsAtItsLastRead() async throws {
        LogCapture.start()
        let fixture = ReaderFixture(corruptAt: UInt64(10 * M + 5))
        fixture.fake.addFile("/integrity/large.bin", size: UInt64(20 * M + 3), seed: 2)
        let opened = try await fixture.open("/integrity/large.bin")
        var offset = 0
        var failedAt: Int?
        while offset < 20 * M + 3 {
            do {
                let bytes = try await fixture.fs.read(handle: opened.handle, offset: UInt64(offset), size: 128 * K)
                offset += bytes.count
            } catch {
                #expect(error.errno == 5)
                failedAt = offset
                break
            }
        }
        // Reads fail from the moment the mismatch is known, at the latest at the read reaching the
        // end, which waits for the check.
        let failure = try #require(failedAt)
        #expect(failure > 10 * M && failure <= 20 * M + 3 - (20 * M + 3) % (128 * K))
        #expect(LogCapture.lines(containing: "/integrity/large.bin").count == 1)
        // Every later read of that content fails too.
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
            s.contents.values.first { $0.label.hasPrefix("/integrity/good.bin") }?.verification
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
        let opened = fixture.fs.reader.open(
            PinnedFile(inode: inode, path: "/integrity/nohash.bin", rev: rev, size: UInt64(2 * M), contentHash: nil))
        let bytes = try await fixture.fs.read(handle: opened.handle, offset: 0, size: 2 * M)
        #expect(bytes == fixture.fake.contents(of: "/integrity/nohash.bin"))
    }
}
