// A loosely typed JSON value, used only where Dropbox's open unions must be read tag by tag: error
// envelopes, whose shapes vary by route and grow new tags over time.

import Foundation

enum JSONValue: Sendable, Equatable, Decodable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let n = try? c.decode(Double.self) {
            self = .number(n)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    /// Parses `bytes`, or nil when they are not JSON.
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
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
