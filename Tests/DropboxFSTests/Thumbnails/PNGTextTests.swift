// Adding the standard's text chunks to Dropbox's PNG: every chunk keeps a valid CRC (checked with
// the test support's own bitwise CRC-32, written apart from the core's table), the text goes before
// the first IDAT, earlier chunks with the same keywords are replaced, and anything that is not a
// well-formed PNG is refused.

import DropboxTestSupport
import Testing

@testable import DropboxFS

extension ThumbnailTests {
    @Suite struct PNGTextTests {
        /// A 3 x 2 RGB picture from the test support's encoder.
        static let picture = TestPNG.encode(width: 3, height: 2, raw: [0] + Array(1...9) + [0] + Array(10...18))

        /// (type, data) of each chunk, checking lengths and CRCs independently of PNGText.
        static func independentChunks(_ png: [UInt8]) -> [(String, [UInt8])]? {
            guard png.starts(with: TestPNG.signature) else { return nil }
            var out: [(String, [UInt8])] = []
            var i = 8
            while i < png.count {
                guard i + 12 <= png.count else { return nil }
                let length = png[i..<i + 4].reduce(0) { $0 << 8 | Int($1) }
                guard i + 12 + length <= png.count else { return nil }
                let body = Array(png[i + 4..<i + 8 + length])
                let crc = png[i + 8 + length..<i + 12 + length].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                guard TestPNG.crc32(body) == crc else { return nil }
                out.append((String(decoding: body[0..<4], as: UTF8.self), Array(body[4...])))
                i += 12 + length
            }
            return out
        }

        @Test func textGoesBeforeTheFirstIDATWithValidCRCs() throws {
            let entries: [(keyword: String, text: String)] = [
                ("Thumb::URI", "file:///m/a%20b.jpg"), ("Thumb::MTime", "1700000000"), ("Software", "dropboxfs"),
            ]
            let stamped = try #require(PNGText.adding(entries, to: Self.picture))
            let chunks = try #require(Self.independentChunks(stamped))
            #expect(chunks.map(\.0) == ["IHDR", "tEXt", "tEXt", "tEXt", "IDAT", "IEND"])
            #expect(chunks[1].1 == Array("Thumb::URI\u{0}file:///m/a%20b.jpg".utf8))
            #expect(chunks[2].1 == Array("Thumb::MTime\u{0}1700000000".utf8))
            // The image itself is untouched.
            let original = try #require(Self.independentChunks(Self.picture))
            #expect(chunks[0].1 == original[0].1 && chunks[4].1 == original[1].1)
            let text = try #require(PNGText.text(of: stamped))
            #expect(text == ["Thumb::URI": "file:///m/a%20b.jpg", "Thumb::MTime": "1700000000", "Software": "dropboxfs"])
        }

        @Test func earlierTextUnderTheSameKeywordsIsReplaced() throws {
            let once = try #require(PNGText.adding([("Thumb::MTime", "1"), ("Comment", "keep")], to: Self.picture))
            let twice = try #require(PNGText.adding([("Thumb::MTime", "2")], to: once))
            let chunks = try #require(Self.independentChunks(twice))
            #expect(chunks.map(\.0) == ["IHDR", "tEXt", "tEXt", "IDAT", "IEND"])
            #expect(try #require(PNGText.text(of: twice)) == ["Thumb::MTime": "2", "Comment": "keep"])
        }

        @Test func onlyWellFormedPNGsAreAccepted() {
            let entries: [(keyword: String, text: String)] = [("Thumb::MTime", "1")]
            var badCRC = Self.picture
            badCRC[20] ^= 1  // inside IHDR's data
            var noIDAT = TestPNG.signature + TestPNG.chunk("IHDR", Array(repeating: 1, count: 13))
            noIDAT += TestPNG.chunk("IEND", [])
            let cases: [[UInt8]] = [
                [], Array("GIF89a".utf8), Array(Self.picture.dropLast()), badCRC, noIDAT,
                Self.picture + [0], Array(Self.picture.prefix(8)),
            ]
            for png in cases {
                #expect(PNGText.adding(entries, to: png) == nil)
                #expect(PNGText.text(of: png) == nil)
            }
            #expect(PNGText.adding([("", "x")], to: Self.picture) == nil)
            #expect(PNGText.adding([("Key", "nul\u{0}inside")], to: Self.picture) == nil)
            #expect(PNGText.adding([("Key", "\u{2615}")], to: Self.picture) == nil)
        }

        @Test func crcMatchesTheIndependentOne() {
            for sample in [[UInt8](), Array("IEND".utf8), Array(0...255), Self.picture] {
                #expect(PNGText.crc32(sample[...]) == TestPNG.crc32(sample))
            }
        }
    }
}
