// The client against the fake server over real HTTP: listing in pages, recursive order, the
// changes `continue` reports after adds, edits, deletes and moves, metadata, cursor reset,
// longpoll, and the account routes.

import DropboxAPI
import DropboxTestSupport
import Testing

@Suite struct LiveListingTests {
    @Test func pagesThroughAFolder() async throws {
        let fake = try await FakeDropboxServer.start()
        for i in 0..<23 {
            try await fake.addFile("/paged/file \(i).txt", content: Array("file \(i)".utf8))
        }
        let client = liveClient(fake)
        let (entries, _, pages) = try await listAll(client, ListFolderArg(path: "/paged", limit: 4))
        #expect(pages >= 6)
        #expect(Set(entries.map(\.name)) == Set((0..<23).map { "file \($0).txt" }))
        #expect(entries.count == 23)
    }

    @Test func recursiveListingPutsParentsFirst() async throws {
        let fake = try await FakeDropboxServer.start()
        for path in ["/r/b/y.txt", "/r/a/x.txt", "/r/a/sub/z.txt", "/r/top.txt", "/other/o.txt"] {
            try await fake.addFile(path, content: [1])
        }
        let client = liveClient(fake)
        let (entries, _, _) = try await listAll(client, ListFolderArg(path: "/r", recursive: true, limit: 2))
        let paths = entries.compactMap(\.pathLower)
        #expect(paths.first == "/r")
        #expect(
            Set(paths) == [
                "/r", "/r/a", "/r/b", "/r/a/sub", "/r/a/x.txt", "/r/a/sub/z.txt", "/r/b/y.txt", "/r/top.txt",
            ])
        for (index, path) in paths.enumerated() where path != "/r" {
            let parent = String(path[..<path.lastIndex(of: "/")!])
            #expect(paths[..<index].contains(parent), "\(path) came before its folder")
        }
        let tree = try await fake.tree().filter { $0.pathLower.hasPrefix("/r") }
        #expect(Set(tree.map(\.pathLower)) == Set(paths))
    }

    @Test func continueReportsChanges() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFile("/w/keep.txt", content: Array("v1".utf8))
        try await fake.addFile("/w/gone.txt", content: [1])
        try await fake.addFile("/w/dir/inner.txt", content: [2])
        let client = liveClient(fake)
        let (_, cursor, _) = try await listAll(client, ListFolderArg(path: "/w", recursive: true))
        let empty = try await changes(client, since: cursor)
        #expect(empty.entries.isEmpty)

        let old = try await client.getMetadata(path: "/w/keep.txt")
        try await fake.addFile("/w/new.txt", content: Array("new".utf8))
        try await fake.addFile("/w/keep.txt", content: Array("v2".utf8))
        try await fake.delete("/w/gone.txt")
        try await fake.move(from: "/w/dir", to: "/w/moved")
        let delta = try await changes(client, since: empty.cursor)
        let seen = names(delta.entries)
        #expect(seen.contains("file:/w/new.txt"))
        #expect(seen.contains("deleted:/w/gone.txt"))
        #expect(seen.contains("deleted:/w/dir"))
        #expect(seen.contains("folder:/w/moved"))
        #expect(seen.contains("file:/w/moved/inner.txt"))
        guard case .file(let before) = old,
            case .file(let after) = delta.entries.first(where: { $0.pathLower == "/w/keep.txt" })
        else {
            Issue.record("the modified file is missing from the delta: \(seen)")
            return
        }
        #expect(after.rev != before.rev)
        #expect(after.size == 2)
        #expect(try await changes(client, since: delta.cursor).entries.isEmpty)
    }

    @Test func getMetadataAndLookupErrors() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFile("/Docs/Read Me.txt", content: Array("hello".utf8))
        let client = liveClient(fake)
        guard case .file(let file) = try await client.getMetadata(path: "/docs/read me.txt") else {
            Issue.record("not a file")
            return
        }
        #expect(file.name == "Read Me.txt" && file.size == 5 && file.pathDisplay == "/Docs/Read Me.txt")
        #expect(file.contentHash == ContentHasher.hash(Array("hello".utf8)))
        guard case .folder(let folder) = try await client.getMetadata(path: "/Docs") else {
            Issue.record("not a folder")
            return
        }
        #expect(try await client.getMetadata(path: folder.id).name == "Docs")
        await #expect(throws: DropboxError.lookup(.notFound)) { try await client.getMetadata(path: "/nope") }
        await #expect(throws: DropboxError.lookup(.notFound)) {
            try await client.listFolder(ListFolderArg(path: "/nope"))
        }
        await #expect(throws: DropboxError.lookup(.notFolder)) {
            try await client.listFolder(ListFolderArg(path: "/Docs/Read Me.txt"))
        }
        await #expect {
            _ = try await client.getMetadata(path: "")
        } throws: { error in
            guard case .badRequest(let message) = error as? DropboxError else { return false }
            return message.contains("files/get_metadata")
        }
    }

    @Test func cursorReset() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFile("/a.txt", content: [1])
        let client = liveClient(fake)
        let cursor = try await client.listFolderGetLatestCursor(ListFolderArg(path: ""))
        try await fake.resetCursors()
        await #expect(throws: DropboxError.cursorReset) { try await client.listFolderContinue(cursor: cursor) }
        await #expect(throws: DropboxError.cursorReset) {
            try await client.listFolderLongpoll(cursor: cursor, timeoutSeconds: 30)
        }
    }

    @Test func longpollSeesAChange() async throws {
        let fake = try await FakeDropboxServer.start()
        let client = liveClient(fake)
        let cursor = try await client.listFolderGetLatestCursor(ListFolderArg(path: "", recursive: true))
        let quiet = try await client.listFolderLongpoll(cursor: cursor, timeoutSeconds: 1)
        #expect(quiet.changes == false)
        let poll = Task { try await client.listFolderLongpoll(cursor: cursor, timeoutSeconds: 120) }
        try await Task.sleep(for: .milliseconds(300))
        let start = ContinuousClock.now
        try await fake.addFile("/changed.txt", content: [1])
        let result = try await poll.value
        #expect(result.changes)
        #expect(ContinuousClock.now - start < .seconds(60), "the change, not the 120 s timeout, ended the poll")
        let log = String(decoding: try await fake.requestLog(), as: UTF8.self)
        #expect(log.contains(#""route": "files/list_folder/longpoll""#))
        #expect(!log.contains(#""route": "files/list_folder/longpoll", "method": "POST", "status": 400"#))
    }

    @Test func accountAndSpaceUsage() async throws {
        let fake = try await FakeDropboxServer.start(arguments: ["--sample-account"])
        let client = liveClient(fake)
        let account = try await client.getCurrentAccount()
        #expect(account.accountId.count == 40)
        #expect(account.rootInfo.tag == "user")
        let usage = try await client.getSpaceUsage()
        #expect(usage.used > 0)
        #expect(usage.effectiveLimit == 2_199_023_255_552)

        let team = try await FakeDropboxServer.start(arguments: ["--team"])
        let teamClient = liveClient(team)
        let teamAccount = try await teamClient.getCurrentAccount()
        #expect(teamAccount.rootInfo.tag == "team")
        #expect(teamAccount.rootInfo.rootNamespaceId != teamAccount.rootInfo.homeNamespaceId)
        guard case .team = try await teamClient.getSpaceUsage().allocation else {
            Issue.record("a team account without team allocation")
            return
        }
    }
}

