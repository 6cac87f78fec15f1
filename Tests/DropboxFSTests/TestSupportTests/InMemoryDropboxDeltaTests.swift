// Tests of list_folder/continue after changes: the delta sequence of each kind of change, moves,
// scoping to the cursor's folder, delta paging, latest cursors and cursor reset.

import DropboxAPI
import DropboxTestSupport
import Testing

extension TestSupportTests {
    @Suite struct InMemoryDropboxDeltaTests {
        /// Lists `path` to the end and returns the cursor from which changes are reported.
        private func cursor(_ fake: InMemoryDropbox, _ path: String = "", recursive: Bool = true, limit: UInt32 = 2000)
            async throws -> String
        {
            try await listAll(fake, ListFolderArg(path: path, recursive: recursive, limit: limit)).cursor
        }

        private func delta(_ fake: InMemoryDropbox, from cursor: String) async throws -> [String] {
            try await continueAll(fake, from: cursor).entries.map(describe)
        }

        @Test func noChangeGivesAnEmptyPage() async throws {
            let fake = smallTree()
            let start = try await cursor(fake)
            let page = try await fake.listFolderContinue(cursor: start)
            #expect(page.entries.isEmpty)
            #expect(!page.hasMore)
        }

        @Test func addedFileInANewFolderComesAfterTheFolder() async throws {
            let fake = smallTree()
            let start = try await cursor(fake)
            fake.addFile("/A/New/n.txt", size: 3)
            #expect(try await delta(fake, from: start) == ["folder:/A/New", "file:/A/New/n.txt"])
        }

        @Test func modifiedFileComesBackWithItsNewRev() async throws {
            let fake = smallTree()
            let start = try await cursor(fake)
            let changed = fake.modifyFile("/A/b.txt", contents: [7])
            let entries = try await continueAll(fake, from: start).entries
            #expect(entries == [.file(changed)])
        }

        @Test func deletedFolderIsOneEntryEvenWithoutIncludeDeleted() async throws {
            let fake = smallTree()
            let start = try await cursor(fake)
            fake.delete("/A")
            #expect(try await delta(fake, from: start) == ["deleted:/A"])
            #expect(fake.entry("/A/Sub/c.txt") == nil)
        }

        @Test func deletedChildrenCanBeReportedToo() async throws {
            let fake = InMemoryDropbox(reportsDeletedChildren: true)
            fake.addFile("/A/b.txt", size: 1)
            fake.addFile("/A/Sub/c.txt", size: 1)
            let start = try await cursor(fake)
            fake.delete("/a")
            #expect(
                try await delta(fake, from: start) == [
                    "deleted:/A", "deleted:/A/b.txt", "deleted:/A/Sub", "deleted:/A/Sub/c.txt",
                ])
        }

