// files/export through the HTTP client against scripted replies: the request (content host,
// Dropbox-API-Arg), the reply's Dropbox-API-Result (export_metadata, file_metadata), a body shorter
// than the size it announces, a missing result header, and Dropbox's non_exportable answer.

import Testing

@testable import DropboxAPI

@Suite struct ExportRequestTests {
    static let result =
        #"{"export_metadata":{"name":"Plan.md","size":12,"export_hash":"abc"},"file_metadata":{"name":"Plan.paper","rev":"0123456789abc"}}"#

    @Test func exportsWholeFromTheContentHost() async throws {
        let body = Array("# Plan\n\nhello".utf8).prefix(12)
        let transport = ScriptedTransport(replies: [downloadReply(body: Array(body), result: Self.result)])
        let exported = try await makeClient(transport).export(path: "/Notes/Plan.paper")
        #expect(exported.data == Array(body))
        #expect(exported.name == "Plan.md")
        #expect(exported.size == 12)
        #expect(exported.rev == "0123456789abc")
        let request = try #require(transport.requests.first)
        #expect(request.url == "http://content.test/2/files/export")
        #expect(request.headers["Dropbox-API-Arg"] == #"{"path":"/Notes/Plan.paper"}"#)
        #expect(request.body.isEmpty)
        #expect(request.timeouts.answer == nil, "the conversion may take longer than the answer bound")
        #expect(request.timeouts.stall != nil)
    }

    @Test func aShortBodyIsNotAnExport() async {
        let transport = ScriptedTransport(replies: [downloadReply(body: [1, 2, 3], result: Self.result)])
        await #expect {
            _ = try await makeClient(transport).export(path: "/Notes/Plan.paper")
        } throws: { error in
            if case .transport = error as? DropboxError { return true }
            return false
        }
    }

    @Test func aReplyWithoutResultHeaderIsMalformed() async {
        let transport = ScriptedTransport(replies: [HTTPResponse(status: 200, body: [1, 2, 3])])
        await #expect {
            _ = try await makeClient(transport).export(path: "/Notes/Plan.paper")
        } throws: { error in
            if case .malformedResponse = error as? DropboxError { return true }
            return false
        }
    }

    @Test func nonExportableIsARouteError() async {
        let transport = ScriptedTransport(replies: [
            .json(#"{"error_summary":"non_exportable/..","error":{".tag":"non_exportable"}}"#, status: 409)
        ])
        await #expect {
            _ = try await makeClient(transport).export(path: "/a.txt")
        } throws: { error in
            if case .routeError(let summary) = error as? DropboxError { return summary.hasPrefix("non_exportable") }
            return false
        }
    }
}