/// listFolderAll on the live client: the next continue leaves before a page is decoded, pages come
/// in order and complete, faults in the middle are retried, and a misread head is corrected.
@Suite struct LiveWholeListingTests {
    @Test func givesTheSamePagesAsCallingPageByPage() async throws {
        let fake = try await FakeDropboxServer.start()
        for i in 0..<37 { try await fake.addFile("/w/d\(i % 5)/f\(i).txt", content: [UInt8(i)]) }
        let client = liveClient(fake)
        let arg = ListFolderArg(path: "", recursive: true, limit: 3)
        let expected = try await listAll(client, arg)
        var pages: [ListFolderResult] = []
        let cursor = try await client.listFolderAll(arg) { page in
            pages.append(page)
            return true
        }
        #expect(pages.flatMap(\.entries) == expected.entries)
        #expect(pages.count == expected.pages)
        #expect(pages.dropLast().allSatisfy(\.hasMore) && pages.last?.hasMore == false)
        #expect(cursor == expected.cursor)
        #expect(try await changes(client, since: try #require(cursor)).entries.isEmpty)
    }

    @Test func stopsWhenAskedAndReturnsNil() async throws {
        let fake = try await FakeDropboxServer.start()
        for i in 0..<10 { try await fake.addFile("/s/f\(i)", content: [1]) }
        let client = liveClient(fake)
        var seen = 0
        let cursor = try await client.listFolderAll(ListFolderArg(path: "/s", limit: 2)) { _ in
            seen += 1
            return seen < 2
        }
        #expect(cursor == nil)
        #expect(seen == 2)
    }

