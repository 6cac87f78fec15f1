// Dropbox-API-Arg must be header safe (docs/DROPBOX-API.md, "Dropbox-API-Arg encoding"): the
// SwiftyDropbox vectors, DEL, and a round trip proving the escaped text is still the same JSON.

import Foundation
import Testing

@testable import DropboxAPI

@Suite struct ArgEncodingTests {
    @Test(arguments: [
        ("héllø wörld", #"h\u00e9ll\u00f8 w\u00f6rld"#),
        ("🍺", #"\ud83c\udf7a"#),
        ("a\u{7F}b", #"a\u007fb"#),
        ("plain ASCII ~", "plain ASCII ~"),
        ("中", #"\u4e2d"#),
    ])
    func escapes(input: String, expected: String) {
        #expect(ArgEncoding.escapeForHeader(input) == expected)
    }

    @Test func headerJSONIsASCIIAndDecodesBack() throws {
        let path = "/Fotos/Ünïcødé \"quoted\" \\ back/🍺\u{7F}.jpg"
        let header = try ArgEncoding.headerJSON(PathArg(path: path))
        #expect(header.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F })
        #expect(
            header.hasPrefix(
                #"{"path":"/Fotos/\u00dcn\u00efc\u00f8d\u00e9 \"quoted\" \\ back/\ud83c\udf7a\u007f.jpg"}"#))
        struct Decoded: Decodable { var path: String }
        #expect(try JSONDecoder().decode(Decoded.self, from: Data(header.utf8)).path == path)
    }
}
