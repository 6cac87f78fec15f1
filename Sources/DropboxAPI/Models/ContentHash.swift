// A Dropbox content_hash kept as its 32 raw bytes (four words) instead of a 64-character String:
// at a million files that is 32 bytes instead of about 100 (docs/SWIFT-FUSE-NOTES.md, "Memory per
// entry").

/// The 256-bit Dropbox content hash of a file (docs/DROPBOX-API.md, "content_hash").
public struct ContentHash: Sendable, Hashable, CustomStringConvertible {
    public var w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64

    public init(bytes: some Collection<UInt8>) {
        precondition(bytes.count == 32, "a content hash is 32 bytes")
        var words: [UInt64] = [0, 0, 0, 0]
        for (i, byte) in bytes.enumerated() {
            words[i / 8] = words[i / 8] << 8 | UInt64(byte)
        }
        (w0, w1, w2, w3) = (words[0], words[1], words[2], words[3])
    }

    /// The hash from its four big-endian words (the fast path for stored hashes: no per-byte
    /// generic code, no array).
    public init(words w0: UInt64, _ w1: UInt64, _ w2: UInt64, _ w3: UInt64) {
        (self.w0, self.w1, self.w2, self.w3) = (w0, w1, w2, w3)
    }

    /// Parses 64 hex digits (either case); nil for anything else.
    public init?(hex: String) {
        var copy = hex
        guard let parsed = copy.withUTF8({ Self(hexDigits: $0) }) else { return nil }
        self = parsed
    }

    /// Parses 64 hex digits given as UTF-8 bytes (either case); nil for anything else.
    init?(hexDigits utf8: UnsafeBufferPointer<UInt8>) {
        guard utf8.count == 64 else { return nil }
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        for w in 0..<4 {
            var word: UInt64 = 0
            for k in 0..<16 {
                guard let digit = Self.nibble(utf8[w * 16 + k]) else { return nil }
                word = word << 4 | UInt64(digit)
            }
            switch w {
            case 0: words.0 = word
            case 1: words.1 = word
            case 2: words.2 = word
            default: words.3 = word
            }
        }
        (w0, w1, w2, w3) = words
    }

    public var bytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(32)
        for word in [w0, w1, w2, w3] {
            for shift in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
            }
        }
        return out
    }

    /// Lowercase hex, as Dropbox writes it.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public var description: String { hex }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

extension ContentHash: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = ContentHash(hex: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "content_hash is not 64 hex digits"))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}
