// Shared folders not added, held to one contract in both fakes (ContractFakes.swift):
// sharing/list_folders paged at any limit (path_lower only for a folder the account added), a
// folder's namespace listed and read through a namespace-rooted client (paths from "", downloads
// by path and by rev:, ranges), kept apart from the account's own tree, and 422 no_permission
// for a namespace the account may not read, an unknown one or an unshared one.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

/// A fake that can share folders with the account.
protocol FolderSharingFake: FakeUnderTest {
    var sharedFolderRoutes: any SharedFolderRoutes { get }
    /// Shares a folder named `name` (added at `addedAt` when given) and returns its id.
    func shareFolder(_ name: String, addedAt: String?, readable: Bool) async throws -> String
    func addFile(inNamespace id: String, _ path: String, content: [UInt8]) async throws
    func unshareFolder(_ id: String) async throws
}

extension InMemoryFake: FolderSharingFake {
    var sharedFolderRoutes: any SharedFolderRoutes { dropbox }

    func shareFolder(_ name: String, addedAt: String?, readable: Bool) async throws -> String {
        dropbox.shareFolder(name, addedAt: addedAt, readable: readable).id
    }

    func addFile(inNamespace id: String, _ path: String, content: [UInt8]) async throws {
        guard let namespace = dropbox.sharedNamespace(id) else { throw CancellationError() }
        namespace.addFile(path, contents: content)
    }

    func unshareFolder(_ id: String) async throws {
        dropbox.unshareFolder(id)
    }
}

extension HTTPFake: FolderSharingFake {
    var sharedFolderRoutes: any SharedFolderRoutes { liveClient(server) }

    private struct SharedReply: Decodable {
        var sharedFolderId: String
        enum CodingKeys: String, CodingKey { case sharedFolderId = "shared_folder_id" }
    }

    func shareFolder(_ name: String, addedAt: String?, readable: Bool) async throws -> String {
        var json: [String: Any] = ["name": name, "readable": readable]
        if let addedAt { json["mounted_at"] = addedAt }
        let reply: SharedReply = try await server.control(.post, "shared_folders", json: json)
        return reply.sharedFolderId
    }

    func addFile(inNamespace id: String, _ path: String, content: [UInt8]) async throws {
        _ = try await server.controlRaw(
            .post, "files?namespace=\(id)", json: ["path": path, "content_b64": Data(content).base64EncodedString()])
    }

    func unshareFolder(_ id: String) async throws {
        _ = try await server.controlRaw(.post, "shared_folders/unshare", json: ["shared_folder_id": id])
    }
}

extension FakeKind {
    func makeFolderSharing() async throws -> any FolderSharingFake {
        guard let fake = try await make() as? any FolderSharingFake else { throw CancellationError() }
        return fake
    }
}

@Suite struct ContractSharedFolderTests {
    static func refusal(_ call: () async throws -> Void) async -> DropboxError? {
        await ContractSharedLinkTests.refusal(call)
    }

    @Test(arguments: FakeKind.allCases, [1, 2, 1000])
    func listFoldersPagesAtAnyLimit(kind: FakeKind, limit: Int) async throws {
        let fake = try await kind.makeFolderSharing()
        defer { fake.stop() }
        var ids: [String] = []
        for i in 0..<4 { ids.append(try await fake.shareFolder("Project \(i)", addedAt: nil, readable: true)) }
        ids.append(try await fake.shareFolder("Added", addedAt: "/Added", readable: true))
        let routes = fake.sharedFolderRoutes
        var page = try await routes.listSharedFolders(limit: limit)
        var all = page.entries
        var pages = 1
        while let cursor = page.cursor {
            #expect(page.entries.count == limit)
            page = try await routes.listSharedFoldersContinue(cursor: cursor)
            all += page.entries
            pages += 1
        }
        #expect(pages == (5 + limit - 1) / limit)
        #expect(all.map(\.sharedFolderId) == ids)
        #expect(all.map(\.name) == ["Project 0", "Project 1", "Project 2", "Project 3", "Added"])
        #expect(all.dropLast().allSatisfy { $0.pathLower == nil && !$0.isAdded })
        #expect(all.last?.pathLower == "/added")
        #expect(try await routes.listAllSharedFolders(limit: limit) == all)
        // The added folder is a folder of the account's own Dropbox.
        #expect(try await fake.account().contains { $0.pathLower == "/added" && $0.isFolder })
        let bad = await Self.refusal { _ = try await routes.listSharedFoldersContinue(cursor: "not a cursor") }
        guard case .routeError(let summary)? = bad else {
            Issue.record("an invalid cursor answered \(String(describing: bad))")
            return
        }
        #expect(summary.hasPrefix("invalid_cursor"))
    }

