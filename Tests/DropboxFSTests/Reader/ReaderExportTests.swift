// Export-only documents (Reader/Exports.swift): `open` answers them later, with `openExport`, which
// exports the document whole; the handle reads the export byte-exact (whatever size the listing
// gave), bypasses the page cache, and afterwards the attributes report the export's size (the
// kernel's are invalidated; before the first export they are not cacheable at all). A new revision exports anew; a failed export is an errno, logged once.

import DropboxAPI
import DropboxTestSupport
import Synchronization
import Testing

@testable import DropboxFS

@Suite struct ReaderExportTests {
    static func readWhole(_ fs: Filesystem, _ handle: UInt64, chunk: Int = 7) async throws -> [UInt8] {
        var out: [UInt8] = []
        while true {
            let piece = try await fs.read(handle: handle, offset: UInt64(out.count), size: chunk)
            if piece.isEmpty { return out }
            out += piece
        }
    }

    @Test func anExportOnlyDocumentReadsAsItsExport() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addNonDownloadable("/Docs/Plan.paper", exportAs: "markdown", size: 5)
        let published = Mutex<[Invalidation]>([])
        fixture.fs.setInvalidationHandler { batch in published.withLock { $0 += batch } }
        let inode = try await fixture.inode("/Docs/Plan.paper")
        #expect(try fixture.fs.attributes(of: inode).size == 5, "the listed size, before any export")
        // The kernel must not keep the listed size: a stat right after the first read must not
        // wait for the invalidation, which is delivered apart (CI saw `stat` report 0 after `cat`).
        #expect(try fixture.fs.attributes(of: inode).cacheable == false)
        #expect(try fixture.fs.openFileCached(inode) == nil, "answered later, by the export")

        let opened = try await fixture.fs.openExport(inode)
        #expect(opened.pageCache == .bypass)
        let want = try await fixture.fake.export(path: "/Docs/Plan.paper").data
        #expect(want.count > 5)
        #expect(try await Self.readWhole(fixture.fs, opened.handle) == want)
        #expect(try await fixture.fs.read(handle: opened.handle, offset: UInt64(want.count) + 10, size: 4) == [])
        #expect(try fixture.fs.attributes(of: inode).size == UInt64(want.count), "the export's size once known")
        #expect(try fixture.fs.attributes(of: inode).cacheable, "the export's size is kept for the revision")
        try await CoreTests.waitUntil("the kernel's attributes of the document invalidated") {
            published.withLock { $0 }.contains(.inode(inode))
        }
        #expect(fixture.fake.callCount(.download) == 0)
        fixture.fs.releaseFile(handle: opened.handle)
        await #expect(throws: FilesystemError.badHandle) {
            try await fixture.fs.read(handle: opened.handle, offset: 0, size: 1)
        }
        #expect(fixture.fs.exports.openCount == 0)
    }

    @Test func aNewRevisionExportsAnew() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addNonDownloadable("/Docs/Sheet.gsheet", exportAs: "xlsx", size: 100)
        let first = try await fixture.inode("/Docs/Sheet.gsheet")
        let a = try await fixture.fs.openExport(first)
        let before = try await Self.readWhole(fixture.fs, a.handle, chunk: 1000)

        fixture.fake.addNonDownloadable("/Docs/Sheet.gsheet", exportAs: "xlsx", size: 2000)
        let refreshed = Filesystem(client: fixture.recorder)  // a fresh listing sees the new revision
        var inode = Filesystem.rootInode
        for name in ["Docs", "Sheet.gsheet"] { inode = try await refreshed.lookup(parent: inode, name: name).inode }
        let b = try await refreshed.openExport(inode)
        let after = try await Self.readWhole(refreshed, b.handle, chunk: 1000)
        #expect(after == (try await fixture.fake.export(path: "/Docs/Sheet.gsheet").data))
        #expect(after != before)
        // The first handle still reads the export it was opened with.
        #expect(try await Self.readWhole(fixture.fs, a.handle, chunk: 1000) == before)
    }

    @Test func aFailedExportIsAnErrno() async throws {
        let fixture = ReaderFixture()
        fixture.fake.addNonDownloadable("/Docs/Plan.paper", exportAs: "markdown", size: 5)
        fixture.fake.addFile("/Docs/plain.txt", size: 3)
        let inode = try await fixture.inode("/Docs/Plan.paper")
        fixture.faults.failNext(.export, with: .lookup(.notFound))
        await #expect(throws: FilesystemError.notFound) { try await fixture.fs.openExport(inode) }
        fixture.faults.failNext(.export, with: .serverError(status: 500))
        await #expect(throws: FilesystemError.self) { try await fixture.fs.openExport(inode) }
        // A file Dropbox can download is opened with openFile, never exported.
        let plain = try await fixture.inode("/Docs/plain.txt")
        await #expect(throws: FilesystemError.stale) { try await fixture.fs.openExport(plain) }
        #expect(try await Self.readWhole(fixture.fs, try await fixture.fs.openExport(inode).handle).count > 0)
    }
}
