// The fuzz targets' checks, shared by two builds: scripts/fuzz compiles this folder with
// Fuzz/main.swift into a libFuzzer binary (-sanitize=fuzzer,address), and the unit tests compile it
// into DropboxAPITests, where FuzzRegressionTests replays every stored input (the seed corpus and
// the crashes kept in Fuzz/regressions) through the same checks. So this folder imports only
// Foundation and DropboxAPI: no Testing, no test support.
//
// A check returns nil when every property holds and a one-line account of the first that does not;
// the fuzz binary turns that into a crash, the replay test into a failed expectation. A decoder
// that traps (overflow, out-of-bounds index) crashes either way.

import Foundation

@testable import DropboxAPI

enum FuzzTarget: String, CaseIterable, Sendable {
    /// The byte-level list_folder decoder against JSONDecoder, and ListFolderHead (ListFolderFuzz.swift).
    case listFolder = "list_folder"
    /// JSONBytes against an independent grammar check and JSONDecoder's strings and numbers.
    case jsonScanner = "json_scanner"
    /// Error replies (status, headers, body) into DropboxError.
    case errorBody = "error_body"
    /// A download reply's header lines and its Dropbox-API-Result (FileMetadata).
    case apiResult = "api_result"
    /// Content-Range parsing and the checks of a download's bytes against the requested range.
    case contentRange = "content_range"
    /// Dropbox timestamps against a day-counting reference.
    case timestamp
    /// OAuth token endpoint replies: grants and errors.
    case oauthReply = "oauth_reply"
    /// A folder zip (files/download_zip) through ZipArchive.
    case zipArchive = "zip_archive"

    /// Runs the checks on one input. The buffer is the input exactly (no slack after it), so the
    /// address sanitizer sees any read past its end.
    func check(_ input: UnsafeBufferPointer<UInt8>) -> String? {
        switch self {
        case .listFolder: return ListFolderFuzz.check(input)
        case .jsonScanner: return JSONScannerFuzz.check(input)
        case .errorBody: return ErrorBodyFuzz.check(input)
        case .apiResult: return APIResultFuzz.check(input)
        case .contentRange: return ContentRangeFuzz.check(input)
        case .timestamp: return TimestampFuzz.check(input)
        case .oauthReply: return OAuthReplyFuzz.check(input)
        case .zipArchive: return ZipArchiveFuzz.check(input)
        }
    }

    /// `check` on bytes held elsewhere, copied into a buffer of exactly their size.
    func check(_ bytes: [UInt8]) -> String? {
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: bytes.count)
        defer { buffer.deallocate() }
        _ = buffer.initialize(from: bytes)
        return check(UnsafeBufferPointer(buffer))
    }
}

/// Values rendered so that two renderings are equal only when the values are identical: every
/// String as its UTF-8 bytes (Swift's `==` on String is canonical equivalence, so "é" and "e\u{301}"
/// are equal to it, and a decoder that normalized names would pass an `==` comparison), every other
/// leaf as its description, structs, enums and optionals field by field (through Mirror, so a field
/// added to a model is compared without editing this).
enum Exact {
    static func render(_ value: Any) -> String {
        var out = ""
        write(value, into: &out)
        return out
    }

    /// Bytes in hex, "[61 62]".
    static func bytes(_ bytes: some Sequence<UInt8>) -> String {
        "[" + bytes.map { String($0, radix: 16) }.joined(separator: " ") + "]"
    }

    private static func write(_ value: Any, into out: inout String) {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first else {
                out += "nil"
                return
            }
            out += "some("
            write(wrapped.value, into: &out)
            out += ")"
            return
        }
        if let text = value as? String {
            out += "utf8" + bytes(text.utf8)
            return
        }
        if mirror.children.isEmpty {
            out += "\(type(of: value)):\(value)"
            return
        }
        out += "\(type(of: value))("
        for child in mirror.children {
            out += (child.label ?? "_") + ":"
            write(child.value, into: &out)
            out += ","
        }
        out += ")"
    }
}

/// A JSON grammar check (RFC 8259) written apart from JSONBytes, so that the two can be compared.
/// With `lazyStrings` a string is only a quote, any bytes (a backslash taking the byte after it)
/// and a quote: what JSONBytes checks while it scans, since it validates a string's contents only
/// when a caller reads the value. Nesting deeper than `maxDepth` gives `.tooDeep`.
struct StrictJSON {
    enum Verdict: Equatable { case valid, invalid, tooDeep }

    private struct Failure: Error { var tooDeep: Bool }

    let b: UnsafeBufferPointer<UInt8>
    let lazyStrings: Bool
    let maxDepth: Int
    var i = 0

    static func check(_ bytes: UnsafeBufferPointer<UInt8>, lazyStrings: Bool, maxDepth: Int = 512) -> Verdict {
        var parser = StrictJSON(b: bytes, lazyStrings: lazyStrings, maxDepth: maxDepth)
        do {
            parser.space()
            try parser.value(depth: 0)
            parser.space()
            return parser.i == bytes.count ? .valid : .invalid
        } catch {
            return error.tooDeep ? .tooDeep : .invalid
        }
    }

