// files/list_revisions, include_deleted listings and "rev:" downloads against both fakes: every
// modify and delete keeps a revision, both modes and before_rev paging behave as Dropbox documents,
// a deleted file keeps its history, and an expired revision is gone.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

@Suite struct ContractRevisionsTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    private func download(_ fake: any FakeUnderTest, _ rev: String) async throws -> [UInt8] {
        try await fake.client.download(path: "rev:" + rev, range: nil).data
    }

    @Test(arguments: FakeKind.allCases)
    func everyModifyKeepsARevisionNewestFirst(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        let versions = (0..<3).map { "version \($0) of the note\n" }
        for text in versions { try await fake.addFile("/d/note.txt", content: bytes(text)) }
        let result = try await fake.client.listRevisions(ListRevisionsArg(path: "/d/note.txt"))
        #expect(!result.isDeleted && !result.hasMore && result.serverDeleted == nil)
        #expect(result.entries.count == 3)
        #expect(result.entries.map(\.serverModified) == result.entries.map(\.serverModified).sorted(by: >))
        for (entry, text) in zip(result.entries, versions.reversed()) {
            let data = try await download(fake, entry.rev)
            #expect(data == bytes(text))
            #expect(entry.size == UInt64(data.count) && entry.contentHash == ContentHasher.hash(data))
            #expect(entry.pathLower == "/d/note.txt")
        }
        let live = try #require(fileMetadata(try await fake.client.getMetadata(path: "/d/note.txt")))
        #expect(result.entries.first?.rev == live.rev)
    }

    @Test(arguments: FakeKind.allCases)
    func beforeRevPagesInPathModeOnly(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        for i in 1...7 { try await fake.addFile("/p.bin", content: [UInt8](repeating: UInt8(i), count: i)) }
        var sizes: [UInt64] = []
        var before: String?
        var calls = 0
        repeat {
            let page = try await fake.client.listRevisions(ListRevisionsArg(path: "/p.bin", limit: 3, beforeRev: before))
            sizes += page.entries.map(\.size)
            before = page.hasMore ? page.entries.last?.rev : nil
            calls += 1
        } while before != nil && calls < 10
        #expect(sizes == [7, 6, 5, 4, 3, 2, 1] && calls == 3)
        let newest = try await fake.client.listRevisions(ListRevisionsArg(path: "/p.bin", limit: 1))
        // error_summary is matched by prefix: its tail varies.
        func routeError(_ arg: ListRevisionsArg) async throws -> String {
            do {
                _ = try await fake.client.listRevisions(arg)
            } catch {
                guard case .routeError(let summary) = error else { throw error }
                return summary
            }
            Issue.record("\(arg) was accepted")
            return ""
        }
        let idMode = try await routeError(ListRevisionsArg(path: "/p.bin", mode: .id, beforeRev: newest.entries[0].rev))
        #expect(idMode.hasPrefix("before_rev_not_supported/"))
        #expect(try await routeError(ListRevisionsArg(path: "/p.bin", beforeRev: "0123456789ab")).hasPrefix("invalid_before_rev/"))
    }

    @Test(arguments: FakeKind.allCases)
    func aDeletedFileKeepsItsHistory(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await fake.addFile("/keep/gone.txt", content: bytes("one"))
        try await fake.addFile("/keep/gone.txt", content: bytes("two"))
        try await fake.addFile("/keep/old/a.txt", content: bytes("A"))
        try await fake.addFile("/keep/old/sub/b.txt", content: bytes("B"))
        try await fake.delete("/keep/gone.txt")
        try await fake.delete("/keep/old")
        let gone = try await fake.client.listRevisions(ListRevisionsArg(path: "/keep/gone.txt"))
        #expect(gone.isDeleted && gone.serverDeleted != nil)
        var contents: [[UInt8]] = []
        for entry in gone.entries { contents.append(try await download(fake, entry.rev)) }
        #expect(contents == [bytes("two"), bytes("one")])
        let deep = try await fake.client.listRevisions(ListRevisionsArg(path: "/keep/old/sub/b.txt"))
        #expect(deep.isDeleted)
        #expect(try await download(fake, try #require(deep.entries.first).rev) == bytes("B"))
        // The deleted folder's contents are listed under it, each with no id, rev or size.
        let listed = try await listPages(
            fake.client, ListFolderArg(path: "/keep", recursive: true, includeDeleted: true)
        ).entries
        let deleted = Set(listed.compactMap { entry -> String? in if case .deleted(let d) = entry { d.pathLower } else { nil } })
        #expect(deleted == ["/keep/gone.txt", "/keep/old", "/keep/old/a.txt", "/keep/old/sub", "/keep/old/sub/b.txt"])
        await #expect(throws: DropboxError.lookup(.notFound)) {
            try await fake.client.listFolder(ListFolderArg(path: "/keep/old"))
        }
    }

    @Test(arguments: FakeKind.allCases)
    func idModeFollowsAMove(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await fake.addFile("/a.txt", content: bytes("first"))
        try await fake.addFile("/a.txt", content: bytes("second"))
        try await fake.move(from: "/a.txt", to: "/b.txt")
        try await fake.addFile("/b.txt", content: bytes("third"))
        let file = try #require(fileMetadata(try await fake.client.getMetadata(path: "/b.txt")))
        let byId = try await fake.client.listRevisions(ListRevisionsArg(path: file.id, mode: .id, limit: 100))
        #expect(!byId.isDeleted)
        var contents: [[UInt8]] = []
        for entry in byId.entries { contents.append(try await download(fake, entry.rev)) }
        // A fake may or may not store the move itself as a revision; the history holds all three.
        #expect(contents.first == bytes("third") && contents.last == bytes("first"))
        #expect(Set(contents) == [bytes("first"), bytes("second"), bytes("third")])
        #expect(Set(byId.entries.compactMap(\.pathLower)) == ["/a.txt", "/b.txt"])
        let byPath = try await fake.client.listRevisions(ListRevisionsArg(path: "/b.txt", limit: 100))
        #expect(byPath.entries.allSatisfy { $0.pathLower == "/b.txt" })
        let old = try await fake.client.listRevisions(ListRevisionsArg(path: "/a.txt"))
        #expect(old.isDeleted && old.entries.allSatisfy { $0.pathLower == "/a.txt" } && !old.entries.isEmpty)
    }

    @Test(arguments: FakeKind.allCases)
    func lookupErrorsAndAnExpiredRevision(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await fake.addFolder("/folder")
        await #expect(throws: DropboxError.lookup(.notFound)) {
            try await fake.client.listRevisions(ListRevisionsArg(path: "/nothing.txt"))
        }
        await #expect(throws: DropboxError.lookup(.notFile)) {
            try await fake.client.listRevisions(ListRevisionsArg(path: "/folder"))
        }
        try await fake.addFile("/e.txt", content: bytes("old"))
        try await fake.addFile("/e.txt", content: bytes("new"))
        let before = try await fake.client.listRevisions(ListRevisionsArg(path: "/e.txt"))
        let (current, old) = (before.entries[0].rev, before.entries[1].rev)
        #expect(try await fake.expireRevision(current) == false)
        #expect(try await fake.expireRevision(old))
        let after = try await fake.client.listRevisions(ListRevisionsArg(path: "/e.txt"))
        #expect(after.entries.map(\.rev) == [current])
        await #expect(throws: DropboxError.lookup(.notFound)) { try await download(fake, old) }
        #expect(try await fake.expireRevision(old) == false)
    }
}
