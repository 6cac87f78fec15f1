// One set of DropboxClient scenarios run against both fakes (ContractFakes.swift): the in-memory
// Dropbox and the HTTP fake server through the real client. Whatever one fake does here, the other
// must do too, and both as Dropbox documents it. Adversarial listings and deltas are in
// ContractAdversarialTests.swift.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

/// The files most scenarios start from: nested folders, an empty folder and file, names that fold
/// differently (ß, ligature, Greek final sigma), an NFD name, and a folder of 20 files.
let contractFiles: [(path: String, content: [UInt8])] = {
    var files: [(String, [UInt8])] = [
        ("/r/top.txt", Array("top".utf8)),
        ("/r/a/x.txt", Array("x".utf8)),
        ("/r/a/sub/z.txt", Array("zz".utf8)),
        ("/r/a/sub/deeper/leaf.txt", Array("leaf".utf8)),
        ("/r/b/y.txt", Array("yyy".utf8)),
        ("/r/b/empty.txt", []),
        ("/r/Straße/ﬁle.txt", Array("strasse".utf8)),
        ("/r/ΟΔΟΣ/ΣΑΣ.txt", Array("sigma".utf8)),
        ("/r/Café ☕/Re\u{301}sume\u{301}.txt", Array("nfd".utf8)),
        ("/other/o.txt", Array("o".utf8)),
    ]
    for i in 0..<20 { files.append(("/r/many/file \(i).txt", Array("file \(i)".utf8))) }
    return files
}()

func buildContractTree(_ fake: any FakeUnderTest) async throws {
    for (path, content) in contractFiles { try await fake.addFile(path, content: content) }
    try await fake.addFolder("/r/empty")
}

/// The changes the delta scenarios make: adds with new parents, an edit, deletes of a file and a
/// folder with its subtree, moves of a folder and a file, a folder replaced by a file and a file by
/// a folder, and an entry added and deleted again.
func makeContractChanges(_ fake: any FakeUnderTest) async throws {
    try await fake.addFile("/r/new.txt", content: Array("new".utf8))
    try await fake.addFile("/r/newdir/deep/n.txt", content: Array("n".utf8))
    try await fake.addFile("/r/top.txt", content: Array("top, edited".utf8))
    try await fake.delete("/r/b/y.txt")
    try await fake.delete("/r/a/sub")
    try await fake.move(from: "/r/many", to: "/r/moved/many2")
    try await fake.move(from: "/r/a/x.txt", to: "/r/x moved.txt")
    try await fake.addFile("/r/a/fresh.txt", content: Array("fresh".utf8))
    try await fake.addFile("/r/b", content: Array("b is a file now".utf8))
    try await fake.delete("/r/ΟΔΟΣ/ΣΑΣ.txt")
    try await fake.addFile("/r/ΟΔΟΣ/ΣΑΣ.txt/inner.txt", content: Array("inner".utf8))
    try await fake.addFile("/r/tmp.txt", content: [1])
    try await fake.delete("/r/tmp.txt")
    try await fake.addFile("/other/o2.txt", content: [2])
}

func fileMetadata(_ entry: Metadata?) -> FileMetadata? {
    if case .file(let file) = entry { return file }
    return nil
}

func folderMetadata(_ entry: Metadata?) -> FolderMetadata? {
    if case .folder(let folder) = entry { return folder }
    return nil
}

@Suite struct ContractTests {
    // MARK: Listings

