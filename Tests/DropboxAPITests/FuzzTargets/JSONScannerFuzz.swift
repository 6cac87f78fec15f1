// The JSON scanner (JSONBytes) on any bytes:
//
// - skipValue over the whole input accepts exactly what StrictJSON accepts with lazy strings (the
//   scanner checks a string's quotes and escapes' pairing while it scans, and its contents only when
//   a value is read), and fails on nesting deeper than JSONBytes.maxDepth;
// - in a document it accepts, every string token's `text` is byte for byte what JSONDecoder makes of
//   the same literal, or nil exactly when JSONDecoder rejects it, and `isValidText` says whether
//   `text` gives a String;
// - every number token's `unsigned` is what JSONDecoder decodes as UInt64, compared up to 2^53 (the
//   largest file size taken; past it both are only ever refused, ServerLimits.maxFileSize).

import Foundation

@testable import DropboxAPI

enum JSONScannerFuzz {
    static func check(_ input: UnsafeBufferPointer<UInt8>) -> String? {
        var reader = JSONBytes(input)
        var accepted = true
        do {
            try reader.skipValue()
            reader.skipSpace()
            accepted = reader.atEnd
        } catch {
            accepted = false
        }
        switch StrictJSON.check(input, lazyStrings: true, maxDepth: JSONBytes.maxDepth) {
        case .valid where !accepted: return "the scanner rejects JSON"
        case .invalid where accepted: return "the scanner accepts text that is not JSON"
        case .tooDeep where accepted: return "the scanner accepts nesting deeper than \(JSONBytes.maxDepth)"
        default: break
        }
        guard accepted else { return nil }
        var tokens = Tokens(limit: 64)
        var walker = JSONBytes(input)
        do {
            try tokens.walk(&walker, depth: 0)
        } catch {
            return "the scanner fails on a second pass over a document it accepted"
        }
        for token in tokens.strings {
            if let failure = compareString(token, in: walker) { return failure }
        }
        for range in tokens.numbers {
            if let failure = compareNumber(range, in: walker) { return failure }
        }
        return nil
    }

    private static func literal(_ range: Range<Int>, in r: JSONBytes, quoted: Bool) -> Data {
        var data = Data()
        if quoted { data.append(UInt8(ascii: "\"")) }
        data.append(contentsOf: UnsafeBufferPointer(rebasing: r.bytes[range]))
        if quoted { data.append(UInt8(ascii: "\"")) }
        return data
    }

    private static func compareString(_ token: JSONBytes.Token, in r: JSONBytes) -> String? {
        let text = r.text(token)
        if r.isValidText(token) != (text != nil) { return "isValidText disagrees with text" }
        let reference = try? JSONDecoder().decode(String.self, from: literal(token.range, in: r, quoted: true))
        switch (text, reference) {
        case (nil, nil): return nil
        case (let got?, let want?) where Exact.render(got) == Exact.render(want): return nil
        default:
            return "string \(Exact.bytes(r.bytes[token.range])): text gives \(text.map(Exact.render) ?? "nil"), "
                + "JSONDecoder \(reference.map(Exact.render) ?? "nil")"
        }
    }

    private static func compareNumber(_ range: Range<Int>, in r: JSONBytes) -> String? {
        let got = r.unsigned(range)
        let want = try? JSONDecoder().decode(UInt64.self, from: literal(range, in: r, quoted: false))
        let limit = ServerLimits.maxFileSize
        let relevant = (got.map { $0 <= limit } ?? false) || (want.map { $0 <= limit } ?? false)
        guard relevant, got != want else { return nil }
        let text = String(decoding: UnsafeBufferPointer(rebasing: r.bytes[range]), as: UTF8.self)
        return "number \(text): unsigned gives \(got.map(String.init) ?? "nil"), JSONDecoder \(want.map(String.init) ?? "nil")"
    }

    /// The first `limit` string and number tokens of a document, found with the scanner's own
    /// members/elements walk.
    private struct Tokens {
        let limit: Int
        var strings: [JSONBytes.Token] = []
        var numbers: [Range<Int>] = []

        mutating func walk(_ r: inout JSONBytes, depth: Int) throws(JSONBytes.SyntaxError) {
            r.skipSpace()
            guard depth < JSONBytes.maxDepth, let first = r.peek() else { throw JSONBytes.SyntaxError() }
            switch first {
            case JSONBytes.openBrace:
                var this = self
                try r.members { r, key throws(JSONBytes.SyntaxError) in
                    if this.strings.count < this.limit { this.strings.append(key) }
                    try this.walk(&r, depth: depth + 1)
                }
                self = this
            case JSONBytes.openBracket:
                var this = self
                try r.elements { r throws(JSONBytes.SyntaxError) in try this.walk(&r, depth: depth + 1) }
                self = this
            case JSONBytes.quote:
                let token = try r.string()
                if strings.count < limit { strings.append(token) }
            case UInt8(ascii: "t"), UInt8(ascii: "f"):
                _ = try r.bool()
            case UInt8(ascii: "n"):
                guard r.takeNull() else { throw JSONBytes.SyntaxError() }
            default:
                let range = try r.number()
                if numbers.count < limit { numbers.append(range) }
            }
        }
    }
}
