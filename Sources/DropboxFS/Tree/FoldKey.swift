// Dropbox is case-insensitive and NFC-normalising: "Café.txt", "café.TXT" and the NFD spelling of
// "café.txt" are one entry, which Dropbox keys by its `path_lower`. The tree keys a folder's children
// by the components of that `path_lower`, taken as Dropbox sent them (`init(alreadyFolded:)`), so
// deltas (which carry only paths) find the node they change whatever folding Dropbox applies (its
// rules are its own: final sigma, dotted I, ß and other scripts need not match ours). The client's
// own folding, `init(_:)` (NFC then per-scalar lowercase; ASCII names skip Foundation), is only a
// guess of that key: the tree tries it first when looking a name up and keeps the few children whose
// real key differs in FolderState.odd (docs/SEMANTICS.md, "Names").

import Foundation

/// A case- and normalization-folded name, compared and hashed by its UTF-8 bytes (never by
/// Swift's canonical-equivalence String equality).
public struct FoldKey: Sendable, Hashable, CustomStringConvertible {
    public let folded: String

    public init(_ name: String) {
        if isASCII(name) {
            var needsLowering = false
            for byte in name.utf8 where byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") {
                needsLowering = true
                break
            }
            folded = needsLowering ? String(decoding: name.utf8.map { Self.lowerASCII($0) }, as: UTF8.self) : name
        } else {
            let result = name.precomposedStringWithCanonicalMapping.lowercased().precomposedStringWithCanonicalMapping
            // An already-folded name keeps sharing the name's storage instead of a second copy.
            folded = result.utf8.elementsEqual(name.utf8) ? name : result
        }
    }

    /// The key for a component that is already Dropbox's own folding (a `path_lower` component),
    /// kept exactly as it is.
    public init(alreadyFolded component: Substring) {
        folded = String(component)
    }

    /// The key `folded`, sharing that string's storage (MetadataTree files a child whose key is
    /// its own name under the name's string, so a million entries keep one copy of each).
    init(sharing folded: String) {
        self.folded = folded
    }

    /// Whether `key` is the folding of `name` (`FoldKey(name) == key`), without building the
    /// folding of an ASCII name: the ChildTable checks its candidates with this. A name with any
    /// non-ASCII byte is folded in full: there an ASCII letter may compose with a mark after it
    /// (a + U+0308 is ä), so no byte-wise shortcut is safe.
    static func folds(_ name: String, to key: FoldKey) -> Bool {
        guard isASCII(name) else { return sameUTF8(FoldKey(name).folded, key.folded) }
        let (n, k) = (name.utf8, key.folded.utf8)
        return n.count == k.count && zip(n, k).allSatisfy { lowerASCII($0) == $1 }
    }

    private static func lowerASCII(_ b: UInt8) -> UInt8 {
        b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z") ? b + 32 : b
    }

    public var description: String { folded }

    public static func == (lhs: Self, rhs: Self) -> Bool { sameUTF8(lhs.folded, rhs.folded) }

    public func hash(into hasher: inout Hasher) { hashUTF8(folded, into: &hasher) }
}

/// Whether two strings have the same UTF-8 bytes (not Swift's canonical equivalence, which would
/// merge NFC and NFD spellings): a length check, then one memcmp of contiguous storage. The
/// generic `utf8.elementsEqual` walks byte by byte, and the fill calls this for every entry.
@inline(__always)
func sameUTF8(_ a: String, _ b: String) -> Bool {
    let (x, y) = (a.utf8, b.utf8)
    guard x.count == y.count else { return false }
    let fast: Bool? = x.withContiguousStorageIfAvailable { p in
        y.withContiguousStorageIfAvailable { q in
            p.count == 0 || memcmp(p.baseAddress!, q.baseAddress!, p.count) == 0
        }
    } ?? nil
    return fast ?? x.elementsEqual(y)
}

/// Whether a string is all ASCII (its folding is then a byte-wise lower-casing).
@inline(__always)
func isASCII(_ string: String) -> Bool {
    string.utf8.withContiguousStorageIfAvailable { bytes in !bytes.contains { $0 >= 0x80 } }
        ?? !string.utf8.contains { $0 >= 0x80 }
}

/// Whether `a`'s UTF-8 bytes sort before `b`'s (memcmp order, shorter first on a common prefix):
/// the order of folder listings, sorted at each listing piece of a small folder.
@inline(__always)
func precedesUTF8(_ a: String, _ b: String) -> Bool {
    let (x, y) = (a.utf8, b.utf8)
    let fast: Bool? = x.withContiguousStorageIfAvailable { p in
        y.withContiguousStorageIfAvailable { q in
            let common = min(p.count, q.count)
            let order = common == 0 ? 0 : memcmp(p.baseAddress!, q.baseAddress!, common)
            return order != 0 ? order < 0 : p.count < q.count
        }
    } ?? nil
    return fast ?? x.lexicographicallyPrecedes(y)
}

/// Feeds a string's UTF-8 bytes to a hasher in one call (byte identity, not canonical equivalence).
@inline(__always)
func hashUTF8(_ string: String, into hasher: inout Hasher) {
    let done: Void? = string.utf8.withContiguousStorageIfAvailable {
        hasher.combine(bytes: UnsafeRawBufferPointer($0))
    }
    if done == nil {
        for byte in string.utf8 { hasher.combine(byte) }
    }
    hasher.combine(string.utf8.count)
}

/// A name compared and hashed by its exact UTF-8 bytes: the key of OddKeys.byName, which
/// finds a child by the bytes a lookup gives.
struct ExactName: Hashable {
    let string: String

    init(_ string: String) { self.string = string }

    static func == (lhs: Self, rhs: Self) -> Bool { sameUTF8(lhs.string, rhs.string) }

    func hash(into hasher: inout Hasher) { hashUTF8(string, into: &hasher) }
}
