// The pins of "available offline" in the tree store: kept across a close and reopen with the ids of
// their entries, a store of schema version 2 (before pins) is upgraded in place, its rows kept, not
// set aside, and a pins table of before the ids gets the column.

import DropboxAPI
import Foundation
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct TreeStorePinsTests {
        @Test func pinsSurviveAReopen() throws {
            let folder = TreeStoreTests.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let store = try TreeStoreTests.open(folder)
            #expect(store.pins() == [])
            store.storePins(["/b", "/a b/c"])
            store.close()
            let again = try TreeStoreTests.open(folder)
            #expect(again.pins() == ["/a b/c", "/b"])
            again.storePins(["/b"])
            again.close()
            let third = try TreeStoreTests.open(folder)
            #expect(third.pins() == ["/b"])
            third.close()
        }

        @Test func pinsKeepTheIDsOfTheirEntries() throws {
            let folder = TreeStoreTests.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let store = try TreeStoreTests.open(folder)
            store.storePins(["/a", "/b"], ids: ["/a": "id:AAAAAAAAAAAAAAAAAAAAAA"])
            store.close()
            let again = try TreeStoreTests.open(folder)
            #expect(again.storedPins().map(\.path) == ["/a", "/b"])
            #expect(again.storedPins().map(\.id) == ["id:AAAAAAAAAAAAAAAAAAAAAA", ""])
            again.close()
        }

        /// A new store in `folder`, changed by `sql` as an older dropboxfs would have left it; its path.
        static func olderStore(in folder: String, _ sql: String) throws -> String {
            let store = try TreeStoreTests.open(folder)
            let path = store.path
            store.close()
            let old = try SQLiteDatabase(path: path)
            try old.execute(sql)
            old.close()
            return path
        }

        @Test func aPinsTableWithoutIDsGetsTheColumnAndKeepsItsPaths() throws {
            let folder = TreeStoreTests.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            // Made as the first stores of version 3 had it: the pins table without the id column.
            _ = try Self.olderStore(
                in: folder,
                "DROP TABLE pins; CREATE TABLE pins(path TEXT PRIMARY KEY) WITHOUT ROWID; "
                    + "INSERT INTO pins(path) VALUES ('/kept')")
            let upgraded = try TreeStoreTests.open(folder)
            #expect(upgraded.storedPins().map(\.path) == ["/kept"])
            #expect(upgraded.storedPins().map(\.id) == [""])
            upgraded.storePins(["/kept"], ids: ["/kept": "id:BBBBBBBBBBBBBBBBBBBBBB"])
            upgraded.close()
            let reopened = try TreeStoreTests.open(folder)
            #expect(reopened.storedPins().map(\.id) == ["id:BBBBBBBBBBBBBBBBBBBBBB"])
            reopened.close()
        }

        @Test func aVersion2StoreIsUpgradedInPlace() throws {
            let folder = TreeStoreTests.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            // Made as version 2 had it: no pins table, user_version 2, one row.
            let path = try Self.olderStore(
                in: folder,
                "DROP TABLE pins; PRAGMA user_version = 2; "
                    + "INSERT INTO entries(idx, parent, name, kind, flags, size, mtime, ctime) VALUES (2, 1, 'kept', 0, 1, 3, 0, 0)")
            let upgraded = try TreeStoreTests.open(folder)
            #expect(upgraded.pins() == [])
            upgraded.storePins(["/x"])
            upgraded.close()
            #expect(!FileManager.default.fileExists(atPath: path + ".bad"), "the old store was set aside")
            let check = try SQLiteDatabase(path: path)
            let version = try check.prepare("PRAGMA user_version")
            #expect(try version.step() && version.int64(0) == 3)
            let rows = try check.prepare("SELECT count(*) FROM entries")
            #expect(try rows.step() && rows.int64(0) == 1)
            version.finalize()
            rows.finalize()
            check.close()
            let reopened = try TreeStoreTests.open(folder)
            #expect(reopened.pins() == ["/x"])
            reopened.close()
        }
    }
}
