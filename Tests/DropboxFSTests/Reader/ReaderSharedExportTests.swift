// Exports shared and bounded (Reader/Exports.swift): one files/export per document and revision,
// whatever the number of opens, at once or one after another; the bytes held in memory count in
// the reader's cap; an export that does not fit goes to an unnamed file in the disk cache folder,
// which lives while a handle is open; closed exports are kept only up to their bound.

import DropboxAPI
import DropboxTestSupport
import Synchronization
import Testing

@testable import DropboxFS

@Suite struct ReaderSharedExportTests {
    @Test func concurrentOpensShareOneExport() async throws {
        let fixture = ReaderFixture(latency: .milliseconds(50))
        fixture.fake.addNonDownloadable("/Docs/Plan.paper", exportAs: "markdown", size: 2000)
        let inode = try await fixture.inode("/Docs/Plan.paper")
        let want = try await fixture.fake.export(path: "/Docs/Plan.paper").data
        let before = fixture.faults.callCount(.export)
        let handles = try await withThrowingTaskGroup(of: UInt64.self) { group in
            for _ in 0..<50 { group.addTask { try await fixture.fs.openExport(inode).handle } }
            var all: [UInt64] = []
            for try await handle in group { all.append(handle) }
            return all
        }
        #expect(Set(handles).count == 50, "each open has its own handle")
        #expect(fixture.faults.callCount(.export) - before == 1, "one export for 50 opens at once")
        for handle in handles {
            #expect(try await ReaderExportTests.readWhole(fixture.fs, handle, chunk: 997) == want)
        }
        #expect(fixture.fs.exports.heldCounts.memory == 1, "one copy of the bytes")
        for handle in handles { fixture.fs.releaseFile(handle: handle) }
        #expect(fixture.fs.exports.openCount == 0)
    }

