// A stored tree on a disk that refuses writes (full, over quota, read-only) is still served: the
// store falls back to reading the file as it is and writes nothing; and an open of an unchanged
// store writes nothing, so a full disk does not refuse it.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

@testable import DropboxFS

extension CoreTests.TreeStoreTests {
    /// The database file's modification time, in nanoseconds.
    static func modified(_ path: String) throws -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else { throw CocoaError(.fileNoSuchFile) }
        return Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }

    @Test func anUnchangedStoreOpensWithoutWriting() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (_, first, _) = try await Self.storedAccount(folder)
        first.close()
        let before = try Self.modified(first.path)
        let again = try Self.open(folder)
        #expect(!again.readOnly)
        #expect(again.loadTree(folderTime: CoreTests.folderTime, now: 0) != nil)
        again.close()
        #expect(try Self.modified(first.path) == before, "the open wrote to the store")
    }

    /// The lock file cannot be opened for writing (here a folder in its place, as root can write
    /// anywhere else): the store is opened read-only, its tree served, and writing is off.
    @Test func aStoreThatCannotBeWrittenIsServedReadOnly() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (_, first, stored) = try await Self.storedAccount(folder)
        first.close()
        #expect(unlink(first.path + ".lock") == 0)
        #expect(mkdir(first.path + ".lock", 0o700) == 0)
        let before = try Self.modified(first.path)
        LogCapture.start()
        let store = try Self.open(folder)
        #expect(store.readOnly)
        let warnings = LogCapture.lines(containing: first.path + ".lock")
        #expect(warnings.count == 1 && warnings[0].contains("read-only"), "\(warnings)")
        let served = try #require(store.loadTree(folderTime: CoreTests.folderTime, now: 0))
        #expect(served.entryCount == stored.entryCount)
        #expect(served.cursor == stored.cursor)
        // Offline, the store is found by reading it as it is too.
        #expect(TreeStore.info(path: first.path)?.complete == true)
        store.close()
        #expect(try Self.modified(first.path) == before, "a read-only store was written")
    }

    @Test func anImmutableOpenEscapesThePath() throws {
        #expect(SQLiteDatabase.immutableURI("/a b/c?d#e%f/é") == "file:/a%20b/c%3Fd%23e%25f/%C3%A9?immutable=1")
        let folder = Self.folder() + "/odd ?#%"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/x.db"
        let writer = try SQLiteDatabase(path: path)
        try writer.execute("CREATE TABLE t(v INTEGER); INSERT INTO t VALUES (7);")
        writer.close()
        let reader = try SQLiteDatabase(path: path, immutable: true)
        let statement = try reader.prepare("SELECT v FROM t")
        #expect(try statement.step())
        #expect(statement.int64(0) == 7)
    }
}
