// ListFolderHead reads a reply's cursor and has_more from the raw bytes. It must agree with the
// decoder on every well-formed reply, ignore look-alike keys inside entries and strings, and give
// nil (so the caller decodes everything) for whatever it cannot read with certainty.

import Foundation
import Testing

@testable import DropboxAPI

@Suite struct ListFolderHeadTests {
    static let entry =
        #"{".tag":"file","name":"a \"cursor\":\"x\" \\ b","id":"id:a","path_lower":"/a","client_modified":"2020-01-01T00:00:00Z","server_modified":"2020-01-01T00:00:00Z","rev":"0123456789","size":1,"sharing_info":{"read_only":true,"cursor":"nested"},"x":[1,[2,{"has_more":false}],"]"]}"#

    static let wellFormed: [String] = [
        #"{"entries":[],"cursor":"c1","has_more":false}"#,
        #"{"cursor":"c2","has_more":true,"entries":[]}"#,
        #" {  "entries" : [ \#(entry) , \#(entry) ] ,"cursor" : "AAE-x_y=" , "has_more" : true }  "#,
        "{\n\t\"has_more\":false,\r\n\"cursor\":\"c3\",\"entries\":[\(entry)],\"extra\":{\"a\":null,\"b\":-1.5e3}}\n",
        #"{"entries":[],"unknown":"}","cursor":"c4","has_more":false,"n":12,"t":true,"z":null}"#,
    ]

    @Test(arguments: wellFormed)
    func agreesWithTheDecoder(reply: String) throws {
        let decoded = try JSONDecoder().decode(ListFolderResult.self, from: Data(reply.utf8))
        let head = try #require(ListFolderHead.scan(Array(reply.utf8)))
        #expect(head == ListFolderHead.Head(cursor: decoded.cursor, hasMore: decoded.hasMore))
    }

    static let unreadable: [String] = [
        "",
        "[]",
        #"{"entries":[],"cursor":"c1"}"#,  // no has_more
        #"{"entries":[],"has_more":true}"#,  // no cursor
        #"{"entries":[],"cursor":"c1","has_more":true,"cursor":"c2"}"#,  // duplicate
        #"{"entries":[],"cursor":"c\u0031","has_more":true}"#,  // escaped cursor
        #"{"curs\u006fr":"c1","entries":[],"cursor":"c2","has_more":true}"#,  // the decoder takes c1
        #"{"has_mor\u0065":false,"entries":[],"cursor":"c","has_more":true}"#,  // ... and false
        #"{"entries":[],"cursor":1,"has_more":true}"#,
        #"{"entries":[],"cursor":"c1","has_more":"yes"}"#,
        #"{"entries":[],"cursor":"c1","has_more":true} trailing"#,
        #"{"entries":[{"a":"b"],"cursor":"c1","has_more":true"#,
        #"{"entries":["unterminated],"cursor":"c1","has_more":true}"#,
        #"{"entries":[],"cursor":"c1","has_more":tru}"#,
        #"{"entries":[] "cursor":"c1","has_more":true}"#,
    ]

    @Test(arguments: unreadable)
    func givesNilWhenUnsure(reply: String) {
        #expect(ListFolderHead.scan(Array(reply.utf8)) == nil)
    }

    /// Every cut of a reply short of its end is unreadable: a body cut short is never taken for a
    /// whole one (the caller then decodes it inside the retried request).
    @Test func everyTruncationIsUnreadable() {
        let reply = Array(#"{"entries":[\#(Self.entry)],"cursor":"c1","has_more":true}"#.utf8)
        for length in 0..<reply.count {
            #expect(ListFolderHead.scan(Array(reply[..<length])) == nil, "cut at \(length)")
        }
        #expect(ListFolderHead.scan(reply) == ListFolderHead.Head(cursor: "c1", hasMore: true))
    }
}
