// files/get_thumbnail_batch on the wire: an RPC-style request on the content host with the unions
// in their tagged form, and a reply decoded entry by entry (a failure, or undecodable bytes, fail
// only their own entry; a reply of the wrong length fails the whole call).

import Foundation
import Testing

@testable import DropboxAPI

@Suite struct ThumbnailBatchTests {
    @Test func requestIsAnRPCOnTheContentHost() async throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 1, 2, 3]
        let reply = #"{"entries":[{".tag":"success","metadata":{"name":"a.jpg"},"thumbnail":""#
            + Data(png).base64EncodedString() + #""},"#
            + #"{".tag":"failure","failure":{".tag":"path","path":{".tag":"not_found"}}},"#
            + #"{".tag":"failure","failure":{".tag":"unsupported_extension"}},"#
            + #"{".tag":"failure","failure":{".tag":"unsupported_image"}},"#
            + #"{".tag":"success","metadata":{},"thumbnail":"%%%"}]}"#
        let transport = ScriptedTransport(replies: [.json(reply)])
        let args = [
            ThumbnailArg(path: "rev:0123456789"), ThumbnailArg(path: "/gone.jpg"), ThumbnailArg(path: "/a.txt"),
            ThumbnailArg(path: "/big.jpg", size: .w256h256), ThumbnailArg(path: "/bad.jpg"),
        ]
        let results = try await makeClient(transport).getThumbnailBatch(args)
        #expect(results.count == 5)
        #expect(try results[0].get() == png)
        #expect(results[1] == .failure(.path(.notFound)))
        #expect(results[2] == .failure(.unsupportedExtension))
        #expect(results[3] == .failure(.unsupportedImage))
        #expect(results[4] == .failure(.other("undecodable thumbnail")))

        let request = try #require(transport.requests.first)
        #expect(request.url == "http://content.test/2/files/get_thumbnail_batch")
        #expect(request.method == .post)
        #expect(request.headers["Content-Type"] == "application/json")
        #expect(request.headers["Authorization"] == "Bearer tok")
        #expect(request.timeouts.total == .seconds(120))
        let body = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        let entries = try #require(body["entries"] as? [[String: Any]])
        #expect(entries.count == 5)
        #expect(entries[0]["path"] as? String == "rev:0123456789")
        #expect((entries[0]["format"] as? [String: String]) == [".tag": "png"])
        #expect((entries[0]["size"] as? [String: String]) == [".tag": "w128h128"])
        #expect((entries[0]["mode"] as? [String: String]) == [".tag": "strict"])
        #expect((entries[3]["size"] as? [String: String]) == [".tag": "w256h256"])
    }

    /// docs/DROPBOX-API.md "Decoding rules": a union member without a value may be a bare string,
    /// and one entry Dropbox cannot thumbnail fails only its own entry.
    @Test func aThumbnailFailureWrittenAsABareTagFailsOnlyItsEntry() async throws {
        let reply = #"{"entries":[{".tag":"success","metadata":{},"thumbnail":"iVBORw=="},"#
            + #"{".tag":"failure","failure":"unsupported_extension"},"#
            + #"{".tag":"failure","failure":{".tag":"path","path":"not_found"}},"#
            + #"{".tag":"failure","failure":{"odd":1}},7]}"#
        let transport = ScriptedTransport(replies: [.json(reply)])
        let results = try await makeClient(transport).getThumbnailBatch([
            ThumbnailArg(path: "/a.png"), ThumbnailArg(path: "/b.txt"), ThumbnailArg(path: "/gone.png"),
            ThumbnailArg(path: "/c.png"), ThumbnailArg(path: "/d.png"),
        ])
        #expect(results.count == 5)
        #expect(results[0] == .success([0x89, 0x50, 0x4E, 0x47]))
        #expect(results[1] == .failure(.unsupportedExtension))
        #expect(results[2] == .failure(.path(.notFound)))
        // Entries of a shape not understood fail alone.
        #expect(results[3] == .failure(.other("other")))
        #expect(results[4] == .failure(.other("undecodable entry")))
    }

    @Test func aReplyOfTheWrongLengthFailsTheCall() async throws {
        let transport = ScriptedTransport(replies: [.json(#"{"entries":[]}"#)])
        await #expect(throws: DropboxError.self) {
            _ = try await makeClient(transport).getThumbnailBatch([ThumbnailArg(path: "/a.jpg")])
        }
    }

    @Test func noEntriesSendNothingAndTooManyAreRefused() async throws {
        let transport = ScriptedTransport(replies: [.json(#"{"entries":[]}"#)])
        let client = makeClient(transport)
        #expect(try await client.getThumbnailBatch([]).isEmpty)
        let many = (0...ThumbnailArg.batchLimit).map { ThumbnailArg(path: "/\($0).jpg") }
        await #expect(throws: DropboxError.self) { _ = try await client.getThumbnailBatch(many) }
        #expect(transport.requests.isEmpty)
    }
}
