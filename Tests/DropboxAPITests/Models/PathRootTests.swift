// Dropbox-API-Path-Root: a client made for a team space sends the team's root namespace on every
// RPC and download (listings from the whole-listing path too), never on longpolls, and a default
// client sends nothing. The mount's choice of root comes from the account's root_info.

import Foundation
import Testing

@testable import DropboxAPI

@Suite struct PathRootTests {
    static let listing = HTTPResponse.json(#"{"entries":[],"cursor":"c","has_more":false}"#)

    static func replies() -> ScriptedTransport {
        ScriptedTransport { request, _ throws(DropboxError) in
            if request.url.hasSuffix("/longpoll") { return .json(#"{"changes":false}"#) }
            if request.url.hasSuffix("/download") { return downloadReply(body: Array(repeating: 7, count: 100)) }
            if request.url.hasSuffix("/get_space_usage") {
                return .json(#"{"used":1,"allocation":{".tag":"individual","allocated":2}}"#)
            }
            return listing
        }
    }

    static func exercise(_ client: DropboxHTTPClient) async throws {
        _ = try await client.listFolder(ListFolderArg(path: ""))
        _ = try await client.listFolderAll(ListFolderArg(path: "", recursive: true)) { _ in true }
        _ = try await client.listFolderContinue(cursor: "c")
        _ = try await client.listFolderGetLatestCursor(ListFolderArg(path: ""))
        _ = try await client.download(path: "/a.txt", range: nil)
        _ = try await client.getSpaceUsage()
        _ = try await client.listFolderLongpoll(cursor: "c", timeoutSeconds: 30)
    }

    @Test func aTeamSpaceClientSendsTheRootOnEveryRequestButLongpolls() async throws {
        let transport = Self.replies()
        let client = makeClient(transport).with(pathRoot: .root(namespaceId: "5647382910"))
        try await Self.exercise(client)
        let requests = transport.requests
        #expect(requests.count == 7)
        for request in requests {
            let header = request.headers["Dropbox-API-Path-Root"]
            if request.url.hasSuffix("/longpoll") {
                #expect(header == nil)
                continue
            }
            let value = try #require(header, "\(request.url)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(value.utf8)) as? [String: String])
            #expect(json == [".tag": "root", "root": "5647382910"], "\(request.url)")
        }
    }

    @Test func aDefaultClientSendsNoPathRoot() async throws {
        let transport = Self.replies()
        try await Self.exercise(makeClient(transport))
        #expect(transport.requests.count == 7)
        #expect(transport.requests.allSatisfy { $0.headers["Dropbox-API-Path-Root"] == nil })
    }

    @Test func theRootFollowsTheAccount() {
        let team = RootInfo(tag: "team", rootNamespaceId: "5647382910", homeNamespaceId: "1928374650", homePath: "/F")
        #expect(PathRoot.forAccount(team, homeOnly: false) == .root(namespaceId: "5647382910"))
        #expect(PathRoot.forAccount(team, homeOnly: true) == .home)
        let user = RootInfo(tag: "user", rootNamespaceId: "1928374650", homeNamespaceId: "1928374650")
        #expect(PathRoot.forAccount(user, homeOnly: false) == .home)
        // A team account without a team space (root == home) has nothing more to show.
        let oldTeam = RootInfo(tag: "team", rootNamespaceId: "42", homeNamespaceId: "42")
        #expect(PathRoot.forAccount(oldTeam, homeOnly: false) == .home)
    }

    @Test func anInvalidRootIsATypedError() async {
        let transport = ScriptedTransport(replies: [
            .json(
                #"{"error_summary":"invalid_root/..","error":{".tag":"invalid_root","invalid_root":{".tag":"user","root_namespace_id":"1","home_namespace_id":"1"}}}"#,
                status: 422)
        ])
        await #expect(throws: DropboxError.pathRoot(tag: "invalid_root")) {
            _ = try await makeClient(transport).with(pathRoot: .root(namespaceId: "9")).listFolder(ListFolderArg(path: ""))
        }
    }
}