    @Test(arguments: [FakeFault.Kind.internalError, .truncate, .rateLimitJSON])
    func aFaultInTheMiddleIsRetried(kind: FakeFault.Kind) async throws {
        let fake = try await FakeDropboxServer.start()
        for i in 0..<20 { try await fake.addFile("/t/f\(i)", content: [1]) }
        let client = liveClient(fake)
        let arg = ListFolderArg(path: "/t", limit: 3)
        let expected = try await listAll(client, arg).entries
        try await fake.addFault(
            FakeFault(route: "files/list_folder/continue", kind: kind, after: 2, retryAfter: 0.05, truncateAt: 40))
        var entries: [Metadata] = []
        _ = try await client.listFolderAll(arg) { page in
            entries += page.entries
            return true
        }
        #expect(entries == expected)
    }

    /// A complete reply that is not JSON is not retried (as for single calls): it surfaces.
    @Test func aMalformedPageInTheMiddleSurfaces() async throws {
        let fake = try await FakeDropboxServer.start()
        for i in 0..<20 { try await fake.addFile("/t/f\(i)", content: [1]) }
        let client = liveClient(fake)
        try await fake.addFault(FakeFault(route: "files/list_folder/continue", kind: .malformedJSON, after: 2))
        var pages = 0
        await #expect(throws: DropboxError.self) {
            _ = try await client.listFolderAll(ListFolderArg(path: "/t", limit: 3)) { _ in
                pages += 1
                return true
            }
        }
        #expect(pages == 3)
    }

    /// A reply whose raw cursor differs from its decoded one (a look-alike the scan could only
    /// misread if it were wrong): the listing follows the decoded cursor.
    @Test func followsTheDecodedCursorWhenTheHeadDisagrees() async throws {
        let transport = ScriptedTransport { request, _ throws(DropboxError) in
            let body = String(decoding: request.body, as: UTF8.self)
            if request.url.hasSuffix("/files/list_folder") {
                // JSON lets a key be escaped: the decoder reads the first "cursor" (Foundation
                // keeps the first of duplicate keys), the scan only the unescaped second one.
                return .json(#"{"entries":[],"cur\u0073or":"real","cursor":"decoy","has_more":true}"#)
            }
            if body.contains("\"real\"") {
                return .json(#"{"entries":[],"cursor":"end","has_more":false}"#)
            }
            return .json(#"{"entries":[],"cursor":"wrong","has_more":false}"#)
        }
        let client = makeClient(transport)
        let cursor = try await client.listFolderAll(ListFolderArg(path: "")) { _ in true }
        #expect(cursor == "end")
        let asked = transport.requests.map { String(decoding: $0.body, as: UTF8.self) }
        #expect(asked.contains { $0.contains("\"real\"") })
    }

    /// A reply whose head cannot be read is decoded whole, and its cursor is followed.
    @Test func decodesARepliesWholeWhenItsHeadIsUnreadable() async throws {
        let transport = ScriptedTransport { request, _ throws(DropboxError) in
            if request.url.hasSuffix("/files/list_folder") {
                return .json(#"{"entries":[],"cur\u0073or":"escaped","has_more":true}"#)
            }
            let body = String(decoding: request.body, as: UTF8.self)
            return .json(body.contains("\"escaped\"") ? #"{"entries":[],"cursor":"end","has_more":false}"# : "{}")
        }
        let cursor = try await makeClient(transport).listFolderAll(ListFolderArg(path: "")) { _ in true }
        #expect(cursor == "end")
        #expect(transport.requests.count == 2)
    }
}
