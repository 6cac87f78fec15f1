// A loosely typed JSON value, used only where Dropbox's open unions must be read tag by tag: error
// envelopes, whose shapes vary by route and grow new tags over time.
//
// It is built by the byte-level reader (JSONBytes.swift), which picks each value's kind from its
// first byte: the work is linear in the size of the body. (Decoding it through Decodable had to try
// each kind in turn, and the failed tries multiplied with the nesting: a 24 KB 409 body of nested
// arrays took seconds.) An error body is small; one over `maxParsedBytes` is not read at all and
// counts as not JSON.

enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The largest body `parse` reads.
    static let maxParsedBytes = 64 * 1024

    /// Parses `bytes`, or nil when they are not JSON or longer than `maxParsedBytes`.
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        guard bytes.count <= maxParsedBytes else { return nil }
        return bytes.withUnsafeBufferPointer { buffer -> JSONValue? in
            var reader = JSONBytes(buffer)
            do throws(JSONBytes.SyntaxError) {
                let value = try read(&reader, depth: 0)
                reader.skipSpace()
                return reader.atEnd ? value : nil
            } catch {
                return nil
            }
        }
    }

    /// One value of any kind, its kind chosen by its first byte.
    private static func read(_ r: inout JSONBytes, depth: Int) throws(JSONBytes.SyntaxError) -> JSONValue {
        r.skipSpace()
        guard let first = r.peek() else { throw JSONBytes.SyntaxError() }
        switch first {
        case JSONBytes.quote:
            guard let text = r.text(try r.string()) else { throw JSONBytes.SyntaxError() }
            return .string(text)
        case JSONBytes.openBrace:
            guard depth < JSONBytes.maxDepth else { throw JSONBytes.SyntaxError() }
            var fields: [String: JSONValue] = [:]
            try r.members { r, key throws(JSONBytes.SyntaxError) in
                guard let name = r.text(key) else { throw JSONBytes.SyntaxError() }
                fields[name] = try read(&r, depth: depth + 1)
            }
            return .object(fields)
        case JSONBytes.openBracket:
            guard depth < JSONBytes.maxDepth else { throw JSONBytes.SyntaxError() }
            var elements: [JSONValue] = []
            try r.elements { r throws(JSONBytes.SyntaxError) in elements.append(try read(&r, depth: depth + 1)) }
            return .array(elements)
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            return .bool(try r.bool())
        case UInt8(ascii: "n"):
            guard r.takeNull() else { throw JSONBytes.SyntaxError() }
            return .null
        default:
            let range = try r.number()
            guard let number = Double(String(decoding: UnsafeBufferPointer(rebasing: r.bytes[range]), as: UTF8.self))
            else { throw JSONBytes.SyntaxError() }
            return .number(number)
        }
    }

    subscript(key: String) -> JSONValue? {
        if case .object(let fields) = self { return fields[key] }
        return nil
    }

    var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    var number: Double? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// The tag of a union value: `.tag` of an object, or the value itself for a void member
    /// written as a bare string.
    var unionTag: String? {
        switch self {
        case .string(let s): return s
        case .object(let fields): return fields[".tag"]?.string
        default: return nil
        }
    }

    /// The member nested under the key named after this union's tag (`{".tag":"path","path":{...}}`).
    var unionValue: JSONValue? {
        guard let tag = unionTag else { return nil }
        return self[tag]
    }
}
