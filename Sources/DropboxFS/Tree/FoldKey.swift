// Dropbox is case-insensitive and NFC-normalising: "Café.txt", "café.TXT" and the NFD spelling of
// "café.txt" are one entry, which Dropbox keys by its `path_lower`. The tree keys a folder's children
// by the components of that `path_lower`, taken as Dropbox sent them (`init(alreadyFolded:)`), so
// deltas (which carry only paths) find the node they change whatever folding Dropbox applies (its
// rules are its own: final sigma, dotted I, ß and other scripts need not match ours). The client's
// own folding, `init(_:)` (NFC then per-scalar lowercase; names whose folding only lowers ASCII
// letters skip Foundation), is only a guess of that key: the tree tries it first when looking a
// name up and keeps the few children whose real key differs in FolderState.odd (docs/SEMANTICS.md,
// "Names").

import Foundation

/// A case- and normalization-folded name, compared and hashed by its UTF-8 bytes (never by
/// Swift's canonical-equivalence String equality).
public struct FoldKey: Sendable, Hashable, CustomStringConvertible {
    public let folded: String

    public init(_ name: String) {
        if isASCII(name) || Self.foldsByLoweringASCII(name) {
            var needsLowering = false
            for byte in name.utf8 where byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") {
                needsLowering = true
                break
            }
            folded = needsLowering ? String(decoding: name.utf8.map { Self.lowerASCII($0) }, as: UTF8.self) : name
        } else {
            let result = Self.foldedByFoundation(name)
            // An already-folded name keeps sharing the name's storage instead of a second copy.
            folded = result.utf8.elementsEqual(name.utf8) ? name : result
        }
    }

    /// The folding in full: NFC, per-scalar lower case, NFC again (Foundation's normalization,
    /// about 3 µs a name).
    static func foldedByFoundation(_ name: String) -> String {
        name.precomposedStringWithCanonicalMapping.lowercased().precomposedStringWithCanonicalMapping
    }

    /// Whether folding `name` only lowers its ASCII letters: each other scalar is one that NFC
    /// keeps as it is wherever it stands and that lower-casing leaves alone (`isStableScalar`).
    /// Most non-ASCII names are (accented Latin, Greek, Cyrillic, kana, CJK, Hangul syllables,
    /// emoji), and the fill checks a million names against their keys; the others are folded in
    /// full. FoldKeyQuickPathTests checks every stable scalar against Foundation.
    static func foldsByLoweringASCII(_ name: String) -> Bool {
        for scalar in name.unicodeScalars where !scalar.isASCII {
            guard isStableScalar(scalar.value), !scalar.properties.changesWhenLowercased else { return false }
        }
        return true
    }

    /// Assigned scalars (Unicode 14) that NFC never changes and never composes with what comes
    /// before them: combining class 0, their own NFC, and not the second half of any canonical
    /// composition (so no mark, no Hangul vowel or final jamo, no Indic or kana voicing sign).
    /// Derived with Python's unicodedata; a scalar outside these ranges is folded in full.
    @inline(__always)
    static func isStableScalar(_ value: UInt32) -> Bool {
        switch value {
        case 0xA0...0x24F,  // Latin-1 Supplement, Latin Extended-A and -B
            0x370...0x373, 0x375...0x377, 0x37A...0x37D, 0x37F, 0x384...0x386, 0x388...0x38A, 0x38C,
            0x38E...0x3A1, 0x3A3...0x3FF,  // Greek and Coptic, without ano teleia and the like
            0x400...0x482, 0x48A...0x4FF,  // Cyrillic, without its combining marks
            0x3041...0x3096, 0x309B...0x30FF,  // Hiragana and Katakana, without the voicing marks
            0x4E00...0x9FFF,  // CJK Unified Ideographs
            0xAC00...0xD7A3,  // Hangul syllables
            0x1F300...0x1F6D7, 0x1F900...0x1FA53:  // emoji and pictographs
            return true
        default:
            return false
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
    /// folding of a name whose folding only lowers ASCII letters: the ChildTable checks its
    /// candidates with this. Any other name is folded in full: there an ASCII letter may compose
    /// with a mark after it (a + U+0308 is ä), so no byte-wise shortcut is safe.
    static func folds(_ name: String, to key: FoldKey) -> Bool {
        guard isASCII(name) || foldsByLoweringASCII(name) else { return sameUTF8(foldedByFoundation(name), key.folded) }
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