    @Test(arguments: FakeKind.allCases, [UInt32(1), 4, 2000])
    func pagesGiveTheTree(kind: FakeKind, limit: UInt32) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let scopes: [(String, Bool)] = [
            ("", true), ("", false), ("/r", true), ("/r", false), ("/r/a", true), ("/r/many", false),
        ]
        for (scope, recursive) in scopes {
            let context = "\(kind) \(scope.isEmpty ? "root" : scope) recursive \(recursive) limit \(limit)"
            let listing = try await listPages(
                fake.client, ListFolderArg(path: scope, recursive: recursive, limit: limit))
            for page in listing.pages.dropLast() { #expect(page.hasMore, "\(context)") }
            #expect(listing.pages.last?.hasMore == false, "\(context)")
            for page in listing.pages { #expect(page.entries.count <= Int(limit), "\(context): a page over the limit") }
            // Without adversarial modes an entry comes once, and never as `deleted`.
            let ids = listing.entries.compactMap { fileMetadata($0)?.id ?? folderMetadata($0)?.id }
            #expect(ids.count == listing.entries.count, "\(context): deleted entries in a fresh listing")
            #expect(Set(ids).count == ids.count, "\(context): an entry listed twice")
            var folded = FoldedTree()
            folded.apply(listing.pages)
            let want = expectedNodes(try await fake.account(), scope: scope, recursive: recursive)
            expectSameTree(folded.nodes, want, context)
            #expect(folded.unconfirmedParents(scope: scope).isEmpty, "\(context)")
            if limit == 1 { #expect(listing.pages.count >= want.count, "\(context)") }

            // Nothing changed since: the last cursor has no changes.
            let after = try await changePages(fake.client, since: listing.cursor)
            #expect(after.entries.isEmpty, "\(context): \(after.entries)")

            // listFolderAll hands over the same pages and the last cursor, or nil when stopped.
            var all: [ListFolderResult] = []
            let cursor = try await fake.client.listFolderAll(
                ListFolderArg(path: scope, recursive: recursive, limit: limit)
            ) {
                all.append($0)
                return true
            }
            #expect(cursor != nil, "\(context)")
            var foldedAll = FoldedTree()
            foldedAll.apply(all)
            expectSameTree(foldedAll.nodes, want, "\(context), listFolderAll")
            var seen = 0
            let stopped = try await fake.client.listFolderAll(
                ListFolderArg(path: scope, recursive: recursive, limit: limit)
            ) { _ in
                seen += 1
                return false
            }
            #expect(stopped == nil && seen == 1, "\(context)")
        }
    }

    @Test(arguments: FakeKind.allCases)
    func aRecursiveListingOfAFolderHoldsTheFolderItself(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let listing = try await listPages(fake.client, ListFolderArg(path: "/R/A", recursive: true))
        #expect(listing.entries.contains { folderMetadata($0)?.pathLower == "/r/a" })
        let children = try await listPages(fake.client, ListFolderArg(path: "/r/a"))
        #expect(Set(children.entries.compactMap(\.pathLower)) == ["/r/a/x.txt", "/r/a/sub"])
        let empty = try await listPages(fake.client, ListFolderArg(path: "/r/empty", recursive: true))
        #expect(empty.entries.compactMap(\.pathLower) == ["/r/empty"])
        let emptyChildren = try await listPages(fake.client, ListFolderArg(path: "/r/empty"))
        #expect(emptyChildren.entries.isEmpty && emptyChildren.pages.count == 1)
    }

    @Test(arguments: FakeKind.allCases)
    func includeDeletedListsWhatWasDeleted(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        try await fake.delete("/r/b/y.txt")
        try await fake.delete("/r/a/sub")
        try await fake.move(from: "/r/many", to: "/r/moved")
        try await fake.delete("/r/top.txt")
        try await fake.addFile("/r/top.txt", content: Array("back".utf8))
        func deleted(_ arg: ListFolderArg) async throws -> Set<String> {
            Set(
                try await listPages(fake.client, arg).entries.compactMap { entry in
                    if case .deleted(let d) = entry { d.pathLower } else { nil }
                })
        }
        let recursive = try await deleted(ListFolderArg(path: "/r", recursive: true, limit: 3, includeDeleted: true))
        #expect(recursive.isSuperset(of: ["/r/b/y.txt", "/r/a/sub", "/r/many"]), "\(recursive)")
        let live = Set(try await fake.account().map(\.pathLower))
        #expect(recursive.isDisjoint(with: live), "\(recursive.intersection(live))")
        #expect(recursive.allSatisfy { $0.hasPrefix("/r/") })
        #expect(try await deleted(ListFolderArg(path: "/r/b", includeDeleted: true)) == ["/r/b/y.txt"])
        #expect(try await deleted(ListFolderArg(path: "/r", recursive: true)).isEmpty)
        #expect(try await deleted(ListFolderArg(path: "/r/b")).isEmpty)
        // The live entries are listed as without include_deleted.
        var folded = FoldedTree()
        folded.apply(
            try await listPages(fake.client, ListFolderArg(path: "/r", recursive: true, includeDeleted: true)).pages)
        expectSameTree(folded.nodes, expectedNodes(try await fake.account(), scope: "/r", recursive: true), "\(kind)")
    }

    @Test(arguments: FakeKind.allCases)
    func listingsAgreeWithGetMetadata(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let listing = try await listPages(fake.client, ListFolderArg(path: "", recursive: true))
        for entry in listing.entries {
            let path = try #require(entry.pathLower)
            #expect(try await fake.client.getMetadata(path: path) == entry, "\(path)")
            if let id = fileMetadata(entry)?.id ?? folderMetadata(entry)?.id {
                #expect(try await fake.client.getMetadata(path: id) == entry, "\(path) by id")
            }
        }
    }

    // MARK: Deltas

    @Test(arguments: FakeKind.allCases)
    func deltasAfterChangesGiveTheAccount(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let scopes: [(String, Bool)] = [("", true), ("/r", true), ("/r", false), ("/r/a", false), ("/r/a", true)]
        var states: [(scope: String, recursive: Bool, folded: FoldedTree, cursor: String)] = []
        for (scope, recursive) in scopes {
            let (folded, cursor) = try await expectListingGivesAccount(
                fake, scope: scope, recursive: recursive, limit: 3, "\(kind) \(scope) before")
            states.append((scope, recursive, folded, cursor))
        }
        try await makeContractChanges(fake)
        let account = try await fake.account()
        for var state in states {
            let context = "\(kind) \(state.scope.isEmpty ? "root" : state.scope) recursive \(state.recursive)"
            let delta = try await changePages(fake.client, since: state.cursor)
            for entry in delta.entries {
                let key = try #require(entry.pathLower)
                #expect(
                    state.recursive ? isWithin(key, state.scope) : parentKey(key) == state.scope,
                    "\(context): \(key) is outside the cursor's folder")
            }
            // A cursor is a position: asked again, it gives the same changes.
            #expect(try await changePages(fake.client, since: state.cursor).entries == delta.entries, "\(context)")
            state.folded.apply(delta.pages)
            expectSameTree(
                state.folded.nodes, expectedNodes(account, scope: state.scope, recursive: state.recursive), context)
            #expect(state.folded.unconfirmedParents(scope: state.scope).isEmpty, "\(context)")
            #expect(try await changePages(fake.client, since: delta.cursor).entries.isEmpty, "\(context)")
        }
    }

    @Test(arguments: FakeKind.allCases)
    func changesArriveInTheirOrder(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        var (folded, cursor) = try await expectListingGivesAccount(
            fake, scope: "/r", recursive: true, limit: 2000, "\(kind) before")
        try await fake.delete("/r/a")
        try await fake.addFile("/r/a", content: Array("a file".utf8))
        try await fake.delete("/r/a")
        try await fake.addFolder("/r/a")
        try await fake.addFile("/r/a/again.txt", content: [1])
        let delta = try await changePages(fake.client, since: cursor)
        let keys = delta.entries.filter { $0.pathLower == "/r/a" }
        // Whatever a fake reports on the way, the last entry for the path is the folder now there,
        // and applied in order the changes give the account.
        #expect(folderMetadata(keys.last) != nil, "\(keys)")
        folded.apply(delta.pages)
        expectSameTree(folded.nodes, expectedNodes(try await fake.account(), scope: "/r", recursive: true), "\(kind)")
    }

    @Test(arguments: FakeKind.allCases)
    func caseOnlyRenamesAreNotReported(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let cursor = try await fake.client.listFolderGetLatestCursor(ListFolderArg(path: "", recursive: true))
        try await fake.move(from: "/r/a", to: "/r/A")
        try await fake.move(from: "/r/top.txt", to: "/r/TOP.txt")
        let delta = try await changePages(fake.client, since: cursor)
        #expect(delta.entries.isEmpty, "\(delta.entries)")
        let folder = try #require(folderMetadata(try await fake.client.getMetadata(path: "/r/a")))
        #expect(folder.name == "A" && folder.pathLower == "/r/a" && folder.pathDisplay == "/r/A")
        let file = try #require(fileMetadata(try await fake.client.getMetadata(path: "/r/top.txt")))
        #expect(file.name == "TOP.txt" && file.pathDisplay == "/r/TOP.txt")
        let inner = try #require(fileMetadata(try await fake.client.getMetadata(path: "/r/a/x.txt")))
        #expect(inner.pathDisplay == "/r/A/x.txt")
        await expectListingGivesAccountSafely(fake, "\(kind) after the renames")
    }

    @Test(arguments: FakeKind.allCases)
    func aLatestCursorSeesOnlyLaterChangesInItsFolder(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let recursive = try await fake.client.listFolderGetLatestCursor(ListFolderArg(path: "/r/a", recursive: true))
        let direct = try await fake.client.listFolderGetLatestCursor(ListFolderArg(path: "/r/a"))
        #expect(try await changePages(fake.client, since: recursive).entries.isEmpty)
        try await fake.addFile("/r/a/sub/z2.txt", content: [1])
        try await fake.addFile("/r/a/w.txt", content: [2])
        try await fake.addFile("/r/elsewhere.txt", content: [3])
        let deep = try await changePages(fake.client, since: recursive)
        #expect(Set(deep.entries.compactMap(\.pathLower)) == ["/r/a/sub/z2.txt", "/r/a/w.txt"])
        let shallow = try await changePages(fake.client, since: direct)
        #expect(shallow.entries.compactMap(\.pathLower) == ["/r/a/w.txt"])
        await #expect(throws: DropboxError.lookup(.notFound)) {
            try await fake.client.listFolderGetLatestCursor(ListFolderArg(path: "/r/nothing"))
        }
        await #expect(throws: DropboxError.lookup(.notFolder)) {
            try await fake.client.listFolderGetLatestCursor(ListFolderArg(path: "/r/top.txt"))
        }
    }

    @Test(arguments: FakeKind.allCases)
    func resetCursorsExpireEveryCursor(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let ended = try await listPages(fake.client, ListFolderArg(path: "", recursive: true)).cursor
        let midway = try await fake.client.listFolder(ListFolderArg(path: "/r", recursive: true, limit: 1))
        #expect(midway.hasMore)
        let latest = try await fake.client.listFolderGetLatestCursor(ListFolderArg(path: "/r"))
        try await fake.resetCursors()
        for cursor in [ended, midway.cursor, latest] {
            await #expect(throws: DropboxError.cursorReset) { try await fake.client.listFolderContinue(cursor: cursor) }
        }
        await #expect(throws: DropboxError.cursorReset) {
            try await fake.client.listFolderLongpoll(cursor: ended, timeoutSeconds: 30)
        }
        // A new listing works and is current.
        try await fake.addFile("/r/after.txt", content: [1])
        await expectListingGivesAccountSafely(fake, "\(kind) after the reset")
    }

    @Test(arguments: FakeKind.allCases)
    func theCursorOfADeletedFolderFindsNothing(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let recursive = try await listPages(fake.client, ListFolderArg(path: "/r/a", recursive: true)).cursor
        let direct = try await fake.client.listFolderGetLatestCursor(ListFolderArg(path: "/r/b"))
        try await fake.delete("/r/a")
        try await fake.delete("/r/b")
        await #expect(throws: DropboxError.lookup(.notFound)) {
            try await fake.client.listFolderContinue(cursor: recursive)
        }
        await #expect(throws: DropboxError.lookup(.notFound)) {
            try await fake.client.listFolderContinue(cursor: direct)
        }
    }

    @Test(arguments: FakeKind.allCases)
    func longpollWakesOnAChangeAndTimesOutWithout(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let cursor = try await fake.client.listFolderGetLatestCursor(ListFolderArg(path: "/r", recursive: true))
        try await fake.addFile("/r/a/poke.txt", content: [1])
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try await fake.client.listFolderLongpoll(cursor: cursor, timeoutSeconds: 120).changes)
        #expect(start.duration(to: clock.now) < .seconds(60), "the change, not the 120 s timeout, ended the poll")
        // A cursor in the middle of a listing has more to give at once.
        let midway = try await fake.client.listFolder(ListFolderArg(path: "/r", recursive: true, limit: 1))
        #expect(try await fake.client.listFolderLongpoll(cursor: midway.cursor, timeoutSeconds: 30).changes)
        let quiet = try await fake.client.listFolderGetLatestCursor(ListFolderArg(path: "/r", recursive: true))
        #expect(try await fake.client.listFolderLongpoll(cursor: quiet, timeoutSeconds: 1).changes == false)
    }

    // MARK: Metadata

    @Test(arguments: FakeKind.allCases)
    func getMetadataFindsByPathIdAndRevision(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        try await fake.addSymlink("/r/link", target: "/r/top.txt")
        let file = try #require(fileMetadata(try await fake.client.getMetadata(path: "/R/A/X.TXT")))
        #expect(file.name == "x.txt" && file.pathLower == "/r/a/x.txt" && file.pathDisplay == "/r/a/x.txt")
        #expect(file.size == 1 && file.isDownloadable && file.contentHash == ContentHasher.hash(Array("x".utf8)))
        #expect(file.rev.count >= 9 && file.rev.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(file.id.hasPrefix("id:"))
        let folder = try #require(folderMetadata(try await fake.client.getMetadata(path: "/r/a")))
        #expect(folder.name == "a" && folder.pathDisplay == "/r/a")
        #expect(try await fake.client.getMetadata(path: file.id) == .file(file))
        #expect(try await fake.client.getMetadata(path: folder.id + "/x.txt") == .file(file))
        #expect(try await fake.client.getMetadata(path: "rev:" + file.rev) == .file(file))
        #expect(try await fake.client.getMetadata(path: "//r//a/x.txt") == .file(file))

        // Names keep their form; lookups match either normalisation.
        let nfd = "/r/Café ☕/Re\u{301}sume\u{301}.txt"
        let resume = try #require(fileMetadata(try await fake.client.getMetadata(path: nfd)))
        #expect(Array(resume.name.unicodeScalars) == Array("Re\u{301}sume\u{301}.txt".unicodeScalars))
        #expect(try await fake.client.getMetadata(path: "/r/café ☕/résumé.txt") == .file(resume))

        let link = try #require(fileMetadata(try await fake.client.getMetadata(path: "/r/link")))
        #expect(link.symlinkTarget == "/r/top.txt")
        let linkRevision = try #require(fileMetadata(try await fake.client.getMetadata(path: "rev:" + link.rev)))
        #expect(linkRevision.symlinkTarget == nil && linkRevision.id == link.id)
    }

    @Test(arguments: FakeKind.allCases)
    func namespacePathsNameTheAccountsTree(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let client = fake.client
        let root = try await client.getCurrentAccount().rootInfo.rootNamespaceId
        let ns = "ns:" + root
        #expect(
            try await client.getMetadata(path: ns + "/r/a/x.txt") == (try await client.getMetadata(path: "/r/a/x.txt")))
        #expect(try await client.download(path: ns + "/r/top.txt", range: nil).data == Array("top".utf8))
        let listing = try await listPages(client, ListFolderArg(path: ns + "/r/a"))
        #expect(Set(listing.entries.compactMap(\.pathLower)) == ["/r/a/x.txt", "/r/a/sub"])
        let whole = try await listPages(client, ListFolderArg(path: ns))
        #expect(Set(whole.entries.compactMap(\.pathLower)) == ["/r", "/other"])
        await #expect(throws: DropboxError.lookup(.notFound)) { try await client.getMetadata(path: "ns:\(root)9/r") }
    }

    @Test(arguments: FakeKind.allCases)
    func requestErrors(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let client = fake.client
        func expectBadRequest(_ what: String, _ call: () async throws -> Void) async {
            do {
                try await call()
                Issue.record("\(kind) \(what): no error")
            } catch let error as DropboxError {
                guard case .badRequest = error else {
                    Issue.record("\(kind) \(what): \(error), not a bad request")
                    return
                }
            } catch {
                Issue.record("\(kind) \(what): \(error)")
            }
        }
        await expectBadRequest("continue on a cursor no server made") {
            _ = try await client.listFolderContinue(cursor: "not a cursor")
        }
        await expectBadRequest("longpoll on a cursor no server made") {
            _ = try await client.listFolderLongpoll(cursor: "not a cursor", timeoutSeconds: 30)
        }
        await expectBadRequest("list_folder of /") { _ = try await client.listFolder(ListFolderArg(path: "/")) }
        await expectBadRequest("limit 0") { _ = try await client.listFolder(ListFolderArg(path: "", limit: 0)) }
        await expectBadRequest("limit 2001") { _ = try await client.listFolder(ListFolderArg(path: "", limit: 2001)) }
        await expectBadRequest("get_metadata of the root") { _ = try await client.getMetadata(path: "") }
        await expectBadRequest("get_metadata of /") { _ = try await client.getMetadata(path: "/") }
        await expectBadRequest("download of the root") { _ = try await client.download(path: "", range: nil) }
        // Paths that match none of the forms the route accepts are refused before any lookup.
        await expectBadRequest("list_folder of a relative path") {
            _ = try await client.listFolder(ListFolderArg(path: "r/a"))
        }
        await expectBadRequest("get_metadata of a relative path") { _ = try await client.getMetadata(path: "r/a") }
        await expectBadRequest("download of a relative path") {
            _ = try await client.download(path: "r/top.txt", range: nil)
        }
        await expectBadRequest("list_folder of a revision") {
            _ = try await client.listFolder(ListFolderArg(path: "rev:0123456789ab"))
        }

        await #expect(throws: DropboxError.lookup(.notFound)) {
            try await client.listFolder(ListFolderArg(path: "/nothing"))
        }
        await #expect(throws: DropboxError.lookup(.notFolder)) {
            try await client.listFolder(ListFolderArg(path: "/r/top.txt"))
        }
        await #expect(throws: DropboxError.lookup(.notFound)) { try await client.getMetadata(path: "/r/nothing.txt") }
        await #expect(throws: DropboxError.lookup(.notFound)) { try await client.getMetadata(path: "/r/top.txt/below") }
        await #expect(throws: DropboxError.lookup(.notFound)) {
            try await client.getMetadata(path: "rev:0123456789abcdef")
        }
        let file = try #require(fileMetadata(try await client.getMetadata(path: "/r/top.txt")))
        try await fake.delete("/r/top.txt")
        await #expect(throws: DropboxError.lookup(.notFound)) { try await client.getMetadata(path: file.id) }
        await #expect(throws: DropboxError.lookup(.notFound)) { try await client.getMetadata(path: "/r/top.txt") }
    }

    // MARK: Downloads

    @Test(arguments: FakeKind.allCases)
    func downloadsGiveExactBytesAndRanges(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        let bytes = Array("0123456789abcdefghij".utf8)
        try await fake.addFile("/d/f.bin", content: bytes)
        try await fake.addFile("/d/empty", content: [])
        let client = fake.client
        let whole = try await client.download(path: "/D/F.BIN", range: nil)
        #expect(whole.data == bytes)
        #expect(whole.metadata.size == 20 && whole.metadata.contentHash == ContentHasher.hash(bytes))
        #expect(.file(whole.metadata) == (try await client.getMetadata(path: "/d/f.bin")))
        #expect(try await client.download(path: whole.metadata.id, range: nil).data == bytes)
        #expect(try await client.download(path: "rev:" + whole.metadata.rev, range: nil).data == bytes)
        #expect(try await client.download(path: "/d/f.bin", range: nil, freshConnection: true).data == bytes)

        let cases: [(UInt64, UInt64, String)] = [
            (0, 1, "0"), (5, 4, "5678"), (0, 20, "0123456789abcdefghij"), (19, 1, "j"),
            // Past the end: what there is.
            (15, 10, "fghij"), (0, 1000, "0123456789abcdefghij"), (19, UInt64(Int64.max) - 19, "j"),
        ]
        for (offset, length, expected) in cases {
            let part = try await client.download(path: "/d/f.bin", range: ByteRange(offset: offset, length: length))
            #expect(part.data == Array(expected.utf8), "range \(offset)+\(length)")
            #expect(part.metadata.rev == whole.metadata.rev)
        }
        for offset in [UInt64(20), 21, 1 << 40] {
            await #expect(throws: DropboxError.rangeNotSatisfiable, "offset \(offset)") {
                try await client.download(path: "/d/f.bin", range: ByteRange(offset: offset, length: 1))
            }
        }
        let empty = try await client.download(path: "/d/empty", range: nil)
        #expect(empty.data.isEmpty && empty.metadata.size == 0 && empty.metadata.contentHash == ContentHasher.hash([]))
        await #expect(throws: DropboxError.rangeNotSatisfiable) {
            try await client.download(path: "/d/empty", range: ByteRange(offset: 0, length: 1))
        }
        await #expect(throws: DropboxError.lookup(.notFile)) { try await client.download(path: "/d", range: nil) }
        await #expect(throws: DropboxError.lookup(.notFound)) { try await client.download(path: "/d/none", range: nil) }
        await #expect(throws: DropboxError.lookup(.notFound)) {
            try await client.download(path: "/d/none", range: ByteRange(offset: 0, length: 1))
        }
    }

    @Test(arguments: FakeKind.allCases)
    func oldRevisionsStayDownloadable(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await fake.addFile("/d/f.txt", content: Array("first".utf8))
        let client = fake.client
        let first = try #require(fileMetadata(try await client.getMetadata(path: "/d/f.txt")))
        try await fake.addFile("/d/f.txt", content: Array("second!".utf8))
        let second = try #require(fileMetadata(try await client.getMetadata(path: "/d/f.txt")))
        #expect(second.id == first.id && second.rev != first.rev && second.size == 7)
        #expect(second.contentHash == ContentHasher.hash(Array("second!".utf8)))
        #expect(try await client.download(path: "/d/f.txt", range: nil).data == Array("second!".utf8))
        let old = try await client.download(path: "rev:" + first.rev, range: nil)
        #expect(old.data == Array("first".utf8) && old.metadata.rev == first.rev && old.metadata.size == 5)
        #expect(
            try await client.download(path: "rev:" + first.rev, range: ByteRange(offset: 1, length: 2)).data
                == Array("ir".utf8))
        #expect(fileMetadata(try await client.getMetadata(path: "rev:" + first.rev))?.contentHash == first.contentHash)
        try await fake.delete("/d/f.txt")
        await #expect(throws: DropboxError.lookup(.notFound)) {
            try await client.download(path: "/d/f.txt", range: nil)
        }
        await #expect(throws: DropboxError.lookup(.notFound)) { try await client.download(path: second.id, range: nil) }
        #expect(try await client.download(path: "rev:" + second.rev, range: nil).data == Array("second!".utf8))
    }

    @Test(arguments: FakeKind.allCases)
    func contentHashSpansBlocks(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        let size = 4 * 1024 * 1024 + 3
        try await fake.addFile("/big.bin", size: size, seed: 7)
        let client = fake.client
        let listed = try #require(fileMetadata(try await listPages(client, ListFolderArg(path: "")).entries.first))
        let whole = try await client.download(path: "/big.bin", range: nil)
        #expect(whole.data.count == size && whole.metadata.size == UInt64(size))
        #expect(ContentHasher.hash(whole.data) == listed.contentHash)
        #expect(whole.metadata.contentHash == listed.contentHash)
        let edge = try await client.download(path: "/big.bin", range: ByteRange(offset: 4 * 1024 * 1024 - 2, length: 5))
        #expect(edge.data == Array(whole.data[(4 * 1024 * 1024 - 2)...]))
    }

    // MARK: Export-only documents

    @Test(arguments: FakeKind.allCases)
    func exportOnlyDocuments(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await fake.addExportOnly("/docs/Plan.paper", exportAs: "html")
        try await fake.addFile("/docs/notes.txt", content: Array("notes".utf8))
        let client = fake.client
        let doc = try #require(fileMetadata(try await client.getMetadata(path: "/docs/plan.paper")))
        #expect(!doc.isDownloadable && doc.exportAs == "html" && doc.contentHash == nil)
        let exported = try await client.export(path: "/docs/Plan.paper")
        #expect(exported.name == "Plan.html")
        #expect(!exported.data.isEmpty && exported.size == UInt64(exported.data.count))
        #expect(exported.rev == doc.rev)
        #expect(try await client.export(path: doc.id).data == exported.data)
        await #expect(throws: DropboxError.unsupportedFile) {
            try await client.download(path: "/docs/Plan.paper", range: nil)
        }
        await #expect(throws: DropboxError.lookup(.notFound)) { try await client.export(path: "/docs/none.paper") }
        do {
            _ = try await client.export(path: "/docs/notes.txt")
            Issue.record("a downloadable file was exported")
        } catch {
            guard case .routeError(let summary) = error, summary.hasPrefix("non_exportable/") else {
                Issue.record("\(error), not non_exportable")
                return
            }
        }

        // Hidden from listings and deltas that ask so.
        let shown = try await listPages(client, ListFolderArg(path: "/docs"))
        #expect(Set(shown.entries.map(\.name)) == ["Plan.paper", "notes.txt"])
        let hiding = ListFolderArg(path: "/docs", includeNonDownloadableFiles: false)
        let hidden = try await listPages(client, hiding)
        #expect(hidden.entries.map(\.name) == ["notes.txt"])
        try await fake.addExportOnly("/docs/Other.paper", exportAs: "html")
        try await fake.addFile("/docs/more.txt", content: [1])
        #expect(try await changePages(client, since: hidden.cursor).entries.map(\.name) == ["more.txt"])
        #expect(
            Set(try await changePages(client, since: shown.cursor).entries.map(\.name)) == ["Other.paper", "more.txt"])
    }

    // MARK: Thumbnails

    @Test(arguments: FakeKind.allCases)
    func thumbnailBatches(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        var raw: [UInt8] = []
        for _ in 0..<30 { raw += [0] + Array(repeating: 0x7F, count: 40 * 3) }
        let png = TestPNG.encode(width: 40, height: 30, raw: raw)
        try await fake.addFile("/p/a.png", content: png)
        try await fake.addFile("/p/B.JPG", size: 5000, seed: 3)
        try await fake.addFile("/p/empty.png", content: [])
        try await fake.addFile("/p/notes.txt", content: Array("notes".utf8))
        try await fake.addExportOnly("/p/Doc.paper", exportAs: "html")
        let client = fake.client
        let png128 = try #require(fileMetadata(try await client.getMetadata(path: "/p/a.png")))
        let results = try await client.getThumbnailBatch([
            ThumbnailArg(path: "/p/a.png"),
            ThumbnailArg(path: "/P/b.jpg", format: .png, size: .w32h32),
            ThumbnailArg(path: "rev:" + png128.rev),
            ThumbnailArg(path: png128.id, format: .jpeg),
            ThumbnailArg(path: "/p/a.png", format: .webp),
            ThumbnailArg(path: "/p/notes.txt"),
            ThumbnailArg(path: "/p/empty.png"),
            ThumbnailArg(path: "/p/Doc.paper"),
            ThumbnailArg(path: "/p"),
            ThumbnailArg(path: "/p/none.png"),
        ])
        try #require(results.count == 10)
        for index in 0..<3 {
            let image = try results[index].get()
            #expect(image.starts(with: TestPNG.signature), "entry \(index) is not a PNG")
        }
        #expect(try results[3].get().starts(with: [0xFF, 0xD8, 0xFF]), "a jpeg thumbnail is not a JPEG")
        let webp = try results[4].get()
        #expect(
            webp.starts(with: Array("RIFF".utf8)) && Array(webp[8..<12]) == Array("WEBP".utf8),
            "a webp thumbnail is not a WebP")
        #expect(results[5] == .failure(.unsupportedExtension))
        #expect(results[6] == .failure(.unsupportedImage))
        #expect(results[7] == .failure(.unsupportedExtension))
        #expect(results[8] == .failure(.path(.notFile)))
        #expect(results[9] == .failure(.path(.notFound)))
        #expect(try await client.getThumbnailBatch([]).isEmpty)
        await #expect(throws: DropboxError.self) {
            try await client.getThumbnailBatch(Array(repeating: ThumbnailArg(path: "/p/a.png"), count: 26))
        }
    }

    // MARK: Account

    @Test(arguments: FakeKind.allCases)
    func accountAndSpaceUsage(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let account = try await fake.client.getCurrentAccount()
        #expect(account.accountId.count == 40 && account.accountId.hasPrefix("dbid:"))
        #expect(account.rootInfo.tag == "user" && account.rootInfo.rootNamespaceId == account.rootInfo.homeNamespaceId)
        let usage = try await fake.client.getSpaceUsage()
        let used = try await fake.account().reduce(UInt64(0)) { $0 + ($1.size ?? 0) }
        #expect(usage.used == used)
    }
}

/// expectListingGivesAccount over the whole account, recording a thrown error as an issue.
func expectListingGivesAccountSafely(
    _ fake: any FakeUnderTest, _ context: String, sourceLocation: SourceLocation = #_sourceLocation
) async {
    do {
        try await expectListingGivesAccount(
            fake, scope: "", recursive: true, limit: 5, context, sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(context): \(error)", sourceLocation: sourceLocation)
    }
}
