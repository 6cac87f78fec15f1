// Shared links held to one contract in both fakes (ContractFakes.swift): listings through a link
// (non-recursive, paged, entries without paths; a link to a file lists as that file), ranged
// get_shared_link_file, get_shared_link_metadata, and the SharedLinkError refusals (password,
// expiry, unsupported kind), each decoded by the live client as the in-memory fake throws it.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

/// A fake that can make shared links and read them.
protocol LinkSharingFake: FakeUnderTest {
    var linkRoutes: any SharedLinkRoutes { get }
    func share(_ path: String, password: String?, expired: Bool, unsupported: Bool) async throws -> String
}

extension InMemoryFake: LinkSharingFake {
    var linkRoutes: any SharedLinkRoutes { dropbox }

    func share(_ path: String, password: String?, expired: Bool, unsupported: Bool) async throws -> String {
        dropbox.share(path, password: password, expired: expired, unsupported: unsupported)
    }
}

extension HTTPFake: LinkSharingFake {
    var linkRoutes: any SharedLinkRoutes { liveClient(server) }

    private struct LinkReply: Decodable { var url: String }

    func share(_ path: String, password: String?, expired: Bool, unsupported: Bool) async throws -> String {
        var json: [String: Any] = ["path": path, "unsupported": unsupported]
        if let password { json["password"] = password }
        if expired { json["expires_in"] = -1 }
        let reply: LinkReply = try await server.control(.post, "shared_links", json: json)
        return reply.url
    }
}

extension FakeKind {
    func makeSharing() async throws -> any LinkSharingFake {
        guard let fake = try await make() as? any LinkSharingFake else { throw CancellationError() }
        return fake
    }
}

@Suite struct ContractSharedLinkTests {
    /// Every page of a link's listing of `path`.
    static func listLink(
        _ routes: any SharedLinkRoutes, _ link: SharedLinkArg, _ path: String, limit: UInt32
    ) async throws -> (entries: [Metadata], pages: Int) {
        var page = try await routes.listFolder(ListFolderArg(path: path, limit: limit, sharedLink: link))
        var entries = page.entries
        var pages = 1
        while page.hasMore {
            page = try await routes.listFolderContinue(cursor: page.cursor)
            entries += page.entries
            pages += 1
        }
        return (entries, pages)
    }

    static func refusal(_ call: () async throws -> Void) async -> DropboxError? {
        do {
            try await call()
            return nil
        } catch let error as DropboxError {
            return error
        } catch {
            return .malformedResponse("\(error)")
        }
    }