        @Test func changesArriveInTheOrderMade() async throws {
            let fake = smallTree()
            let start = try await cursor(fake)
            fake.addFile("/x.txt", size: 1)
            fake.delete("/x.txt")
            fake.addFolder("/Y")
            fake.addFile("/x.txt", size: 2)
            #expect(
                try await delta(fake, from: start) == ["file:/x.txt", "deleted:/x.txt", "folder:/Y", "file:/x.txt"])
        }

        @Test func movedFileIsDeletedThenAddedWithTheSameId() async throws {
            let fake = smallTree()
            let before = try #require(fake.entry("/A/b.txt")?.fileMetadata)
            let start = try await cursor(fake)
            fake.move(from: "/A/b.txt", to: "/Moved/B2.txt")
            let entries = try await continueAll(fake, from: start).entries
            #expect(entries.map(describe) == ["deleted:/A/b.txt", "folder:/Moved", "file:/Moved/B2.txt"])
            let after = try #require(entries.last?.fileMetadata)
            #expect(after.id == before.id)
            #expect(after.contentHash == before.contentHash)
            #expect(after.rev != before.rev)
            #expect(after.name == "B2.txt")
        }

        @Test func movedFolderBringsItsSubtreeParentsFirst() async throws {
            let fake = smallTree()
            let ids = try ["/A", "/A/b.txt", "/A/Sub", "/A/Sub/c.txt"].map { try #require(fake.entry($0)?.id) }
            let start = try await cursor(fake)
            fake.move(from: "/A", to: "/Z")
            let entries = try await continueAll(fake, from: start).entries
            #expect(
                entries.map(describe) == [
                    "deleted:/A", "folder:/Z", "file:/Z/b.txt", "folder:/Z/Sub", "file:/Z/Sub/c.txt",
                ])
            #expect(entries.dropFirst().map(\.id) == ids)
            #expect(fake.contents(of: "/Z/Sub/c.txt") == Array("world!".utf8))
        }

        @Test func caseOnlyRenameIsNotReported() async throws {
            let fake = smallTree()
            let start = try await cursor(fake)
            fake.move(from: "/A", to: "/a")
            #expect(try await delta(fake, from: start).isEmpty)
            #expect(fake.entry("/A/Sub/c.txt")?.pathDisplay == "/a/Sub/c.txt")
            #expect(fake.entry("/a")?.name == "a")
        }

        @Test func recursiveCursorSeesOnlyItsFolder() async throws {
            let fake = smallTree()
            let start = try await cursor(fake, "/A")
            fake.addFile("/elsewhere.txt", size: 1)
            fake.addFile("/A/Sub/deep.txt", size: 1)
            fake.move(from: "/A/b.txt", to: "/out.txt")
            fake.move(from: "/top.txt", to: "/A/in.txt")
            #expect(
                try await delta(fake, from: start) == ["file:/A/Sub/deep.txt", "deleted:/A/b.txt", "file:/A/in.txt"])
        }

        @Test func nonRecursiveCursorSeesOnlyDirectChildren() async throws {
            let fake = smallTree()
            let start = try await cursor(fake, "/A", recursive: false)
            fake.addFile("/A/Sub/deep.txt", size: 1)
            fake.addFile("/A/direct.txt", size: 1)
            fake.addFile("/A/New/deeper.txt", size: 1)
            fake.delete("/A/Sub")
            #expect(try await delta(fake, from: start) == ["file:/A/direct.txt", "folder:/A/New", "deleted:/A/Sub"])
        }

        @Test func deltasArePagedByTheCursorsLimit() async throws {
            let fake = smallTree()
            let start = try await cursor(fake, limit: 2)
            for i in 0..<5 { fake.addFile("/n\(i)", size: 1) }
            let drained = try await continueAll(fake, from: start)
            #expect(drained.pages.map(\.entries.count) == [2, 2, 1])
            #expect(drained.pages.map(\.hasMore) == [true, true, false])
            #expect(drained.entries.map(describe) == (0..<5).map { "file:/n\($0)" })
            #expect(try await fake.listFolderContinue(cursor: drained.cursor).entries.isEmpty)
        }

        @Test func laterCursorsSeeOnlyLaterChanges() async throws {
            let fake = smallTree()
            let start = try await cursor(fake)
            fake.addFile("/one", size: 1)
            let middle = try await continueAll(fake, from: start).cursor
            fake.addFile("/two", size: 1)
            #expect(try await delta(fake, from: middle) == ["file:/two"])
            #expect(try await delta(fake, from: start) == ["file:/one", "file:/two"])
        }

        @Test func latestCursorSkipsTheListing() async throws {
            let fake = smallTree()
            let latest = try await fake.listFolderGetLatestCursor(ListFolderArg(path: "", recursive: true))
            fake.addFile("/A/later.txt", size: 1)
            #expect(try await delta(fake, from: latest) == ["file:/A/later.txt"])
            #expect(fake.callCount(.listFolderGetLatestCursor) == 1)
            await #expect(throws: DropboxError.lookup(.notFound)) {
                try await fake.listFolderGetLatestCursor(ListFolderArg(path: "/missing"))
            }
        }

        @Test func changesAddedBeforeTheFirstListingAreNotReplayed() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/early", size: 1)
            let start = try await cursor(fake)
            #expect(try await delta(fake, from: start).isEmpty)
        }

        @Test func deletingTheListedFolderFailsContinue() async throws {
            let fake = smallTree()
            let start = try await cursor(fake, "/A/Sub")
            fake.delete("/A")
            await #expect(throws: DropboxError.lookup(.notFound)) { try await fake.listFolderContinue(cursor: start) }
        }

        @Test func resetCursorsExpiresEveryCursor() async throws {
            let fake = smallTree()
            let done = try await cursor(fake)
            let midListing = try await fake.listFolder(ListFolderArg(path: "", recursive: true, limit: 1)).cursor
            fake.resetCursors()
            await #expect(throws: DropboxError.cursorReset) { try await fake.listFolderContinue(cursor: done) }
            await #expect(throws: DropboxError.cursorReset) { try await fake.listFolderContinue(cursor: midListing) }
            await #expect(throws: DropboxError.cursorReset) {
                try await fake.listFolderLongpoll(cursor: done, timeoutSeconds: 0)
            }
            let fresh = try await cursor(fake)
            fake.addFile("/after", size: 1)
            #expect(try await delta(fake, from: fresh) == ["file:/after"])
        }

        @Test func pagesOfAListingStayConsistentWhileTheTreeChanges() async throws {
            let fake = InMemoryDropbox()
            for i in 0..<10 { fake.addFile("/f\(i)", size: 1) }
            let first = try await fake.listFolder(ListFolderArg(path: "", limit: 4))
            fake.delete("/f9")
            fake.addFile("/g", size: 1)
            let rest = try await continueAll(fake, from: first.cursor)
            #expect((first.entries + rest.entries).map(describe) == (0..<10).map { "file:/f\($0)" })
            #expect(try await delta(fake, from: rest.cursor) == ["deleted:/f9", "file:/g"])
        }
    }
}
