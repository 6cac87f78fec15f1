// The pieces the in-memory Dropbox's adversarial listings and change pages share: random generators
// derived from the seed (so a failing seed replays), irregular page sizes, re-cased ancestors in
// path_display, and `deleted` entries for paths that never existed. Each is allowed by the contract
// (docs/DROPBOX-API.md, "Delta semantics"), which is why a client must cope with all of them.

import DropboxAPI

extension InMemoryDropboxStore {
    /// A generator for one adversarial decision, derived from the seed and `parts` (what is being
    /// decided: which listing, which change page), so the same call on the same account replays.
    func adversarialRandom(_ parts: UInt64...) -> SplitMix {
        var state = adversarialSeed
        for part in parts { state = FileContent.splitmix64(state ^ part) }
        return SplitMix(seed: state)
    }

    /// A page size for the `pages` mode: sometimes empty (when allowed), often a handful, otherwise
    /// anything up to `limit`, the way long-lived accounts page (docs/DROPBOX-API.md, "Page sizes").
    static func irregularPageSize(limit: Int, allowEmpty: Bool, _ random: inout SplitMix) -> Int {
        let roll = Int.random(in: 0..<100, using: &random)
        if roll < 10, allowEmpty { return 0 }
        if roll < 40 { return Int.random(in: 1...min(3, limit), using: &random) }
        return Int.random(in: 1...limit, using: &random)
    }

    /// `metadata` with every ancestor component of its path_display upper-, lower- or mixed-cased;
    /// the name, the last component and path_lower stay exact.
    static func caseDrifted(_ metadata: Metadata, _ random: inout SplitMix) -> Metadata {
        guard let display = metadata.pathDisplay else { return metadata }
        // Cut on bytes: a component may start with a combining mark, which joins "/" as a Character.
        var parts = display.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
        guard parts.count > 2 else { return metadata }
        for index in 1..<(parts.count - 1) {
            parts[index] = recased(parts[index], &random)
        }
        let drifted = parts.joined(separator: "/")
        switch metadata {
        case .file(var file):
            file.pathDisplay = drifted
            return .file(file)
        case .folder(var folder):
            folder.pathDisplay = drifted
            return .folder(folder)
        case .deleted(var deleted):
            deleted.pathDisplay = drifted
            return .deleted(deleted)
        }
    }

    private static func recased(_ component: String, _ random: inout SplitMix) -> String {
        switch Int.random(in: 0..<3, using: &random) {
        case 0: return component.uppercased()
        case 1: return component.lowercased()
        default:
            return component.map { Bool.random(using: &random) ? $0.uppercased() : $0.lowercased() }.joined()
        }
    }

    /// A `deleted` entry for a path that does not exist, "ghost-<n>.tmp" in the folder `parent`
    /// (a key; the folder itself may not exist either, then `parentDisplay` names it). nil in the
    /// unlikely case the name is taken.
    func ghostDelete(in parent: String, display parentDisplay: String, _ random: inout SplitMix) -> Metadata? {
        let name = "ghost-\(random.next() % 1_000_000_000).tmp"
        let key = parent + "/" + name
        guard entries[key] == nil else { return nil }
        return .deleted(DeletedMetadata(name: name, pathLower: key, pathDisplay: parentDisplay + "/" + name))
    }

    /// A folder below `scope` that does not exist: "ghost-dir-<n>", as (key, display).
    func ghostFolder(below scope: String, _ random: inout SplitMix) -> (key: String, display: String) {
        let name = "ghost-dir-\(random.next() % 1_000_000_000)"
        return (scope + "/" + name, displayPath(of: scope) + "/" + name)
    }

    /// Whether two keys lie on one branch (equal, or one an ancestor of the other), so the order
    /// of changes on them matters.
    static func related(_ a: String, _ b: String) -> Bool {
        DropboxPath.isWithin(a, b) || DropboxPath.isWithin(b, a)
    }
}