    @Test(arguments: FakeKind.allCases, [UInt32(1), 2000])
    func aFolderLinkListsEachFolderWithoutPaths(kind: FakeKind, limit: UInt32) async throws {
        let fake = try await kind.makeSharing()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let account = try await fake.account()
        let link = SharedLinkArg(url: try await fake.share("/r", password: nil, expired: false, unsupported: false))
        for (path, folder) in [("", "/r"), ("/a", "/r/a"), ("/MANY", "/r/many"), ("/empty", "/r/empty")] {
            let context = "\(kind) \(path) limit \(limit)"
            let (entries, pages) = try await Self.listLink(fake.linkRoutes, link, path, limit: limit)
            let children = account.filter { $0.pathLower.hasPrefix(folder + "/") && !$0.pathLower.dropFirst(folder.count + 1).contains("/") }
            #expect(Set(entries.map(\.name)) == Set(children.map(\.name)), "\(context)")
            #expect(entries.count == children.count, "\(context)")
            #expect(entries.allSatisfy { $0.pathLower == nil && $0.pathDisplay == nil }, "\(context): a path in a link's entry")
            if limit == 1 { #expect(pages >= children.count, "\(context)") }
            for child in children {
                let entry = entries.first { $0.name == child.name }
                if let file = fileMetadata(entry) {
                    #expect(file.id == child.id && file.rev == child.rev && file.size == child.size, "\(context)")
                    #expect(file.contentHash == child.contentHash, "\(context)")
                } else {
                    #expect(folderMetadata(entry)?.id == child.id, "\(context) \(child.name)")
                }
            }
        }
        // Never recursive, and a path not in the link is not found.
        let recursive = await Self.refusal {
            _ = try await fake.linkRoutes.listFolder(ListFolderArg(path: "", recursive: true, sharedLink: link))
        }
        guard case .badRequest = recursive else { Issue.record("\(kind): recursive gave \(String(describing: recursive))"); return }
        #expect(await Self.refusal { _ = try await Self.listLink(fake.linkRoutes, link, "/nope", limit: limit) } == .lookup(.notFound))
    }

    @Test(arguments: FakeKind.allCases)
    func filesOfALinkAreReadByRange(kind: FakeKind) async throws {
        let fake = try await kind.makeSharing()
        defer { fake.stop() }
        try await buildContractTree(fake)
        let account = try await fake.account()
        let link = SharedLinkArg(url: try await fake.share("/r", password: nil, expired: false, unsupported: false))
        let routes = fake.linkRoutes
        let whole = try await routes.getSharedLinkFile(link, path: "/a/sub/deeper/leaf.txt", range: nil, freshConnection: false)
        #expect(whole.data == Array("leaf".utf8))
        #expect(whole.metadata.rev == account.first { $0.pathLower == "/r/a/sub/deeper/leaf.txt" }?.rev)
        #expect(whole.metadata.pathLower == nil && whole.metadata.name == "leaf.txt")
        let part = try await routes.getSharedLinkFile(
            link, path: "/many/file 13.txt", range: ByteRange(offset: 2, length: 3), freshConnection: false)
        #expect(part.data == Array("le ".utf8))
        let metadata = try await routes.getSharedLinkMetadata(link, path: nil)
        #expect(metadata.kind == .folder && metadata.name == "r")
        #expect(await Self.refusal { _ = try await routes.getSharedLinkFile(link, path: "/a", range: nil, freshConnection: false) }
            == .sharedLink(.isDirectory))
        #expect(await Self.refusal { _ = try await routes.getSharedLinkFile(link, path: nil, range: nil, freshConnection: false) }
            == .sharedLink(.isDirectory))
        #expect(await Self.refusal { _ = try await routes.getSharedLinkFile(link, path: "/none", range: nil, freshConnection: false) }
            == .sharedLink(.notFound))

        // A link to a file lists as that file and reads without a path.
        let single = SharedLinkArg(url: try await fake.share("/r/b/y.txt", password: nil, expired: false, unsupported: false))
        let listed = try await Self.listLink(routes, single, "", limit: 2000).entries
        #expect(listed.map(\.name) == ["y.txt"])
        #expect(try await routes.getSharedLinkFile(single, path: nil, range: nil, freshConnection: false).data == Array("yyy".utf8))
        guard case .file(let file) = try await routes.getSharedLinkMetadata(single, path: nil).kind else {
            Issue.record("\(kind): a file link's metadata is not a file's")
            return
        }
        #expect(file.size == 3 && file.rev == fileMetadata(listed.first)?.rev)

        // The link follows its folder when it moves, and dies with it.
        try await fake.move(from: "/r", to: "/moved")
        #expect(try await Self.listLink(routes, link, "/b", limit: 2000).entries.count == 2)
        try await fake.delete("/moved")
        #expect(await Self.refusal { _ = try await routes.getSharedLinkMetadata(link, path: nil) } == .sharedLink(.notFound))
    }

    @Test(arguments: FakeKind.allCases)
    func thumbnailsOfFilesInALink(kind: FakeKind) async throws {
        let fake = try await kind.makeSharing()
        defer { fake.stop() }
        try await fake.addFile("/p/pic.jpg", size: 300_000, seed: 4)
        try await fake.addFile("/p/notes.txt", content: Array("n".utf8))
        let routes = fake.linkRoutes
        let link = SharedLinkArg(url: try await fake.share("/p", password: "pw", expired: false, unsupported: false), password: "pw")
        let image = try await routes.getSharedLinkThumbnail(link, ThumbnailArg(path: "/pic.jpg", format: .png))
        #expect((try? image.get())?.prefix(8) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], "\(kind)")
        #expect(try await routes.getSharedLinkThumbnail(link, ThumbnailArg(path: "/notes.txt")) == .failure(.unsupportedExtension))
        #expect(try await routes.getSharedLinkThumbnail(link, ThumbnailArg(path: "/gone.jpg")) == .failure(.path(.notFound)))
        let wrong = SharedLinkArg(url: link.url, password: "no")
        #expect(await Self.refusal { _ = try await routes.getSharedLinkThumbnail(wrong, ThumbnailArg(path: "/pic.jpg")) }
            == .sharedLink(.accessDenied))
    }

    @Test(arguments: FakeKind.allCases)
    func refusalsAreNamed(kind: FakeKind) async throws {
        let fake = try await kind.makeSharing()
        defer { fake.stop() }
        try await fake.addFile("/v/secret.txt", content: Array("s".utf8))
        let routes = fake.linkRoutes
        let url = try await fake.share("/v", password: "pw", expired: false, unsupported: false)
        #expect(try await routes.getSharedLinkMetadata(SharedLinkArg(url: url, password: "pw"), path: nil).name == "v")
        for password in [nil, "wrong"] {
            let link = SharedLinkArg(url: url, password: password)
            #expect(await Self.refusal { _ = try await routes.getSharedLinkMetadata(link, path: nil) } == .sharedLink(.accessDenied))
            #expect(await Self.refusal { _ = try await Self.listLink(routes, link, "", limit: 10) } == .sharedLink(.accessDenied))
            #expect(await Self.refusal {
                _ = try await routes.getSharedLinkFile(link, path: "/secret.txt", range: nil, freshConnection: false)
            } == .sharedLink(.accessDenied))
        }
        let expired = SharedLinkArg(url: try await fake.share("/v", password: nil, expired: true, unsupported: false))
        #expect(await Self.refusal { _ = try await routes.getSharedLinkMetadata(expired, path: nil) } == .sharedLink(.notFound))
        let odd = SharedLinkArg(url: try await fake.share("/v", password: nil, expired: false, unsupported: true))
        #expect(await Self.refusal { _ = try await routes.getSharedLinkMetadata(odd, path: nil) } == .sharedLink(.unsupportedLinkType))
        let unknown = SharedLinkArg(url: "https://www.dropbox.com/scl/fo/unknown/x?rlkey=none")
        #expect(await Self.refusal { _ = try await routes.getSharedLinkMetadata(unknown, path: nil) } == .sharedLink(.notFound))
    }
}
