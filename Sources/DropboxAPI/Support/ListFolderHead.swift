// The `cursor` and `has_more` of a list_folder reply, read from its raw bytes without decoding the
// entries. A listing is a chain: page N+1 can only be asked for with page N's cursor, which Dropbox
// sends after the entries. Decoding 2000 entries takes tens of milliseconds, so reading the cursor
// first lets the next request leave while the current page is still being decoded
// (DropboxHTTPClient+Listing.swift).
//
// This is a walk over the top-level object only: nested values are skipped with their strings and
// brackets balanced, so a "cursor" key inside an entry or a string is never taken for the real one.
// Anything unexpected (not an object, a truncated body, a duplicate key, an escaped cursor) gives
// nil, and the caller decodes the whole reply instead; the decoded values are checked against
// these anyway.

enum ListFolderHead {
    struct Head: Equatable {
        var cursor: String
        var hasMore: Bool
    }

    static func scan(_ bytes: [UInt8]) -> Head? {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = Scanner(bytes: buffer)
            return scanner.topLevel()
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0

        static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        static let openBrace = UInt8(ascii: "{"), closeBrace = UInt8(ascii: "}")
        static let openBracket = UInt8(ascii: "["), closeBracket = UInt8(ascii: "]")
        static let colon = UInt8(ascii: ":"), comma = UInt8(ascii: ",")

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func topLevel() -> Head? {
            skipSpace()
            guard take(Self.openBrace) else { return nil }
            var cursor: String?
            var hasMore: Bool?
            skipSpace()
            if peek() == Self.closeBrace {
                i += 1
            } else {
                while true {
                    skipSpace()
                    guard let key = string() else { return nil }
                    skipSpace()
                    guard take(Self.colon) else { return nil }
                    skipSpace()
                    if equal(key, "cursor") {
                        guard cursor == nil, let value = string(), !contains(value, Self.backslash) else { return nil }
                        cursor = String(decoding: bytes[value], as: UTF8.self)
                    } else if equal(key, "has_more") {
                        guard hasMore == nil else { return nil }
                        if literal("true") {
                            hasMore = true
                        } else if literal("false") {
                            hasMore = false
                        } else {
                            return nil
                        }
                    } else {
                        guard skipValue() else { return nil }
                    }
                    skipSpace()
                    if take(Self.comma) { continue }
                    guard take(Self.closeBrace) else { return nil }
                    break
                }
            }
            skipSpace()
            guard i == bytes.count, let cursor, let hasMore else { return nil }
            return Head(cursor: cursor, hasMore: hasMore)
        }

        private func peek() -> UInt8? { i < bytes.count ? bytes[i] : nil }

        private mutating func take(_ byte: UInt8) -> Bool {
            guard peek() == byte else { return false }
            i += 1
            return true
        }

        private mutating func skipSpace() {
            while i < bytes.count {
                switch bytes[i] {
                case 0x20, 0x09, 0x0A, 0x0D: i += 1
                default: return
                }
            }
        }

        /// A string's contents (between the quotes, escapes left as they are).
        private mutating func string() -> Range<Int>? {
            guard take(Self.quote) else { return nil }
            let start = i
            while i < bytes.count {
                switch bytes[i] {
                case Self.quote:
                    i += 1
                    return start..<(i - 1)
                case Self.backslash:
                    i += 2
                default:
                    i += 1
                }
            }
            return nil
        }

        private mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard i + count <= bytes.count else { return false }
            let matches = word.withUTF8Buffer { w in (0..<count).allSatisfy { bytes[i + $0] == w[$0] } }
            if matches { i += count }
            return matches
        }

        /// Skips any JSON value; nested objects and arrays are skipped whole, their strings too.
        private mutating func skipValue() -> Bool {
            guard let first = peek() else { return false }
            switch first {
            case Self.quote:
                return string() != nil
            case Self.openBrace, Self.openBracket:
                var depth = 0
                while i < bytes.count {
                    switch bytes[i] {
                    case Self.quote:
                        guard string() != nil else { return false }
                        continue
                    case Self.openBrace, Self.openBracket:
                        depth += 1
                    case Self.closeBrace, Self.closeBracket:
                        depth -= 1
                        if depth == 0 {
                            i += 1
                            return true
                        }
                    default:
                        break
                    }
                    i += 1
                }
                return false
            default:
                // A number, true, false or null: up to the next delimiter.
                let start = i
                while i < bytes.count {
                    switch bytes[i] {
                    case Self.comma, Self.closeBrace, Self.closeBracket, 0x20, 0x09, 0x0A, 0x0D:
                        return i > start
                    default:
                        i += 1
                    }
                }
                return false
            }
        }

        private func equal(_ range: Range<Int>, _ word: StaticString) -> Bool {
            word.withUTF8Buffer { w in range.count == w.count && zip(bytes[range], w).allSatisfy { $0 == $1 } }
        }

        private func contains(_ range: Range<Int>, _ byte: UInt8) -> Bool {
            bytes[range].contains(byte)
        }
    }
}