    @Test func openingAgainAfterCloseExportsNoMore() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addNonDownloadable("/Docs/Plan.paper", exportAs: "markdown", size: 500)
        let inode = try await fixture.inode("/Docs/Plan.paper")
        let before = fixture.faults.callCount(.export)
        for _ in 0..<1000 {
            let opened = try await fixture.fs.openExport(inode)
            #expect(try await fixture.fs.read(handle: opened.handle, offset: 0, size: 2).count == 2)
            fixture.fs.releaseFile(handle: opened.handle)
        }
        #expect(fixture.faults.callCount(.export) - before == 1, "1000 opens, one after another: one export")
        #expect(fixture.fs.exports.startedCount == 1)
    }

    @Test func heldExportsCountInTheReadersCapAndClosedOnesAreBounded() async throws {
        let folder = try TemporaryFolder()
        let reader = FileReader(client: InMemoryDropbox(), options: ReaderOptions(memoryLimit: 10_000))
        let exports = ExportedDocuments(reader: reader, spillDirectory: folder.path, spillSize: 5_000, keepClosed: 3_000)
        let calls = Mutex(0)
        func document(_ byte: UInt8, _ count: Int) -> @Sendable () async throws(FilesystemError) -> [UInt8] {
            { () async throws(FilesystemError) -> [UInt8] in
                calls.withLock { $0 += 1 }
                return [UInt8](repeating: byte, count: count)
            }
        }
        let a = try await exports.open(.init(source: "id:a", rev: "1"), export: document(1, 2_000))
        #expect(reader.memoryUsed == 2_000, "held in memory, counted in the cap")
        let b = try await exports.open(.init(source: "id:b", rev: "1"), export: document(2, 2_000))
        #expect(reader.memoryUsed == 4_000)
        exports.release(a)
        exports.release(b)
        #expect(reader.memoryUsed == 2_000, "closed exports kept only up to 3,000 bytes: the older one went")
        #expect(exports.heldCounts.memory == 1)
        let again = try await exports.open(.init(source: "id:b", rev: "1"), export: document(2, 2_000))
        #expect(calls.withLock { $0 } == 2, "the kept one opens without an export")
        #expect(try exports.read(again, offset: 1_999, size: 10) == [2])
        exports.release(again)
        // A new revision is another export.
        let newer = try await exports.open(.init(source: "id:b", rev: "2"), export: document(3, 100))
        #expect(calls.withLock { $0 } == 3)
        exports.release(newer)
    }

    @Test func anExportThatDoesNotFitIsSpilledAndGoesWithItsLastHandle() async throws {
        let folder = try TemporaryFolder()
        let reader = FileReader(client: InMemoryDropbox(), options: ReaderOptions(memoryLimit: 10_000))
        let exports = ExportedDocuments(reader: reader, spillDirectory: folder.path, spillSize: 5_000, keepClosed: 3_000)
        let big = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let key = ExportedDocuments.Key(source: "id:big", rev: "1")
        let first = try await exports.open(key) { () async throws(FilesystemError) -> [UInt8] in big }
        let second = try await exports.open(key) { () async throws(FilesystemError) -> [UInt8] in
            Issue.record("exported twice")
            return []
        }
        #expect(exports.heldCounts.spilled == 1)
        #expect(reader.memoryUsed == 0, "a spilled export takes nothing from the cap")
        #expect(try folder.items().isEmpty, "the spill file has no name")
        #expect(exports.size(first) == 50_000)
        var read: [UInt8] = []
        while true {
            let piece = try exports.read(first, offset: UInt64(read.count), size: 4_096)
            if piece.isEmpty { break }
            read += piece
        }
        #expect(read == big)
        #expect(try exports.read(second, offset: 49_990, size: 100) == Array(big[49_990...]))
        exports.release(first)
        #expect(exports.heldCounts.spilled == 1, "still open by the second handle")
        exports.release(second)
        #expect(exports.heldCounts.spilled == 0, "gone with its last handle")
        #expect(throws: FilesystemError.badHandle) { try exports.read(second, offset: 0, size: 1) }
    }

    @Test func anExportLargerThanTheCapWithoutADiskCacheIsHeldAndCountedOverIt() async throws {
        let reader = FileReader(client: InMemoryDropbox(), options: ReaderOptions(memoryLimit: 1_000))
        let exports = ExportedDocuments(reader: reader, spillDirectory: nil, keepClosed: 0)
        let handle = try await exports.open(.init(source: "id:x", rev: "1")) { () async throws(FilesystemError) -> [UInt8] in
            [UInt8](repeating: 9, count: 4_000)
        }
        #expect(try exports.read(handle, offset: 3_999, size: 5) == [9])
        #expect(reader.memoryUsed == 4_000)
        exports.release(handle)
        #expect(reader.memoryUsed == 0, "nothing kept closed with keepClosed 0")
    }

    @Test func aFailedExportIsNotKeptAndTheNextOpenTriesAgain() async throws {
        let exports = ExportedDocuments(reader: nil, spillDirectory: nil)
        let key = ExportedDocuments.Key(source: "id:f", rev: "1")
        await #expect(throws: FilesystemError.notFound) {
            try await exports.open(key) { () async throws(FilesystemError) -> [UInt8] in throw .notFound }
        }
        let handle = try await exports.open(key) { () async throws(FilesystemError) -> [UInt8] in [1, 2, 3] }
        #expect(try exports.read(handle, offset: 0, size: 10) == [1, 2, 3])
        #expect(exports.startedCount == 2)
    }

    @Test func anInterruptedOpenLeavesTheExportToTheOthers() async throws {
        let exports = ExportedDocuments(reader: nil, spillDirectory: nil)
        let key = ExportedDocuments.Key(source: "id:slow", rev: "1")
        let gate = CompletionSignal()
        let export: @Sendable () async throws(FilesystemError) -> [UInt8] = { () async throws(FilesystemError) -> [UInt8] in
            _ = await gate.wait(seconds: 30)
            return [7, 7]
        }
        let interrupted = Task { try await exports.open(key, export: export) }
        let patient = Task { try await exports.open(key, export: export) }
        try await CoreTests.waitUntil("both opens wait for one export") { exports.claimCount(key) == 2 }
        #expect(exports.startedCount == 1)
        interrupted.cancel()
        await #expect(throws: FilesystemError.interrupted) { try await interrupted.value }
        gate.fire()
        let handle = try await patient.value
        #expect(try exports.read(handle, offset: 0, size: 5) == [7, 7])
        #expect(exports.startedCount == 1)
    }
}
