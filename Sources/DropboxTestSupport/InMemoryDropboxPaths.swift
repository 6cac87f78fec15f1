// Path handling for the in-memory Dropbox: the client's path_lower key (lowercased, NFC), parent keys,
// and the parsing of the path strings the API accepts ("" root, "/a/b", "id:...", "rev:..."). Every
// lookup in the fake goes through these functions and the store's PathFolding, so the fake is
// case-insensitive in one place.

import DropboxAPI
import Foundation

enum DropboxPath {
    /// The path_lower form of a display path as the client folds it: lowercased, then NFC. The
    /// store folds through its PathFolding, which is this unless the `fold` mode is on.
    static func key(_ path: String) -> String {
        let lowered = path.lowercased()
        if lowered.utf8.allSatisfy({ $0 < 0x80 }) { return lowered }
        return lowered.precomposedStringWithCanonicalMapping
    }

    /// The key of the folder holding `key` ("" for a top-level entry).
    static func parent(of key: String) -> String {
        guard let slash = key.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return String(key[..<slash])
    }

    /// The last component of a path.
    static func name(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// True when `key` is `ancestor` or lies below it ("" is the root and contains everything).
    static func isWithin(_ key: String, _ ancestor: String) -> Bool {
        ancestor.isEmpty || key == ancestor || key.hasPrefix(ancestor + "/")
    }

    /// The components of a display path given to a builder ("/a/b" -> ["a", "b"]), which must start
    /// with "/" and name something below the root. Repeated slashes are collapsed.
    static func builderComponents(_ path: String) -> [String] {
        precondition(path.hasPrefix("/"), "InMemoryDropbox paths start with \"/\": \(path)")
        let parts = path.split(separator: "/").map(String.init)
        precondition(!parts.isEmpty, "the root cannot be added or changed: \(path)")
        return parts
    }

    /// An API path, parsed.
    enum Parsed: Equatable {
        case root
        /// A path key (already folded).
        case key(String)
        /// A whole "id:..." with an optional "/rest" below the identified folder (as a key).
        case id(String, rest: String)
        case rev(String)
    }

    /// Parses a path argument as Dropbox does, folding path keys with `folding`. "/" is rejected with
    /// 400, as the real service does; repeated slashes are collapsed (rclone sends "//a"). A path of
    /// none of the forms the routes' argument patterns allow ("/...", "id:...", "rev:" and at least
    /// nine lower-case hex digits, "ns:" and digits) is a 400 too: Dropbox checks the pattern before
    /// it looks anything up. "ns:N/a/b" is "/a/b" when N is one of `namespaces` (this fake holds one
    /// tree, the account's root and home namespace alike), and finds nothing otherwise. Other
    /// unrecognised paths (a trailing slash) are malformed.
    static func parse(_ path: String, folding: PathFolding, namespaces: Set<String>) -> Result<Parsed, DropboxError> {
        if path.isEmpty { return .success(.root) }
        if path == "/" { return .failure(.badRequest(message: "path: '/' is not a valid path; use \"\" for the root")) }
        if path.hasPrefix("id:") {
            guard let slash = path.firstIndex(of: "/") else { return .success(.id(path, rest: "")) }
            guard let rest = collapse(String(path[slash...])) else { return .failure(.lookup(.malformedPath)) }
            return .success(.id(String(path[..<slash]), rest: folding.key(rest)))
        }
        if path.hasPrefix("rev:") {
            let rev = path.dropFirst(4)
            guard rev.utf8.count >= 9, rev.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
            else { return .failure(patternMismatch(path)) }
            return .success(.rev(String(rev)))
        }
        if path.hasPrefix("ns:") {
            let rest = path.dropFirst(3)
            let digits = rest.prefix { $0 != "/" }
            guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                return .failure(patternMismatch(path))
            }
            guard namespaces.contains(String(digits)) else { return .failure(.lookup(.notFound)) }
            let below = rest.dropFirst(digits.count)
            if below.isEmpty { return .success(.root) }
            guard let collapsed = collapse(String(below)) else { return .failure(.lookup(.malformedPath)) }
            return .success(.key(folding.key(collapsed)))
        }
        guard path.hasPrefix("/") else { return .failure(patternMismatch(path)) }
        guard let collapsed = collapse(path) else { return .failure(.lookup(.malformedPath)) }
        return .success(.key(folding.key(collapsed)))
    }

    /// The 400 for a path argument that matches none of the route's patterns.
    static func patternMismatch(_ path: String) -> DropboxError {
        .badRequest(message: "path: '\(path)' did not match the pattern of Dropbox paths")
    }

    /// "/a//b" -> "/a/b"; nil when a trailing slash or nothing but slashes remains.
    private static func collapse(_ path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.last?.isEmpty == false else { return nil }
        let kept = parts.filter { !$0.isEmpty }
        return kept.isEmpty ? nil : "/" + kept.joined(separator: "/")
    }
}
