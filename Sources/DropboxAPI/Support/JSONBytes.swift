// A small reader over the bytes of a JSON document, for the one reply that is decoded millions of
// times: list_folder pages (ListFolderDecoding.swift). It checks syntax strictly where it reads
// (strings, numbers, literals, nesting) and hands out values as byte ranges, so keys are compared
// without allocating and only the values a caller wants become Strings.
//
// Errors are only "not valid JSON here"; callers decide what an error means (a bad entry is
// skipped, a bad page fails). It never reads out of bounds: every index is checked against `end`.

struct JSONBytes {
    struct SyntaxError: Error {}

    let bytes: UnsafeBufferPointer<UInt8>
    var i: Int
    let end: Int

    init(_ bytes: UnsafeBufferPointer<UInt8>, range: Range<Int>? = nil) {
        self.bytes = bytes
        self.i = range?.lowerBound ?? 0
        self.end = range?.upperBound ?? bytes.count
    }

    static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
    static let openBrace = UInt8(ascii: "{"), closeBrace = UInt8(ascii: "}")
    static let openBracket = UInt8(ascii: "["), closeBracket = UInt8(ascii: "]")
    static let colon = UInt8(ascii: ":"), comma = UInt8(ascii: ",")

    var atEnd: Bool { i >= end }

    func peek() -> UInt8? { i < end ? bytes[i] : nil }