    private var next: UInt8? { i < b.count ? b[i] : nil }

    private mutating func space() {
        while let c = next, c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { i += 1 }
    }

    private mutating func eat(_ c: UInt8) throws(Failure) {
        guard next == c else { throw Failure(tooDeep: false) }
        i += 1
    }

    private mutating func value(depth: Int) throws(Failure) {
        guard let c = next else { throw Failure(tooDeep: false) }
        switch c {
        case UInt8(ascii: "{"):
            guard depth < maxDepth else { throw Failure(tooDeep: true) }
            i += 1
            space()
            if next == UInt8(ascii: "}") {
                i += 1
                return
            }
            while true {
                space()
                try string()
                space()
                try eat(UInt8(ascii: ":"))
                space()
                try value(depth: depth + 1)
                space()
                if next == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                try eat(UInt8(ascii: "}"))
                return
            }
        case UInt8(ascii: "["):
            guard depth < maxDepth else { throw Failure(tooDeep: true) }
            i += 1
            space()
            if next == UInt8(ascii: "]") {
                i += 1
                return
            }
            while true {
                space()
                try value(depth: depth + 1)
                space()
                if next == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                try eat(UInt8(ascii: "]"))
                return
            }
        case UInt8(ascii: "\""): try string()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: try number()
        }
    }

    private mutating func literal(_ word: String) throws(Failure) {
        for c in word.utf8 { try eat(c) }
    }

    private static func isDigit(_ c: UInt8?) -> Bool { c.map { $0 >= 0x30 && $0 <= 0x39 } ?? false }

    private mutating func digits() throws(Failure) {
        guard Self.isDigit(next) else { throw Failure(tooDeep: false) }
        while Self.isDigit(next) { i += 1 }
    }

    private mutating func number() throws(Failure) {
        if next == UInt8(ascii: "-") { i += 1 }
        if next == UInt8(ascii: "0") {
            i += 1
        } else {
            try digits()
        }
        if next == UInt8(ascii: ".") {
            i += 1
            try digits()
        }
        if next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
            i += 1
            if next == UInt8(ascii: "+") || next == UInt8(ascii: "-") { i += 1 }
            try digits()
        }
    }

    private mutating func string() throws(Failure) {
        try eat(UInt8(ascii: "\""))
        let start = i
        while let c = next {
            if c == UInt8(ascii: "\"") {
                if !lazyStrings {
                    // Contents must be UTF-8 (escapes are ASCII, so checking the raw bytes is enough).
                    guard String(validating: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self) != nil else {
                        throw Failure(tooDeep: false)
                    }
                }
                i += 1
                return
            }
            if c == UInt8(ascii: "\\") {
                i += 1
                guard let e = next else { throw Failure(tooDeep: false) }
                i += 1
                if lazyStrings { continue }
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    break
                case UInt8(ascii: "u"):
                    for _ in 0..<4 {
                        guard let h = next, h.isHexDigit else { throw Failure(tooDeep: false) }
                        i += 1
                    }
                default:
                    throw Failure(tooDeep: false)
                }
                continue
            }
            if c < 0x20 && !lazyStrings { throw Failure(tooDeep: false) }
            i += 1
        }
        throw Failure(tooDeep: false)
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}

/// A reply written as text, the shape of the error_body and oauth_reply inputs:
///
///     STATUS[ WORD...]\n
///     Name: value\n        (header lines, as libcurl hands them over; HeaderLine parses each)
///     \n
///     body (every byte after the blank line)
///
/// Anything missing is empty: status 0 when the first line does not start with digits.
struct ReplyInput {
    var status = 0
    var words: [String] = []
    var headers = HTTPHeaders()
    var body: [UInt8] = []

    init(_ input: UnsafeBufferPointer<UInt8>) {
        var lines = Lines(input)
        if let first = lines.next() {
            let text = String(decoding: first, as: UTF8.self).trimmingSpaces
            let parts = text.split(separator: " ")
            if let digits = parts.first, digits.count <= 3, let status = Int(digits) { self.status = status }
            words = parts.dropFirst().map(String.init)
        }
        while let line = lines.next() {
            if line.allSatisfy({ $0 == 0x0D || $0 == 0x0A }) { break }
            if case .field(let field) = HeaderLine(UnsafeRawBufferPointer(line)) { headers.fields.append(field) }
        }
        body = Array(input[lines.offset...])
    }
}

/// Lines of a buffer, each with its "\n" (as libcurl's header callback gets them).
struct Lines {
    let input: UnsafeBufferPointer<UInt8>
    var offset = 0

    init(_ input: UnsafeBufferPointer<UInt8>) { self.input = input }

    mutating func next() -> UnsafeBufferPointer<UInt8>? {
        guard offset < input.count else { return nil }
        let start = offset
        while offset < input.count {
            offset += 1
            if input[offset - 1] == 0x0A { break }
        }
        return UnsafeBufferPointer(rebasing: input[start..<offset])
    }
}
