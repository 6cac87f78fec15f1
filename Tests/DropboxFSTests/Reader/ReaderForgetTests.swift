// What the reader keeps per inode (the revision the kernel's page cache may hold, the one warning
// about an export-only document) lasts only while the kernel holds the inode: once it forgot every
// reference it has evicted the inode and its pages. Every revision of a file is a new inode, so
// without this the maps would grow with every revision ever opened during a mount that runs for weeks.

import DropboxAPI
import DropboxTestSupport
import Testing

@testable import DropboxFS

@Suite struct ReaderForgetTests {
    static func keptInodes(_ fixture: ReaderFixture) -> (pageCache: Int, warned: Int) {
        fixture.fs.reader.state.withLock { ($0.pageCacheNotes.count, $0.warnedNotDownloadable.count) }
    }

    @Test func whatIsKeptPerInodeGoesWhenTheKernelForgetsIt() async throws {
        let fixture = ReaderFixture()
        for i in 0..<50 { fixture.fake.addFile("/many/f\(i).bin", size: 100, seed: UInt64(i)) }
        var inodes: [UInt64] = []
        for i in 0..<50 {
            let inode = try await fixture.inode("/many/f\(i).bin")  // one kernel reference each
            let opened = try await fixture.fs.openFile(inode)
            _ = try await fixture.fs.read(handle: opened.handle, offset: 0, size: 100)
            fixture.fs.releaseFile(handle: opened.handle)
            inodes.append(inode)
        }
        #expect(Self.keptInodes(fixture).pageCache == 50)
        // A second reference keeps the first file's record through one forget.
        _ = try await fixture.inode("/many/f0.bin")
        for inode in inodes { fixture.fs.forget(inode, count: 1) }
        #expect(Self.keptInodes(fixture).pageCache == 1)
        fixture.fs.forget(inodes[0], count: 1)
        #expect(Self.keptInodes(fixture).pageCache == 0)
    }

    @Test func theExportFailureWarningIsKeptWhileTheKernelHoldsTheInode() async throws {
        LogCapture.start()
        let fixture = ReaderFixture()
        fixture.fake.addNonDownloadable("/forget-warning/Plan.paper", exportAs: "markdown", size: 10)
        fixture.faults.failNext(.export, with: .routeError(summary: "non_exportable/"), count: 2)
        let inode = try await fixture.inode("/forget-warning/Plan.paper")
        for _ in 0..<2 {
            await #expect(throws: FilesystemError.notDownloadable) { try await fixture.fs.openExport(inode) }
        }
        #expect(Self.keptInodes(fixture).warned == 1)
        #expect(LogCapture.lines(containing: "/forget-warning/Plan.paper").count == 1)
        fixture.fs.forget(inode, count: 1)
        #expect(Self.keptInodes(fixture).warned == 0)
    }
}
