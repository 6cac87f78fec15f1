// What DropboxHTTPClient puts on the wire, checked against a scripted transport: the RPC,
// content-download and notify styles (docs/DROPBOX-API.md, "Hosts and request styles"), endpoint
// URLs, and reply decoding.

import Foundation
import Testing

@testable import DropboxAPI

func makeClient(
    _ transport: ScriptedTransport, token: String = "tok", tokens: (any AccessTokenProvider)? = nil,
    endpoints: DropboxEndpoints = DropboxEndpoints(
        api: "http://api.test", content: "http://content.test", notify: "http://notify.test", oauth: "http://www.test")
) -> DropboxHTTPClient {
    DropboxHTTPClient(
        endpoints: endpoints, tokens: tokens ?? StaticTokenProvider(token: token), transport: transport,
        pacer: Pacer(sleeper: ManualSleeper(), random: { 0 }))
}

let fileResult =
    #"{"name":"a.txt","id":"id:a","path_lower":"/a.txt","path_display":"/a.txt","client_modified":"2020-01-01T00:00:00Z","server_modified":"2020-01-01T00:00:00Z","rev":"0123456789","size":100}"#

func downloadReply(status: Int = 200, body: [UInt8], result: String = fileResult, headers: [(String, String)] = [])
    -> HTTPResponse
{
    var all = HTTPHeaders()
    all.add("Content-Type", "application/octet-stream")
    all.add("Dropbox-API-Result", result)
    for (name, value) in headers { all.add(name, value) }
    return HTTPResponse(status: status, headers: all, body: body)
}

private func jsonObject(_ bytes: [UInt8]) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
}