    mutating func skipSpace() {
        while i < end {
            switch bytes[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    /// Consumes `byte` (after white space) when it is next.
    mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard i < end, bytes[i] == byte else { return false }
        i += 1
        return true
    }

    mutating func expect(_ byte: UInt8) throws(SyntaxError) {
        guard take(byte) else { throw SyntaxError() }
    }

    /// A string token: the range between its quotes, and whether it holds escapes.
    mutating func string() throws(SyntaxError) -> Token {
        skipSpace()
        guard i < end, bytes[i] == Self.quote else { throw SyntaxError() }
        let start = i + 1
        // The hottest loop of a page: raw pointer reads, the end checked once per byte.
        guard let base = bytes.baseAddress else { throw SyntaxError() }
        var k = start
        var escaped = false
        while k < end {
            // Eight bytes at a time while none is a quote or a backslash (most of a page's bytes
            // are inside strings: paths, ids, content hashes).
            while k + 8 <= end, !Self.holdsQuoteOrBackslash(UnsafeRawPointer(base + k).loadUnaligned(as: UInt64.self)) {
                k += 8
            }
            guard k < end else { break }
            let byte = base[k]
            if byte == Self.quote {
                i = k + 1
                return (start..<k, escaped)
            }
            if byte == Self.backslash {
                escaped = true
                k += 2
            } else {
                k += 1
            }
        }
        throw SyntaxError()
    }

    /// Whether any of the eight bytes of `word` is `"` or `\`: a byte equal to `b` is a zero byte
    /// of `word ^ b*0x01..01`, and `(x - 0x01..01) & ~x & 0x80..80` is non-zero exactly when `x` has a
    /// zero byte (the borrow only ever passes through a zero byte first).
    @inline(__always)
    static func holdsQuoteOrBackslash(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let q = word ^ (ones &* UInt64(quote))
        let b = word ^ (ones &* UInt64(backslash))
        return ((q &- ones) & ~q & highs) | ((b &- ones) & ~b & highs) != 0
    }

    /// Nesting deeper than this is refused (as JSONDecoder does), so a hostile reply of a million
    /// `[` cannot exhaust the stack.
    static let maxDepth = 512

    /// A string token: where its contents lie, and whether they hold escapes.
    typealias Token = (range: Range<Int>, escaped: Bool)

    /// Reads one object member by member: `member` gets each key with the reader just before its
    /// value, and must consume that value.
    mutating func members(_ member: (inout JSONBytes, Token) throws(SyntaxError) -> Void) throws(SyntaxError) {
        try expect(Self.openBrace)
        if take(Self.closeBrace) { return }
        repeat {
            let key = try string()
            try expect(Self.colon)
            skipSpace()
            try member(&self, key)
        } while take(Self.comma)
        try expect(Self.closeBrace)
    }

    /// Reads one array element by element: `element` must consume each one.
    mutating func elements(_ element: (inout JSONBytes) throws(SyntaxError) -> Void) throws(SyntaxError) {
        try expect(Self.openBracket)
        if take(Self.closeBracket) { return }
        repeat {
            skipSpace()
            try element(&self)
        } while take(Self.comma)
        try expect(Self.closeBracket)
    }

    /// Skips one value of any kind, nested values included.
    mutating func skipValue(depth: Int = 0) throws(SyntaxError) {
        skipSpace()
        guard let first = peek() else { throw SyntaxError() }
        switch first {
        case Self.quote:
            _ = try string()
        case Self.openBrace:
            guard depth < Self.maxDepth else { throw SyntaxError() }
            try members { r, _ throws(SyntaxError) in try r.skipValue(depth: depth + 1) }
        case Self.openBracket:
            guard depth < Self.maxDepth else { throw SyntaxError() }
            try elements { r throws(SyntaxError) in try r.skipValue(depth: depth + 1) }
        case UInt8(ascii: "t"): try word("true")
        case UInt8(ascii: "f"): try word("false")
        case UInt8(ascii: "n"): try word("null")
        default: _ = try number()
        }
    }

    /// A number token's range (JSON grammar: -?int(.digits)?([eE][+-]?digits)?).
    mutating func number() throws(SyntaxError) -> Range<Int> {
        skipSpace()
        let start = i
        if peek() == UInt8(ascii: "-") { i += 1 }
        guard let lead = peek(), isDigit(lead) else { throw SyntaxError() }
        i += 1
        if lead != UInt8(ascii: "0") { skipDigits() }
        if peek() == UInt8(ascii: ".") {
            i += 1
            guard let d = peek(), isDigit(d) else { throw SyntaxError() }
            skipDigits()
        }
        if let e = peek(), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            i += 1
            if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { i += 1 }
            guard let d = peek(), isDigit(d) else { throw SyntaxError() }
            skipDigits()
        }
        return start..<i
    }

    /// Consumes the literal `null` when it is next.
    mutating func takeNull() -> Bool {
        skipSpace()
        guard matches("null") else { return false }
        i += 4
        return true
    }

    /// `true` or `false`.
    mutating func bool() throws(SyntaxError) -> Bool {
        skipSpace()
        if matches("true") {
            i += 4
            return true
        }
        if matches("false") {
            i += 5
            return false
        }
        throw SyntaxError()
    }

    private mutating func word(_ literal: StaticString) throws(SyntaxError) {
        guard matches(literal) else { throw SyntaxError() }
        i += literal.utf8CodeUnitCount
    }

    private func matches(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard i + count <= end else { return false }
        return literal.withUTF8Buffer { w in
            for k in 0..<count where bytes[i + k] != w[k] { return false }
            return true
        }
    }

    private mutating func skipDigits() {
        while let d = peek(), isDigit(d) { i += 1 }
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    // MARK: Values from ranges

    /// The bytes of `range` equal `literal` (an unescaped key or value).
    func equals(_ range: Range<Int>, _ literal: StaticString) -> Bool {
        literal.withUTF8Buffer { w in
            guard range.count == w.count else { return false }
            var k = 0
            for index in range {
                if bytes[index] != w[k] { return false }
                k += 1
            }
            return true
        }
    }

    /// The contents of a string token as a String: nil for a bad escape, a lone surrogate, a raw
    /// control character or invalid UTF-8. JSONDecoder rejects all of these too, though for bad
    /// escapes and control characters it fails the whole document where a caller of this drops
    /// just the entry.
    func text(_ token: Token) -> String? {
        let raw = UnsafeBufferPointer(rebasing: bytes[token.range])
        var ascii = true
        for byte in raw {
            if byte < 0x20 { return nil }
            if byte >= 0x80 { ascii = false }
        }
        // ASCII is valid UTF-8 as it is; anything else is validated (not repaired).
        if !token.escaped && ascii { return String(decoding: raw, as: UTF8.self) }
        guard token.escaped else { return String(validating: raw, as: UTF8.self) }
        guard let unescaped = Self.unescape(raw) else { return nil }
        return String(validating: unescaped, as: UTF8.self)
    }

    /// Whether `text(token)` would give a String, without making one for plain ASCII.
    func isValidText(_ token: Token) -> Bool {
        if !token.escaped {
            var ascii = true
            for index in token.range {
                let byte = bytes[index]
                if byte < 0x20 { return false }
                if byte >= 0x80 { ascii = false }
            }
            if ascii { return true }
        }
        return text(token) != nil
    }

    /// Resolves the escapes of a string's contents to UTF-8 bytes.
    static func unescape(_ raw: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var k = 0
        while k < raw.count {
            let byte = raw[k]
            guard byte == backslash else {
                out.append(byte)
                k += 1
                continue
            }
            guard k + 1 < raw.count else { return nil }
            let code = raw[k + 1]
            k += 2
            switch code {
            case UInt8(ascii: "\""), backslash, UInt8(ascii: "/"): out.append(code)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                guard var scalar = hex4(raw, at: k) else { return nil }
                k += 4
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    // A high surrogate must be followed by an escaped low one.
                    guard k + 6 <= raw.count, raw[k] == backslash, raw[k + 1] == UInt8(ascii: "u"),
                        let low = hex4(raw, at: k + 2), low >= 0xDC00 && low < 0xE000
                    else { return nil }
                    k += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar < 0xE000 {
                    return nil
                }
                guard let unicode = Unicode.Scalar(scalar) else { return nil }
                out.append(contentsOf: UTF8.encode(unicode)!)
            default:
                return nil
            }
        }
        return out
    }

    private static func hex4(_ raw: UnsafeBufferPointer<UInt8>, at k: Int) -> UInt32? {
        guard k + 4 <= raw.count else { return nil }
        var value: UInt32 = 0
        for index in k..<(k + 4) {
            let c = raw[index]
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
            default: return nil
            }
            value = value << 4 | digit
        }
        return value
    }

    /// A non-negative integer token as UInt64; like JSONDecoder it also takes an integral value
    /// written with a fraction or exponent (1.0, 1e3), and rejects anything out of range.
    func unsigned(_ range: Range<Int>) -> UInt64? {
        var value: UInt64 = 0
        var plain = true
        for index in range {
            let c = bytes[index]
            guard c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") else {
                plain = false
                break
            }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(c - UInt8(ascii: "0")))
            if o1 || o2 { return nil }
            value = sum
        }
        if plain { return value }
        guard let text = String(validating: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self),
            let double = Double(text), double >= 0, double < 18_446_744_073_709_551_616.0,
            double.rounded(.towardZero) == double
        else { return nil }
        return UInt64(double)
    }
}
