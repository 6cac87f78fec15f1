// How the in-memory Dropbox folds a display path into its path_lower, the key of every lookup. By
// default it folds exactly like the client (lowercase, then NFC). Dropbox documents no folding rule
// (docs/DROPBOX-API.md, "Case folding"), so the adversarial `fold` mode uses one that differs from
// the client's where real servers plausibly do: whole-string lowercasing with the Greek final-sigma
// rule (as Python's str.lower() does), ß -> ss, the ﬁ/ﬂ ligatures split, and i + combining dot
// above -> i. The fold is a property of the store, so builders, lookups and path arguments all
// agree with it.

import Foundation

enum PathFolding: Sendable {
    /// Lowercased then NFC, each scalar without context: the client's own folding.
    case client
    /// NFC, lowercased as a whole string with the final-sigma rule, then ß -> ss, ﬁ -> fi,
    /// ﬂ -> fl, i + U+0307 -> i, then NFC again (so folding a path_lower changes nothing).
    case contextual

    func key(_ path: String) -> String {
        switch self {
        case .client: return DropboxPath.key(path)
        case .contextual: return Self.contextualKey(path)
        }
    }

    private static func contextualKey(_ path: String) -> String {
        if path.utf8.allSatisfy({ $0 < 0x80 }) { return path.lowercased() }
        let scalars = Array(path.precomposedStringWithCanonicalMapping.unicodeScalars)
        var out = String.UnicodeScalarView()
        for (index, scalar) in scalars.enumerated() {
            switch scalar {
            case "\u{3A3}":
                out.append(isFinalSigma(scalars, at: index) ? "\u{3C2}" : "\u{3C3}")
            default:
                for lowered in scalar.properties.lowercaseMapping.unicodeScalars {
                    switch lowered {
                    case "\u{DF}": out.append(contentsOf: "ss".unicodeScalars)
                    case "\u{FB01}": out.append(contentsOf: "fi".unicodeScalars)
                    case "\u{FB02}": out.append(contentsOf: "fl".unicodeScalars)
                    case "\u{307}" where out.last == "i": continue
                    default: out.append(lowered)
                    }
                }
            }
        }
        return String(out).precomposedStringWithCanonicalMapping
    }

    /// Unicode's Final_Sigma condition: a cased letter before the sigma and none after it, skipping
    /// case-ignorable scalars (combining marks, apostrophes, periods) on both sides. So "ΑΣ" and
    /// "ΑΣ'" end in ς; "Σ", "ΣΑ" and "ΑΣ.txt" keep σ; "/" ends a word.
    private static func isFinalSigma(_ scalars: [Unicode.Scalar], at index: Int) -> Bool {
        var before = index - 1
        while before >= 0, scalars[before].properties.isCaseIgnorable { before -= 1 }
        guard before >= 0, scalars[before].properties.isCased else { return false }
        var after = index + 1
        while after < scalars.count, scalars[after].properties.isCaseIgnorable { after += 1 }
        return after == scalars.count || !scalars[after].properties.isCased
    }
}