    @Test(arguments: FakeKind.allCases)
    func aNamespaceIsListedAndReadFromItsOwnRoot(kind: FakeKind) async throws {
        let fake = try await kind.makeFolderSharing()
        defer { fake.stop() }
        try await fake.addFile("/own.txt", content: Array("own".utf8))
        let id = try await fake.shareFolder("Photos", addedAt: nil, readable: true)
        let bytes = (0..<5000).map { UInt8($0 % 251) }
        try await fake.addFile(inNamespace: id, "/a.txt", content: Array("alpha".utf8))
        try await fake.addFile(inNamespace: id, "/sub/b.bin", content: bytes)
        let client = fake.sharedFolderRoutes.rooted(atNamespace: id)
        var entries: [Metadata] = []
        _ = try await client.listFolderAll(ListFolderArg(path: "", recursive: true, limit: 1)) { page in
            entries += page.entries
            return true
        }
        #expect(entries.compactMap(\.pathDisplay).sorted() == ["/a.txt", "/sub", "/sub/b.bin"])
        var top: [Metadata] = []
        _ = try await client.listFolderAll(ListFolderArg(path: "")) { page in
            top += page.entries
            return true
        }
        #expect(top.map(\.name).sorted() == ["a.txt", "sub"])
        let revs = entries.compactMap { entry -> String? in
            if case .file(let f) = entry { return f.rev }
            return nil
        }
        #expect(try await client.download(path: "/a.txt", range: nil).data == Array("alpha".utf8))
        guard case .file(let blob)? = entries.first(where: { $0.name == "b.bin" }) else {
            Issue.record("no b.bin")
            return
        }
        #expect(try await client.download(path: "rev:" + blob.rev, range: ByteRange(offset: 100, length: 50)).data
            == Array(bytes[100..<150]))
        guard case .file(let meta) = try await client.getMetadata(path: "/sub/b.bin") else {
            Issue.record("not a file")
            return
        }
        #expect(meta.rev == blob.rev && meta.contentHash == ContentHasher.hash(bytes))
        // Apart from the account's own tree: neither sees the other's entries, and revisions differ.
        let own = try await fake.account()
        #expect(own.map(\.pathLower) == ["/own.txt"])
        #expect(Set(own.compactMap(\.rev)).isDisjoint(with: revs))
        #expect(await Self.refusal { _ = try await client.getMetadata(path: "/own.txt") } == .lookup(.notFound))
    }

    @Test(arguments: FakeKind.allCases)
    func aNamespaceTheAccountMayNotReadAnswersNoPermission(kind: FakeKind) async throws {
        let fake = try await kind.makeFolderSharing()
        defer { fake.stop() }
        let locked = try await fake.shareFolder("Locked", addedAt: nil, readable: false)
        let open = try await fake.shareFolder("Open", addedAt: nil, readable: true)
        let routes = fake.sharedFolderRoutes
        for id in [locked, "4711"] {
            let refused = await Self.refusal {
                _ = try await routes.rooted(atNamespace: id).listFolder(ListFolderArg(path: ""))
            }
            #expect(refused == .pathRoot(tag: "no_permission"), "namespace \(id)")
        }
        #expect(try await routes.rooted(atNamespace: open).listFolder(ListFolderArg(path: "")).entries.isEmpty)
        try await fake.unshareFolder(open)
        let gone = await Self.refusal { _ = try await routes.rooted(atNamespace: open).listFolder(ListFolderArg(path: "")) }
        #expect(gone == .pathRoot(tag: "no_permission"))
        #expect(try await routes.listAllSharedFolders().map(\.sharedFolderId) == [locked])
    }
}
