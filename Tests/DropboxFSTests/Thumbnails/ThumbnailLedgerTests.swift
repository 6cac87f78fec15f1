// The ledger of thumbnails written (Thumbnails/ThumbnailLedger.swift): what it counts survives a
// new instance (a remount), the last line of a name wins, removals and files the desktop deleted
// are forgotten, room is made oldest first but never from the protected (newest) entries, a
// damaged line is skipped, and the file is compacted when it has grown.

import Foundation
import Testing

@testable import DropboxFS

@Suite struct ThumbnailLedgerTests {
    struct Folder {
        let root: String
        var thumbnails: String { root + "/thumbnails" }
        var ledger: String { root + "/thumbnails.ledger" }

        init() throws {
            root = FileManager.default.temporaryDirectory.path + "/ledger-\(UUID().uuidString)"
            for size in ["normal", "large"] {
                try FileManager.default.createDirectory(atPath: root + "/thumbnails/" + size, withIntermediateDirectories: true)
            }
        }

        func touch(_ name: String) {
            FileManager.default.createFile(atPath: thumbnails + "/" + name, contents: Data([1]))
        }

        func lines() throws -> [String] {
            try String(contentsOfFile: ledger, encoding: .utf8).split(separator: "\n").map(String.init)
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }
    }

    @Test func whatItCountsSurvivesARemount() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let first = ThumbnailLedger(path: folder.ledger, thumbnails: folder.thumbnails)
        for (name, bytes) in [("normal/a.png", 100), ("large/b.png", 300), ("normal/c.png", 50)] {
            folder.touch(name)
            first.record(name, bytes: UInt64(bytes))
        }
        first.record("normal/a.png", bytes: 120)  // written again
        first.record("normal/c.png", bytes: 0)  // removed
        #expect(first.total == 420)
        let second = ThumbnailLedger(path: folder.ledger, thumbnails: folder.thumbnails)
        #expect(second.total == 420)
        #expect(second.count == 2)
        #expect(second.entry("normal/a.png")?.bytes == 120)
        #expect(second.nextSequence > first.entry("normal/a.png")!.sequence, "sequences go on from the last")
    }

    @Test func roomIsMadeOldestFirstButNeverFromProtectedEntries() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let ledger = ThumbnailLedger(path: folder.ledger, thumbnails: folder.thumbnails)
        for name in ["normal/1.png", "normal/2.png", "normal/3.png"] {
            folder.touch(name)
            ledger.record(name, bytes: 100)
        }
        let mark = ledger.nextSequence
        folder.touch("normal/4.png")
        ledger.record("normal/4.png", bytes: 100)
        #expect(ledger.room(for: 50, as: "normal/5.png", capacity: 500, protectedFrom: mark) == [])
        #expect(ledger.room(for: 150, as: "normal/5.png", capacity: 500, protectedFrom: mark) == ["normal/1.png"])
        #expect(
            ledger.room(for: 250, as: "normal/5.png", capacity: 500, protectedFrom: mark)
                == ["normal/1.png", "normal/2.png"])
        // Rewriting an entry counts its old bytes as gone.
        #expect(ledger.room(for: 200, as: "normal/2.png", capacity: 500, protectedFrom: mark) == [])
        #expect(ledger.room(for: 250, as: "normal/2.png", capacity: 500, protectedFrom: mark) == ["normal/1.png"])
        // Needing the protected entry, or more than the whole cap: no room.
        #expect(ledger.room(for: 450, as: "normal/5.png", capacity: 500, protectedFrom: mark) == nil)
        #expect(ledger.room(for: 501, as: "normal/5.png", capacity: 500, protectedFrom: .max) == nil)
        #expect(ledger.room(for: 450, as: "normal/5.png", capacity: 500, protectedFrom: .max)?.count == 4)
    }

    @Test func filesTheDesktopDeletedAndDamagedLinesAreForgotten() throws {
        let folder = try Folder()
        defer { folder.remove() }
        folder.touch("normal/kept.png")
        let text = """
            100 1 normal/kept.png
            200 2 normal/gone.png
            garbage
            50 x normal/bad.png
            70 3 ../escape.png
            80 4 other/x.png

            """
        try text.write(toFile: folder.ledger, atomically: true, encoding: .utf8)
        let ledger = ThumbnailLedger(path: folder.ledger, thumbnails: folder.thumbnails)
        #expect(ledger.total == 100)
        #expect(ledger.count == 1)
        #expect(ledger.nextSequence == 3, "after the highest well-formed sequence")
    }

    @Test func aGrownLedgerIsCompacted() throws {
        let folder = try Folder()
        defer { folder.remove() }
        folder.touch("normal/a.png")
        let first = ThumbnailLedger(path: folder.ledger, thumbnails: folder.thumbnails)
        for i in 1...200 { first.record("normal/a.png", bytes: UInt64(i)) }
        #expect(try folder.lines().count == 200)
        let second = ThumbnailLedger(path: folder.ledger, thumbnails: folder.thumbnails)
        #expect(second.total == 200)
        #expect(try folder.lines() == ["200 200 normal/a.png"])
    }

    @Test func withoutAFileItCountsInMemory() throws {
        let ledger = ThumbnailLedger(path: nil, thumbnails: "/nonexistent")
        ledger.record("normal/a.png", bytes: 10)
        #expect(ledger.total == 10)
    }
}
