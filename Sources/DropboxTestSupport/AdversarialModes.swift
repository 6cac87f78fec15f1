// The ways a fake Dropbox can be as unkind as the contract allows (docs/DROPBOX-API.md, "Delta
// semantics", "Listing order", "Page sizes", "Case folding"): Dropbox promises no listing order, no
// page size and no folding rule, so a fake that always lists parents first, sorted, in full pages,
// folding names like the client, hides the bugs real accounts find. Each mode is off by default;
// the names are the ones the HTTP fake accepts too.

import Foundation

/// Adversarial behaviours of a fake Dropbox, each allowed by the API contract.
public struct AdversarialModes: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Listing pages come in random order; change pages swap only entries on unrelated paths.
    public static let shuffle = AdversarialModes(rawValue: 1 << 0)
    /// Children before their parent: half of the folders listed after their subtree; a subtree
    /// journalled at once (a move, missing parents) is journalled children first.
    public static let lateParents = AdversarialModes(rawValue: 1 << 1)
    /// Page sizes anywhere in 0...limit, including empty pages with has_more.
    public static let pages = AdversarialModes(rawValue: 1 << 2)
    /// The last entries of a page come again at the start of the next.
    public static let repeats = AdversarialModes(rawValue: 1 << 3)
    /// The ancestor components of path_display re-cased at random, per entry.
    public static let caseDrift = AdversarialModes(rawValue: 1 << 4)
    /// path_lower folds differently from the client (final sigma, ß, ligatures, dotted i).
    public static let fold = AdversarialModes(rawValue: 1 << 5)
    /// `deleted` entries for paths that never existed.
    public static let ghostDeletes = AdversarialModes(rawValue: 1 << 6)
    /// A bogus entry of the other kind before the real one; replacements journal no `deleted` first.
    public static let replace = AdversarialModes(rawValue: 1 << 7)

    public static let all: AdversarialModes = [
        .shuffle, .lateParents, .pages, .repeats, .caseDrift, .fold, .ghostDeletes, .replace,
    ]

    /// Each mode with its command-line name, in a fixed order.
    static let named: [(name: String, mode: AdversarialModes)] = [
        ("shuffle", .shuffle), ("late-parents", .lateParents), ("pages", .pages), ("repeat", .repeats),
        ("case-drift", .caseDrift), ("fold", .fold), ("ghost-deletes", .ghostDeletes), ("replace", .replace),
    ]

    /// Parses a comma-separated list of mode names ("shuffle,late-parents", "all"); spaces around
    /// names and empty names are ignored (so "" is no mode), and an unknown name gives nil.
    public init?(names: String) {
        var modes: AdversarialModes = []
        for part in names.split(separator: ",") {
            let name = part.trimmingCharacters(in: .whitespaces)
            if name.isEmpty { continue }
            if name == "all" {
                modes.formUnion(.all)
            } else if let found = Self.named.first(where: { $0.name == name }) {
                modes.formUnion(found.mode)
            } else {
                return nil
            }
        }
        self = modes
    }

    /// The modes' names, comma-separated ("shuffle,pages"); "" for none.
    public var description: String {
        Self.named.filter { contains($0.mode) }.map(\.name).joined(separator: ",")
    }
}
