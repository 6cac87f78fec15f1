// The byte-level list_folder decoder must give exactly what JSONDecoder gives (through the
// Decodable conformances) on every page the fake serves, on crafted entries that exercise each
// rule (optional, null, mistyped, duplicate, escaped, unknown), and it must never crash on broken
// or mutated bytes.

import DropboxTestSupport
import Foundation
import Testing

@testable import DropboxAPI

@Suite struct ListFolderDecodingTests {
    static func reference(_ bytes: [UInt8]) -> ListFolderResult? {
        try? JSONDecoder().decode(ListFolderResult.self, from: Data(bytes))
    }

    static func fast(_ bytes: [UInt8]) -> ListFolderResult? {
        try? ListFolderResult.decode(json: bytes)
    }

    static func page(_ entries: [String], cursor: String = "c", more: Bool = false) -> [UInt8] {
        Array(#"{"entries":[\#(entries.joined(separator: ","))],"cursor":"\#(cursor)","has_more":\#(more)}"#.utf8)
    }

    static let file =
        #"".tag":"file","name":"a.txt","id":"id:a","path_lower":"/a.txt","path_display":"/A.txt","client_modified":"2020-01-02T03:04:05Z","server_modified":"2021-01-02T03:04:05Z","rev":"0123456789","size":12"#

    /// Every entry of these pages decodes or fails as JSONDecoder decides.
    static let crafted: [String] = [
        "{\(file)}",
        "{\(file),\"content_hash\":\"\(String(repeating: "ab", count: 32))\"}",
        "{\(file),\"content_hash\":null,\"is_downloadable\":false,\"export_info\":{\"export_as\":\"docx\"}}",
        "{\(file),\"content_hash\":\"xyz\"}",  // bad hash: undecodable
        "{\(file),\"symlink_info\":{\"target\":\"/t\"}}",
        "{\(file),\"symlink_info\":{}}",  // target is required
        "{\(file),\"symlink_info\":null}",
        "{\(file),\"sharing_info\":{\"read_only\":true,\"parent_shared_folder_id\":\"1\",\"modified_by\":\"dbid:x\"}}",
        "{\(file),\"sharing_info\":{\"read_only\":\"yes\"}}",  // mistyped
        "{\(file),\"export_info\":{\"export_as\":null,\"export_options\":[\"a\",\"b\"]}}",
        "{\(file),\"is_downloadable\":null}",
        "{\(file),\"is_downloadable\":1}",
        #"{".tag":"file","name":"n","id":"id:n","client_modified":"2020-01-02T03:04:05Z","server_modified":"2020-01-02T03:04:05Z","rev":"0123456789a","size":1e3}"#,
        #"{".tag":"file","name":"n","id":"id:n","client_modified":"2020-01-02T03:04:05Z","server_modified":"2020-01-02T03:04:05Z","rev":"0123456789a","size":-1}"#,
        #"{".tag":"file","name":"n","id":"id:n","client_modified":"2020-01-02T03:04:05.5Z","server_modified":"2020-01-02T03:04:05Z","rev":"0123456789a","size":1}"#,
        #"{".tag":"file","name":"n","client_modified":"2020-01-02T03:04:05Z","server_modified":"2020-01-02T03:04:05Z","rev":"0123456789a","size":1}"#,
        #"{".tag":"folder","name":"F","id":"id:f","path_lower":"/f","path_display":"/F"}"#,
        #"{".tag":"folder","name":"F","id":"id:f","sharing_info":{"read_only":false,"shared_folder_id":"84","traverse_only":true,"no_access":false,"parent_shared_folder_id":"1"}}"#,
        #"{".tag":"folder","name":"F"}"#,  // folders need an id
        #"{".tag":"folder","name":"F","id":"id:f","path_lower":7}"#,  // mistyped optional
        #"{".tag":"folder","name":"F","id":"id:f","path_lower":null,"path_display":null}"#,
        #"{".tag":"deleted","name":"gone","path_lower":"/gone","path_display":"/Gone"}"#,
        #"{".tag":"deleted","name":"gone"}"#,
        #"{".tag":"something_new","name":"x"}"#,
        #"{"name":"no tag"}"#,
        #"{".tag":"folder","id":"id:f"}"#,
        #"{".tag":null,"name":"x","id":"id:f"}"#,
        #"["not","an","object"]"#,
        #""just a string""#,
        "null",
        "42",
        #"{".tag":"folder","name":"first","name":"second","id":"id:d"}"#,  // the first key counts
        #"{".tag":"folder","n\u0061me":"escaped key","id":"id:e"}"#,
        #"{".tag":"folder","name":"tab\there \"quoted\" \\ back \/ slash \u00e9 \ud83c\udf7a \u0000","id":"id:s"}"#,
        #"{".tag":"folder","name":"lone \ud800 surrogate","id":"id:l"}"#,
        #"{".tag":"folder","name":"lone low \udc00","id":"id:l"}"#,
        #"{".tag":"folder","name":"bad escape \q","id":"id:l"}"#,
        #"{ ".tag" : "folder" , "name" : "spaced" , "id" : "id:sp" , "extra" : { "deep" : [ 1 , { "x" : null } , true , false , -0.5e-3 ] } }"#,
        #"{".tag":"folder","name":"caf\u00e9","id":"id:c","path_lower":"/caf\u00e9","unknown":{"name":"nested name is not the name"}}"#,
        // Nested objects: escaped and duplicate keys, mistyped fields.
        "{\(file),\"symlink_info\":{\"t\\u0061rget\":\"/escaped\"}}",
        "{\(file),\"symlink_info\":{\"target\":\"/first\",\"target\":\"/second\"}}",
        "{\(file),\"symlink_info\":{\"target\":7}}",
        "{\(file),\"sharing_info\":{\"read_only\":true,\"traverse_only\":\"no\"}}",
        "{\(file),\"sharing_info\":{\"read_only\":true,\"shared_folder_id\":5}}",
        "{\(file),\"sharing_info\":{\"read_only\":false,\"read_only\":true}}",
        #"{".tag":"folder","name":"F","id":"id:f","sharing_info":{"no_access":1}}"#,
        #"{".tag":"folder","name":"F","id":"id:f","sharing_info":null}"#,
        #"{".tag":"folder","name":"F","id":"id:f","sharing_info":[]}"#,
        // Sizes at and past the limits, and non-integers.
        "{\(file.replacingOccurrences(of: "\"size\":12", with: "\"size\":18446744073709551615"))}",
        "{\(file.replacingOccurrences(of: "\"size\":12", with: "\"size\":18446744073709551616"))}",
        "{\(file.replacingOccurrences(of: "\"size\":12", with: "\"size\":1.5"))}",
        "{\(file.replacingOccurrences(of: "\"size\":12", with: "\"size\":1e20"))}",
        "{\(file.replacingOccurrences(of: "\"size\":12", with: "\"size\":12.0"))}",
        // Hashes: escaped, uppercase, too short, too long; timestamps: escaped, wrong.
        "{\(file),\"content_hash\":\"\\u0061\(String(repeating: "b", count: 63))\"}",
        "{\(file),\"content_hash\":\"\(String(repeating: "AB", count: 32))\"}",
        "{\(file),\"content_hash\":\"\(String(repeating: "a", count: 63))\"}",
        "{\(file),\"content_hash\":\"\(String(repeating: "a", count: 65))\"}",
        "{\(file.replacingOccurrences(of: "\"client_modified\":\"2", with: "\"client_modified\":\"\\u0032"))}",
        "{\(file.replacingOccurrences(of: "2020-01-02T03:04:05Z", with: "2020-13-02T03:04:05Z"))}",
        // Keys and values in other scripts, unescaped.
        #"{".tag":"folder","name":"日本語","id":"id:j","nämé":"ünknown","path_display":"/日本語"}"#,
    ]

    @Test func craftedEntriesDecodeAsJSONDecoderDecodesThem() throws {
        for entry in Self.crafted {
            let bytes = Self.page([entry, #"{".tag":"folder","name":"after","id":"id:z"}"#])
            let want = try #require(Self.reference(bytes), "reference failed on \(entry)")
            let got = try #require(Self.fast(bytes), "fast failed on \(entry)")
            #expect(got == want, "\(entry)")
        }
        // All of them in one page, too.
        let all = Self.page(Self.crafted, cursor: "AAE_-x=", more: true)
        #expect(try #require(Self.fast(all)) == (try #require(Self.reference(all))))
    }

    /// Where JSONDecoder rejects a whole page for one bad string escape, the page still decodes
    /// and only that entry is dropped.
    @Test func aBadEscapeDropsItsEntryOnly() throws {
        let bytes = Self.page([#"{".tag":"folder","name":"short \u12","id":"id:l"}"#, #"{".tag":"folder","name":"ok","id":"id:o"}"#])
        let got = try #require(Self.fast(bytes))
        #expect(got.entries.map(\.name) == ["ok"] && got.undecodableEntries == 1)
    }

    @Test func theTopLevelTakesTheFirstOfDuplicateKeysAndEscapedKeys() throws {
        for page in [
            #"{"entries":[],"cursor":"first","has_more":false,"cursor":"second"}"#,
            #"{"entri\u0065s":[{".tag":"folder","name":"x","id":"id:x"}],"cursor":"c","has_more":true}"#,
            #"{"entries":[{".tag":"folder","name":"x","id":"id:x"}],"entries":[],"cursor":"c","has_more":false}"#,
            #"{"has_more":false,"cursor":"c","extra":[1,{"entries":[]}],"entries":[]}"#,
        ] {
            let bytes = Array(page.utf8)
            #expect(Self.fast(bytes) == Self.reference(bytes), "\(page)")
            #expect(Self.fast(bytes) != nil, "\(page)")
        }
    }

    /// A raw control character in a field nobody reads does not drop the entry (JSONDecoder
    /// never reads it either); in a field that is read, it does.
    @Test func controlCharactersCountOnlyWhereRead() throws {
        var bytes = Array(#"{"entries":[{".tag":"folder","name":"ok","id":"id:1","extra":"a"#.utf8) + [0x01]
        bytes += Array(#""},{".tag":"folder","name":"b"#.utf8) + [0x01] + Array(#"","id":"id:2"}],"cursor":"c","has_more":false}"#.utf8)
        let got = try #require(Self.fast(bytes))
        #expect(got.entries.map(\.name) == ["ok"] && got.undecodableEntries == 1)
        #expect(got == Self.reference(bytes))
    }

    /// Nesting deeper than 512 fails the page instead of exhausting the stack.
    @Test func deepNestingFailsWithoutCrashing() {
        let deep = Array(#"{"entries":[{".tag":"folder","name":"x","id":"id:x","junk":"#.utf8)
            + Array(repeating: UInt8(ascii: "["), count: 200_000) + Array(#"}],"cursor":"c","has_more":false}"#.utf8)
        #expect(Self.fast(deep) == nil)
        let fine = Array(#"{"entries":[{".tag":"folder","name":"x","id":"id:x","junk":"#.utf8)
            + Array(repeating: UInt8(ascii: "["), count: 100) + Array(repeating: UInt8(ascii: "]"), count: 100)
            + Array(#"}],"cursor":"c","has_more":false}"#.utf8)
        #expect(Self.fast(fine)?.entries.count == 1)
    }

    @Test func invalidUTF8InAnEntryDropsThatEntryOnly() throws {
        var bytes = Array(#"{"entries":[{".tag":"folder","name":"ok","id":"id:1"},{".tag":"folder","name":"x"#.utf8)
        bytes += [0xFF, 0xFE]
        bytes += Array(#"","id":"id:2"}],"cursor":"c","has_more":false}"#.utf8)
        let got = try #require(Self.fast(bytes))
        #expect(got == Self.reference(bytes))
        #expect(got.entries.count == 1 && got.undecodableEntries == 1)
    }

    static let brokenPages: [String] = [
        "", "   ", "[]", "null", "{", "{}", #"{"entries":[]}"#, #"{"entries":[],"cursor":"c"}"#,
        #"{"entries":[],"has_more":false}"#, #"{"entries":{},"cursor":"c","has_more":false}"#,
        #"{"entries":[],"cursor":1,"has_more":false}"#, #"{"entries":[],"cursor":"c","has_more":"no"}"#,
        #"{"entries":[{"a":1}],"cursor":"c","has_more":false} x"#, #"{"entries":[,],"cursor":"c","has_more":false}"#,
        #"{"entries":[{"a":tru}],"cursor":"c","has_more":false}"#, #"{"entries":[{"a" 1}],"cursor":"c","has_more":false}"#, #"{"entries":[{"a":"unterminated}],"cursor":"c","has_more":false}"#,
        #"{"entries":[{"a":[1,2}],"cursor":"c","has_more":false}"#,
    ]

    @Test(arguments: brokenPages)
    func brokenPagesFailAsAWhole(page: String) {
        let bytes = Array(page.utf8)
        #expect(Self.fast(bytes) == nil)
        #expect(Self.reference(bytes) == nil, "the reference decoder accepts it too")
    }

    /// Stricter than JSONDecoder, which lets these through: not JSON, and never sent by Dropbox.
    @Test(arguments: [
        #"{"entries":[{}],"cursor":"c","has_more":false,}"#, #"{"entries":[{"a":01}],"cursor":"c","has_more":false}"#,
        #"{"entries":[{"a":1.}],"cursor":"c","has_more":false}"#,
    ])
    func notQuiteJSONFails(page: String) {
        #expect(Self.fast(Array(page.utf8)) == nil)
    }

    @Test func everyTruncationFailsAndNothingCrashes() {
        let bytes = Self.page(Array(Self.crafted.prefix(12)))
        for length in 0..<bytes.count {
            #expect(Self.fast(Array(bytes[..<length])) == nil, "cut at \(length)")
        }
    }

    /// Random byte changes: never a crash, and whenever both decoders accept the bytes they agree.
    @Test func mutatedPagesNeverCrashAndAgreeWhenBothDecode() {
        let original = Self.page(Self.crafted)
        var generator = SplitMix(seed: 42)
        var bothDecoded = 0
        for _ in 0..<3000 {
            var bytes = original
            for _ in 0..<Int(generator.next() % 3 + 1) {
                let at = Int(generator.next() % UInt64(bytes.count))
                // Mostly bytes that keep the syntax (most bytes are inside strings), some that break it.
                let candidates: [UInt8] = Array("aaaaaaaZ00009 -.".utf8) + [0x22, 0x5C, 0x7D, 0x5D, 0x2C, 0xFF, 0x00]
                bytes[at] = candidates[Int(generator.next() % UInt64(candidates.count))]
            }
            let got = Self.fast(bytes)
            if let got, let want = Self.reference(bytes) {
                bothDecoded += 1
                #expect(got == want)
            }
        }
        #expect(bothDecoded > 100)
    }

    /// The fake server's own pages: the synthetic tree with the evil names (lone surrogates,
    /// control characters, over-long names) and the sample account.
    @Test(arguments: [["--synthetic", "6000", "--evil-names"], ["--sample-account", "--evil-names"]])
    func fakeServerPagesDecodeAlike(arguments: [String]) async throws {
        let fake = try await FakeDropboxServer.start(arguments: arguments)
        let transport = fake.transport
        var cursor: String?
        var pages = 0
        repeat {
            let route = cursor == nil ? "files/list_folder" : "files/list_folder/continue"
            let body =
                cursor.map { #"{"cursor":"\#($0)"}"# } ?? #"{"path":"","recursive":true,"limit":700}"#
            var headers = HTTPHeaders()
            headers.add("Authorization", "Bearer \(fake.token)")
            headers.add("Content-Type", "application/json")
            let reply = try await transport.send(
                HTTPRequest(method: .post, url: fake.endpoints.rpc(route), headers: headers, body: Array(body.utf8)))
            #expect(reply.status == 200)
            let want = try #require(Self.reference(reply.body))
            let got = try ListFolderResult.decode(json: reply.body)
            #expect(got == want)
            cursor = want.hasMore ? want.cursor : nil
            pages += 1
        } while cursor != nil
        #expect(pages >= 2)
    }
}
