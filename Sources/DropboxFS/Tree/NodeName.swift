// The only way a name from Dropbox enters the tree ("parse, don't validate"). Linux carries a name
// as at most 255 bytes with no '/' and no NUL, and the kernel fails a WHOLE readdir with EIO when one
// entry's name is empty or contains '/'. So a name the kernel cannot carry is rejected here, once,
// and the entry is hidden (with a single warning) instead of breaking the listing.

/// A file name the kernel can carry: non-empty, not "." or "..", no '/' or NUL, at most 255 UTF-8
/// bytes. Swift strings are always valid UTF-8, and JSON decoding already replaced anything else.
public struct NodeName: Sendable, Hashable, CustomStringConvertible {
    public static let maxBytes = 255

    public let string: String

    public enum Rejection: Error, Sendable, Equatable, CustomStringConvertible {
        case empty, dot, dotDot, containsSlash, containsNUL, tooLong(bytes: Int)

        public var description: String {
            switch self {
            case .empty: return "the name is empty"
            case .dot, .dotDot: return "the name is a reserved directory name"
            case .containsSlash: return "the name contains '/'"
            case .containsNUL: return "the name contains a NUL byte"
            case .tooLong(let bytes): return "the name is \(bytes) bytes long (Linux allows \(NodeName.maxBytes))"
            }
        }
    }

    public static func parse(_ raw: String) -> Result<NodeName, Rejection> {
        let utf8 = raw.utf8
        if utf8.isEmpty { return .failure(.empty) }
        if utf8.count > maxBytes { return .failure(.tooLong(bytes: utf8.count)) }
        if utf8.elementsEqual(".".utf8) { return .failure(.dot) }
        if utf8.elementsEqual("..".utf8) { return .failure(.dotDot) }
        for byte in utf8 {
            if byte == UInt8(ascii: "/") { return .failure(.containsSlash) }
            if byte == 0 { return .failure(.containsNUL) }
        }
        return .success(NodeName(unchecked: raw))
    }

    public init?(_ raw: String) {
        guard case .success(let name) = Self.parse(raw) else { return nil }
        self = name
    }

    private init(unchecked: String) { self.string = unchecked }

    public var description: String { string }

    // Names compare as bytes: Swift's String equality would merge NFC and NFD spellings.
    public static func == (lhs: Self, rhs: Self) -> Bool { sameUTF8(lhs.string, rhs.string) }

    public func hash(into hasher: inout Hasher) { hashUTF8(string, into: &hasher) }
}