@Suite struct HTTPClientRequestTests {
    @Test func rpcListFolder() async throws {
        let transport = ScriptedTransport(replies: [.json(#"{"entries":[],"cursor":"c1","has_more":false}"#)])
        let result = try await makeClient(transport).listFolder(ListFolderArg(path: "/Docs", recursive: true, limit: 5))
        #expect(result.cursor == "c1")
        let request = try #require(transport.requests.first)
        #expect(request.method == .post)
        #expect(request.url == "http://api.test/2/files/list_folder")
        #expect(request.headers["authorization"] == "Bearer tok")
        #expect(request.headers["Content-Type"] == "application/json")
        let body = try jsonObject(request.body)
        #expect(body["path"] as? String == "/Docs")
        #expect(body["recursive"] as? Bool == true)
        #expect(body["limit"] as? Int == 5)
        #expect(body["include_deleted"] as? Bool == false)
        #expect(body["include_mounted_folders"] as? Bool == true)
        #expect(body["include_non_downloadable_files"] as? Bool == true)
        // Stall and low-speed limits, and the RPC deadline (ServerLimits, docs/SEMANTICS.md "Bounds").
        #expect(request.timeouts.stall != nil && request.timeouts.lowSpeed != nil)
        #expect(request.timeouts.total == .seconds(120))
        #expect(request.timeouts.answer == .seconds(10), "a silent host is unreachable after 10 s")
    }

    @Test func rpcContinueCursorMetadataAndLatestCursor() async throws {
        let transport = ScriptedTransport { request, _ throws(DropboxError) in
            switch request.url {
            case "http://api.test/2/files/list_folder/continue":
                return .json(#"{"entries":[],"cursor":"c2","has_more":false}"#)
            case "http://api.test/2/files/list_folder/get_latest_cursor":
                return .json(#"{"cursor":"latest"}"#)
            default:
                return .json(
                    #"{".tag":"folder","name":"Docs","id":"id:d","path_lower":"/docs","path_display":"/Docs"}"#)
            }
        }
        let client = makeClient(transport)
        #expect(try await client.listFolderContinue(cursor: "c1").cursor == "c2")
        #expect(try await client.listFolderGetLatestCursor(ListFolderArg(path: "")) == "latest")
        #expect(try await client.getMetadata(path: "/docs").name == "Docs")
        let bodies = try transport.requests.map { try jsonObject($0.body) }
        #expect(bodies[0]["cursor"] as? String == "c1")
        #expect(bodies[1]["path"] as? String == "")
        #expect(transport.requests[2].url == "http://api.test/2/files/get_metadata")
        #expect(bodies[2]["path"] as? String == "/docs")
    }

    @Test func noArgumentRoutesSendNull() async throws {
        let transport = ScriptedTransport { request, _ throws(DropboxError) in
            switch request.url {
            case "http://api.test/2/users/get_space_usage":
                return .json(#"{"used":1,"allocation":{".tag":"individual","allocated":2}}"#)
            case "http://api.test/2/auth/token/revoke":
                return .json("null")
            default:
                return .json(
                    #"{"account_id":"dbid:x","name":{"display_name":"X"},"email":"x@y","account_type":{".tag":"pro"},"root_info":{".tag":"user","root_namespace_id":"1","home_namespace_id":"1"}}"#
                )
            }
        }
        let client = makeClient(transport)
        #expect(try await client.getCurrentAccount().accountType == "pro")
        #expect(try await client.getSpaceUsage().used == 1)
        try await client.revokeToken()
        #expect(
            transport.requests.map(\.url) == [
                "http://api.test/2/users/get_current_account", "http://api.test/2/users/get_space_usage",
                "http://api.test/2/auth/token/revoke",
            ])
        for request in transport.requests {
            #expect(request.body == Array("null".utf8))
            #expect(request.headers["Content-Type"] == "application/json")
            #expect(request.headers["Authorization"] == "Bearer tok")
        }
    }

    @Test func downloadStyle() async throws {
        let transport = ScriptedTransport(replies: [downloadReply(body: Array(repeating: 7, count: 100))])
        let result = try await makeClient(transport).download(path: "/Fotos/Ünï 🍺.txt", range: nil)
        #expect(result.data.count == 100)
        #expect(result.metadata.rev == "0123456789")
        let request = try #require(transport.requests.first)
        #expect(request.url == "http://content.test/2/files/download")
        #expect(request.method == .post)
        #expect(request.body.isEmpty)
        #expect(request.headers["Content-Type"] == "application/octet-stream")
        #expect(request.headers["Authorization"] == "Bearer tok")
        #expect(request.headers["Dropbox-API-Arg"] == #"{"path":"/Fotos/\u00dcn\u00ef \ud83c\udf7a.txt"}"#)
        #expect(request.headers["Range"] == nil)
    }

    @Test func rangedDownloadWith206() async throws {
        let bytes = (0..<10).map { UInt8($0) }
        let transport = ScriptedTransport(replies: [
            downloadReply(status: 206, body: bytes, headers: [("Content-Range", "bytes 20-29/100")])
        ])
        let result = try await makeClient(transport).download(
            path: "rev:0123456789", range: ByteRange(offset: 20, length: 10))
        #expect(result.data == bytes)
        #expect(transport.requests[0].headers["Range"] == "bytes=20-29")
    }

    @Test func rangedDownloadAtTheEnd() async throws {
        let transport = ScriptedTransport(replies: [
            downloadReply(
                status: 206, body: Array(repeating: 1, count: 10), headers: [("Content-Range", "bytes 90-99/100")])
        ])
        let result = try await makeClient(transport).download(path: "/a.txt", range: ByteRange(offset: 90, length: 50))
        #expect(result.data.count == 10)
    }

    @Test(arguments: [
        ("bytes 21-30/100", 10),  // wrong start
        ("bytes 20-29/100", 9),  // body shorter than the range it claims
        ("bytes 20-24/100", 5),  // short, but not at the end of the file
        ("garbage", 10),
        ("bytes 20-18446744073709551615/*", 10),  // the widest range: its length does not fit in 64 bits
        ("bytes 20-29/100", 0),  // an empty 206
        ("bytes +20-29/100", 10),  // digits only (UInt64("+20") would take it)
    ])
    func rangedDownloadRejectsMismatches(contentRange: String, count: Int) async {
        let transport = ScriptedTransport(replies: [
            downloadReply(
                status: 206, body: Array(repeating: 0, count: count), headers: [("Content-Range", contentRange)])
        ])
        await #expect {
            _ = try await makeClient(transport).download(path: "/a.txt", range: ByteRange(offset: 20, length: 10))
        } throws: { error in
            if case .malformedResponse = error as? DropboxError { return true }
            return false
        }
    }

    @Test func rangedRequestAnsweredWithWholeFileIsSliced() async throws {
        let whole = (0..<100).map { UInt8($0) }
        let transport = ScriptedTransport(replies: [downloadReply(body: whole)])
        let client = makeClient(transport)
        #expect(
            try await client.download(path: "/a.txt", range: ByteRange(offset: 10, length: 5)).data == [
                10, 11, 12, 13, 14,
            ])
        #expect(
            try await client.download(path: "/a.txt", range: ByteRange(offset: 95, length: 50)).data == Array(95..<100))
        await #expect(throws: DropboxError.rangeNotSatisfiable) {
            try await client.download(path: "/a.txt", range: ByteRange(offset: 100, length: 1))
        }
    }

    @Test func shortWholeBodyIsRetried() async throws {
        let transport = ScriptedTransport(replies: [
            downloadReply(body: Array(repeating: 1, count: 60)), downloadReply(body: Array(repeating: 1, count: 100)),
        ])
        let result = try await makeClient(transport).download(path: "/a.txt", range: nil)
        #expect(result.data.count == 100)
        #expect(transport.requests.count == 2)
    }

    @Test func downloadWithoutResultHeaderIsMalformed() async {
        let transport = ScriptedTransport(replies: [HTTPResponse(status: 200, body: [1, 2, 3])])
        await #expect {
            _ = try await makeClient(transport).download(path: "/a.txt", range: nil)
        } throws: { error in
            if case .malformedResponse = error as? DropboxError { return true }
            return false
        }
    }

    @Test func downloadErrors() async {
        let transport = ScriptedTransport(replies: [
            .json(#"{"error_summary":"unsupported_file/..","error":{".tag":"unsupported_file"}}"#, status: 409)
        ])
        await #expect(throws: DropboxError.unsupportedFile) {
            try await makeClient(transport).download(path: "/doc.paper", range: nil)
        }
    }

    @Test func longpollUsesNotifyHostWithoutAuthorization() async throws {
        let transport = ScriptedTransport(replies: [.json(#"{"changes":true,"backoff":5}"#)])
        let result = try await makeClient(transport).listFolderLongpoll(cursor: "cur", timeoutSeconds: 30)
        #expect(result == LongpollResult(changes: true, backoff: 5))
        let request = try #require(transport.requests.first)
        #expect(request.url == "http://notify.test/2/files/list_folder/longpoll")
        #expect(request.headers["Authorization"] == nil)
        #expect(request.headers["Content-Type"] == "application/json")
        #expect(request.timeouts.total == .seconds(120))
        #expect(request.timeouts.stall == nil)
        #expect(request.timeouts.answer == nil, "the server holds a longpoll open on purpose")
        let body = try jsonObject(request.body)
        #expect(body["cursor"] as? String == "cur")
        #expect(body["timeout"] as? Int == 30)
    }

    @Test func malformedSuccessIsNotRetried() async {
        let transport = ScriptedTransport(replies: [.json(#"{"entries":[],"cursor""#)])
        await #expect {
            _ = try await makeClient(transport).listFolder(ListFolderArg(path: ""))
        } throws: { error in
            guard case .malformedResponse(let why) = error as? DropboxError else { return false }
            return why.hasPrefix("files/list_folder")
        }
        #expect(transport.requests.count == 1)
    }

    @Test func serverErrorsAreRetried() async throws {
        let transport = ScriptedTransport(replies: [
            .text("busy", status: 503), .text("oops", status: 500), .json(#"{"cursor":"c"}"#),
        ])
        #expect(try await makeClient(transport).listFolderGetLatestCursor(ListFolderArg(path: "")) == "c")
        #expect(transport.requests.count == 3)
    }

    @Test func endpoints() {
        let e = DropboxEndpoints(api: "http://a:1/", content: "http://c//", notify: "http://n", oauth: "http://o/")
        #expect(e.api == "http://a:1" && e.content == "http://c" && e.notify == "http://n" && e.oauth == "http://o")
        #expect(e.tokenURL == "http://a:1/oauth2/token")
        #expect(e.authorizeURL == "http://o/oauth2/authorize")
        #expect(DropboxEndpoints.fromEnvironment([:]) == .dropbox)
        #expect(DropboxEndpoints.dropbox.tokenURL == "https://api.dropboxapi.com/oauth2/token")
        let env = DropboxEndpoints.fromEnvironment([
            "DROPBOXFS_API_URL": "http://127.0.0.1:9/", "DROPBOXFS_CONTENT_URL": "http://127.0.0.1:8",
            "DROPBOXFS_NOTIFY_URL": "", "DROPBOXFS_OAUTH_URL": "http://127.0.0.1:7",
        ])
        #expect(env.api == "http://127.0.0.1:9" && env.content == "http://127.0.0.1:8")
        #expect(env.notify == "https://notify.dropboxapi.com" && env.oauth == "http://127.0.0.1:7")
        #expect(HTTPRequest(method: .get, url: "http://h:1/2/files/download?arg=%7B%7D").route == "/2/files/download")
    }
}
