// "Available offline" through the mount (Offline/OfflineKeeper.swift). The mount is read-only (the
// kernel refuses setxattr before the daemon sees it), so `dropboxfs pin`, `unpin` and `pinned` talk
// to the daemon the way `dropboxfs status` does: by reading extended attributes. Reading
// `user.dropboxfs.pin.NONCE` of an entry pins it, `user.dropboxfs.unpin.NONCE` unpins it, and the
// root's `user.dropboxfs.pins` lists the pins; each answer is the text the command prints.
//
// A read with an effect must happen once per request, whoever reads it how often: `getfattr`
// reads a name twice (its size, then its value), a program may retry. So a request names itself
// with a nonce of the caller's (8 to 64 letters, digits, `-` or `_`; the CLI makes a random one),
// and `pinAnswers` keeps the answers of the last requests by nonce: the same name read again
// answers the same text and does nothing more. A bare `user.dropboxfs.pin` (an older CLI's, or
// typed by hand) is refused with a message, never carried out. These names are never listed
// (listxattr), so `getfattr -d` and file managers never trigger them. The listed one,
// `user.dropboxfs.offline`, says of an entry under a pin whether its contents are on disk.
//
// `pinAnswers` (a Mutex) is taken alone, never across a pin request: two reads of one new nonce
// at the very same moment could both carry it out (a pin or unpin done twice has the effect of
// one; only the second answer's text differs).

import Synchronization

extension Filesystem {
    public static let pinRequestAttribute = "user.dropboxfs.pin"
    public static let unpinRequestAttribute = "user.dropboxfs.unpin"
    public static let pinsAttribute = "user.dropboxfs.pins"
    public static let offlineAttribute = "user.dropboxfs.offline"

    /// The answers of the last pin requests, by nonce and entry.
    struct PinAnswers {
        static let kept = 64
        var answers: [String: String] = [:]
        var order: [String] = []

        mutating func remember(_ key: String, _ answer: String) {
            if answers.updateValue(answer, forKey: key) == nil { order.append(key) }
            while order.count > Self.kept { answers[order.removeFirst()] = nil }
        }
    }

    /// The name of a request of `kind` (`pinRequestAttribute` or `unpinRequestAttribute`) with
    /// `nonce`, as the CLI reads it.
    public static func requestAttribute(_ kind: String, nonce: String) -> String { kind + "." + nonce }

    /// The answer of a pin request attribute read on `index`; nil when `name` is none of them.
    func pinRequest(_ name: String, of index: UInt32) throws(FilesystemError) -> String? {
        if name == Self.pinsAttribute {
            guard index == MetadataTree.rootIndex else { return nil }
            return offline.reports().map(\.line).joined(separator: "\n")
        }
        guard let (kind, nonce) = Self.request(name) else { return nil }
        guard let nonce else {
            _ = try existing(index)
            return "refused: this dropboxfs takes pin requests from `dropboxfs pin` and `dropboxfs unpin` only "
                + "(a request read by hand names itself: \(kind).SOME-NONCE)"
        }
        let key = "\(nonce)/\(index)"
        if let earlier = pinAnswers.withLock({ $0.answers[key] }) { return earlier }
        let answer = kind == Self.pinRequestAttribute ? offline.pin(try existing(index)) : offline.unpin(try existing(index))
        pinAnswers.withLock { $0.remember(key, answer) }
        return answer
    }

    /// A request name's kind and nonce (nil for a bare name); nil when `name` is no request.
    static func request(_ name: String) -> (kind: String, nonce: String?)? {
        for kind in [pinRequestAttribute, unpinRequestAttribute] {
            if name == kind { return (kind, nil) }
            guard name.hasPrefix(kind + ".") else { continue }
            let nonce = name.dropFirst(kind.count + 1)
            let valid = (8...64).contains(nonce.count) && nonce.unicodeScalars.allSatisfy { scalar in
                scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_")
            }
            return valid ? (kind, String(nonce)) : nil
        }
        return nil
    }

    /// `user.dropboxfs.offline` of `index`, when a pin covers it.
    func offlineAttributes(of index: UInt32) -> [(name: String, value: String)] {
        offline.attribute(of: index).map { [(Self.offlineAttribute, $0)] } ?? []
    }

    private func existing(_ index: UInt32) throws(FilesystemError) -> UInt32 {
        guard tree.read({ $0.tree.node(index) != nil }) else { throw .stale }
        return index
    }
}
