// JSONBytes.string reads eight bytes at a time until one of them may be a quote or a backslash.
// Every length and every position of the quote, of an escape and of the reader's end (a range
// shorter than the buffer) must give what a byte-by-byte scan gives: the same token, the same
// escaped flag, and a syntax error when the closing quote lies beyond `end`.

import Testing

@testable import DropboxAPI

@Suite struct JSONStringScanTests {
    /// The token a byte-by-byte scan finds in `bytes[0..<end]` (bytes[0] is the opening quote).
    static func reference(_ bytes: [UInt8], end: Int) -> JSONBytes.Token? {
        var k = 1
        var escaped = false
        while k < end {
            if bytes[k] == UInt8(ascii: "\"") { return (1..<k, escaped) }
            if bytes[k] == UInt8(ascii: "\\") {
                escaped = true
                k += 2
            } else {
                k += 1
            }
        }
        return nil
    }

    static func scan(_ bytes: [UInt8], end: Int) -> JSONBytes.Token? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = JSONBytes(buffer, range: 0..<end)
            return try? reader.string()
        }
    }

    @Test func everyLengthAndQuotePositionAgreesWithAByteScan() {
        var checked = 0
        for length in 0...40 {
            let body = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            // The closing quote right after the body, then more string-like bytes behind it.
            let bytes = [UInt8(ascii: "\"")] + body + [UInt8(ascii: "\"")] + Array(repeating: UInt8(ascii: "z"), count: 17)
            for end in 1...bytes.count {
                let got = Self.scan(bytes, end: end)
                let want = Self.reference(bytes, end: end)
                #expect(got?.range == want?.range && got?.escaped == want?.escaped, "length \(length), end \(end)")
                checked += 1
            }
        }
        #expect(checked > 1000)
    }

    @Test func escapesAndNonASCIIAtEveryOffset() {
        for length in 1...33 {
            for at in 0..<length {
                for special in [#"\""#, #"\\"#, "\\u00e9", "é", "😀", #"\/"#] {
                    var body = String(repeating: "x", count: length)
                    body.insert(contentsOf: special, at: body.index(body.startIndex, offsetBy: at))
                    let bytes = Array("\"\(body)\"tail\"".utf8)
                    let got = Self.scan(bytes, end: bytes.count)
                    let want = Self.reference(bytes, end: bytes.count)
                    #expect(got != nil, "\(special) at \(at) of \(length)")
                    #expect(got?.range == want?.range && got?.escaped == want?.escaped, "\(special) at \(at) of \(length)")
                    #expect(got?.escaped == special.hasPrefix("\\"))
                }
            }
        }
    }

    /// A quote just past the reader's end is not found (the range of a nested reader).
    @Test func aQuoteBeyondTheEndIsNotSeen() {
        for length in 0...24 {
            let bytes = [UInt8(ascii: "\"")] + Array(repeating: UInt8(ascii: "q"), count: length) + [UInt8(ascii: "\"")]
            #expect(Self.scan(bytes, end: bytes.count - 1) == nil, "length \(length)")
            #expect(Self.scan(bytes, end: bytes.count)?.range == 1..<(1 + length))
        }
    }

    @Test func theWordTestFindsEachByteLane() {
        for lane in 0..<8 {
            for byte in [UInt8(ascii: "\""), UInt8(ascii: "\\")] {
                var word = UInt64(0x6161_6161_6161_6161)
                word &= ~(UInt64(0xFF) << (8 * lane))
                word |= UInt64(byte) << (8 * lane)
                #expect(JSONBytes.holdsQuoteOrBackslash(word), "lane \(lane) byte \(byte)")
            }
        }
        // Bytes next to the two, and high bytes, are not taken for them.
        for byte in [0x21, 0x23, 0x5B, 0x5D, 0x80, 0xA2, 0xDC, 0xFF, 0x00, 0x01] as [UInt64] {
            #expect(!JSONBytes.holdsQuoteOrBackslash(byte &* 0x0101_0101_0101_0101), "byte \(byte)")
        }
    }
}
