// FoldKey skips Foundation for a name whose folding only lowers its ASCII letters (every other
// scalar stable under NFC and lower case, FoldKey.isStableScalar). A wrong range there would file
// a child under a key its name does not fold to, and lookups by name would miss it. So every
// stable scalar is checked against Foundation's own data: combining class 0, its own NFC, never
// a later part of any scalar's canonical decomposition (so it composes with nothing before it:
// no mark, no kana voicing sign, no Hangul vowel or final jamo, no Indic length sign), and
// against the full folding beside ASCII letters, upper and lower case.

import Foundation
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct FoldKeyQuickPathTests {
        static var stableScalars: [Unicode.Scalar] {
            var scalars: [Unicode.Scalar] = []
            for value in UInt32(0x80)...0x1FFFF where FoldKey.isStableScalar(value) {
                if let scalar = Unicode.Scalar(value) { scalars.append(scalar) }
            }
            return scalars
        }

        @Test func everyStableScalarFoldsAsFoundationFoldsIt() {
            var quick = 0
            for scalar in Self.stableScalars {
                let c = String(Character(scalar))
                for name in [c, "A\(c)", "\(c)Z", "x\(c)y.TXT", "\(c)\(c)"] {
                    let full = FoldKey.foldedByFoundation(name)
                    #expect(sameUTF8(FoldKey(name).folded, full), "U+\(String(scalar.value, radix: 16)) in \(name)")
                    #expect(FoldKey.folds(name, to: FoldKey(alreadyFolded: Substring(full))), "U+\(String(scalar.value, radix: 16))")
                    if FoldKey.foldsByLoweringASCII(name) { quick += 1 }
                }
            }
            // Most of them take the quick path (the upper-case letters among them do not).
            #expect(quick > 150_000, "\(quick)")
        }

        @Test func noStableScalarChangesUnderNFCOrHasAMarksClass() {
            for scalar in Self.stableScalars {
                let c = String(Character(scalar))
                #expect(scalar.properties.canonicalCombiningClass == .notReordered, "U+\(String(scalar.value, radix: 16))")
                #expect(sameUTF8(c.precomposedStringWithCanonicalMapping, c), "U+\(String(scalar.value, radix: 16))")
            }
        }

        /// A scalar that composes with the one before it is a later part of some scalar's canonical
        /// decomposition (ä = a + U+0308, が = か + U+3099, 각 = ᄀ + ᅡ + ᆨ): none of them is stable.
        @Test func noStableScalarIsALaterPartOfADecomposition() {
            var laterParts = Set<UInt32>()
            for value in UInt32(0x80)...0x2FFFF {
                guard let scalar = Unicode.Scalar(value) else { continue }
                let parts = String(Character(scalar)).decomposedStringWithCanonicalMapping.unicodeScalars
                for part in parts.dropFirst() { laterParts.insert(part.value) }
            }
            #expect(laterParts.contains(0x308) && laterParts.contains(0x3099) && laterParts.contains(0x11A8))
            let stable = laterParts.filter { FoldKey.isStableScalar($0) }
            #expect(stable.isEmpty, "\(stable.sorted().map { String($0, radix: 16) })")
        }

        /// A mark after a stable scalar, or a scalar outside the ranges, sends the name to the full
        /// folding, which composes it.
        @Test(arguments: [
            "e\u{301}", "\u{E9}\u{301}", "\u{3B1}\u{301}", "\u{304B}\u{3099}", "\u{AC00}\u{11A8}", "K\u{212A}",
            "\u{130}stanbul", "\u{3A3}\u{3A3}", "\u{C9}COLE", "\u{1E9E}", "\u{FB01}", "\u{212B}", "\u{F900}",
        ])
        func namesOutsideTheQuickPathAreFoldedInFull(name: String) {
            #expect(!FoldKey.foldsByLoweringASCII(name))
            let full = FoldKey.foldedByFoundation(name)
            #expect(sameUTF8(FoldKey(name).folded, full))
            #expect(FoldKey.folds(name, to: FoldKey(alreadyFolded: Substring(full))))
            #expect(!FoldKey.folds(name, to: FoldKey(alreadyFolded: Substring(name + "x"))))
        }

        /// The quick path still compares every byte: a key that differs anywhere is refused.
        @Test func theQuickPathRefusesOtherKeys() {
            let name = "Données 写真 😀 Ελληνικά.TXT"
            #expect(FoldKey.foldsByLoweringASCII(name) == false, "É-free but Ε is upper case")
            let lower = "données 写真 😀 ελληνικά.TXT"
            #expect(FoldKey.foldsByLoweringASCII(lower))
            let key = FoldKey.foldedByFoundation(lower)
            #expect(key == "données 写真 😀 ελληνικά.txt")
            #expect(FoldKey.folds(lower, to: FoldKey(alreadyFolded: Substring(key))))
            for wrong in ["données 写真 😀 ελληνικά.txu", "donnees 写真 😀 ελληνικά.txt", "données 写真 😀 ελληνικά.TXT", ""] {
                #expect(!FoldKey.folds(lower, to: FoldKey(alreadyFolded: Substring(wrong))), "\(wrong)")
            }
        }
    }
}
