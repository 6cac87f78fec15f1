// One record per Dropbox entry, stored in the MetadataTree's NodeStore and addressed by its index,
// which is also the inode number the kernel sees. A struct in chunked storage (no class per entry)
// keeps a million entries compact (docs/SWIFT-FUSE-NOTES.md "Memory per entry";
// docs/PERFORMANCE.md): the `id` is packed into 17 bytes, a hex `rev` of up to 16 digits into a
// UInt64, the two times into 32 bits each (seconds from 1970 to 2106), the content hash is 32 raw
// bytes, and folder-only state lives in the tree's FolderState table, indexed by `folderSlot`.
// Whatever does not pack (an odd id or rev, a time outside that range) is kept as is in a
// NodeSpill, which almost no node has. The nodes are guarded by whatever guards their MetadataTree
// (LiveTree.state).

import DropboxAPI

public enum NodeKind: UInt8, Sendable {
    case file, folder, symlink
}

/// A folder's access level as Dropbox reports it in `sharing_info`: a team folder may let a
/// member only pass through it to the subfolders they were given (`traverse_only`), or not enter
/// it at all (`no_access`).
public enum FolderAccess: Sendable, Equatable {
    case full, traverseOnly, noAccess

    init(_ folder: FolderMetadata) {
        self = folder.noAccess ? .noAccess : folder.traverseOnly ? .traverseOnly : .full
    }
}

/// What a folder knows about its children.
struct FolderState {
    /// Children by Dropbox's key (the last component of their `path_lower`), as node indices.
    var children = ChildTable()
    /// The children whose Dropbox key is not the client's folding of their name (FoldKey); nil for
    /// almost every folder (Dropbox's folding agrees with ours for most names).
    var odd: OddKeys?
    /// The folder's own key in its parent when its name is not ASCII and not its key: a path walk
    /// (each entry of a listing finds its parent by its `path_lower`) then compares it as bytes
    /// instead of folding the name through Foundation at every step (MetadataTree.child). A
    /// rename keeps the entry's key, so this never changes while the folder is attached.
    var ownKey: String?
    /// True once every child is known: a missing name is then answered without a request.
    var complete = false
    /// The folder was complete before a cursor reset marked it incomplete (`markAllIncomplete`):
    /// the kernel may still hold "no such name" answers it gave then.
    var wasComplete = false
    /// Whether the kernel may hold "no such name" answers or a listing of this folder, so its
    /// changes must be invalidated.
    var kernelMayKnowNames: Bool { complete || wasComplete }
    /// When the folder's listing completed (monotonic seconds), for expiry without a watcher.
    var listedAt: Double = 0
    /// The snapshot sequence of the newest listing applied to the folder: a folder listing's, or a
    /// recursive listing's that completed it (SyncEngine.State.nextEpoch; docs/SEMANTICS.md,
    /// "Listings in flight"). A listing that started before it never lands over it. 0: none since
    /// the tree was made or restored (every listing of this mount is newer than a stored tree).
    var snapshot: UInt32 = 0
    /// Bumped whenever the set of children (or a child's name) changes.
    var version: UInt32 = 0
    /// Bumped with every change of the children that is published as a kernel invalidation (and
    /// at a cursor reset): the folder's mtime nanoseconds, so the kernel drops a cached listing
    /// that predates it. Unlike `version` it stays put while a listing fills a folder the kernel
    /// has no listing of, so a folder's mtime does not churn during the background fill.
    var stamp: UInt32 = 0
    /// The `version` of the last listing handed to the kernel: when it differs, the kernel's
    /// cached listing of this folder may be stale.
    var servedVersion: UInt32 = 0
    /// Children sorted by name bytes, for `version`, kept only for big folders (sorting one on
    /// every listing piece would hold the tree lock for long; a small one sorts in microseconds,
    /// and keeping every folder's order would cost 4 bytes per entry, MetadataTree.children(of:)).
    var sorted: (version: UInt32, children: [UInt32])?
}

/// The keys of a folder's children that are not the client's folding of their names: the key of
/// each by its index (a key is not stored in the ChildTable), and each by its exact name, so a
/// lookup by name finds it.
struct OddKeys {
    var keys: [UInt32: FoldKey] = [:]
    var byName: [ExactName: UInt32] = [:]
}

/// The fields of a node that do not fit their packed forms, kept as is. Immutable, so Node stays a
/// value: a change makes a new one (`Node.respill`).
final class NodeSpill: Sendable {
    let id: String?
    let rev: String?
    let mtime: Int64?
    let ctime: Int64?

    init?(id: String?, rev: String?, mtime: Int64?, ctime: Int64?) {
        if id == nil && rev == nil && mtime == nil && ctime == nil { return nil }
        self.id = id
        self.rev = rev
        self.mtime = mtime
        self.ctime = ctime
    }
}

struct Node {
    /// The entry's own `name`, exactly as Dropbox sent it (validated by NodeName).
    var name: String
    /// The `id`, `rev` or times when they do not pack (see `id`, `rev`, `mtime`); nil for almost
    /// every node.
    private var spill: NodeSpill?
    var size: UInt64 = 0
    /// The content hash's bytes; meaningful only when `hasHash`.
    private var hash: ContentHash = Node.zeroHash
    /// A packed `id` ("id:" + 22 URL-safe base64 characters): 6 bits per character.
    private var idLow: UInt64 = 0
    private var idHigh: UInt64 = 0
    /// A packed `rev` (lowercase hex, 1 to 16 digits) as its value; `revForm` holds the digit count.
    private var revBits: UInt64 = 0
    /// Distinguishes successive users of a reused index (FUSE's generation number). 32 bits: it
    /// would take 4 billion new entries for one index to meet its own generation again.
    var generation: UInt32 = 0
    /// Kernel lookup count: how many LOOKUP/READDIRPLUS replies the kernel still holds (32 bits,
    /// saturating: MetadataTree.addLookup).
    var lookups: UInt32 = 0
    /// Index of the parent folder (the root is its own parent).
    var parent: UInt32
    /// `mtime` and `ctime` as seconds since the epoch, or `timeSpilled` (in `spill`). Two 32-bit
    /// fields instead of two 64-bit ones bring the node from 128 to 120 bytes.
    private var mtimeBits: UInt32 = 0
    private var ctimeBits: UInt32 = 0
    /// The fill epoch that last saw this entry (its own entry, or for a folder an entry below it);
    /// a completed full listing removes older ones.
    var seenEpoch: UInt32 = 0
    /// The folder's index in MetadataTree's folder table; 0 for files (and released folders).
    var folderSlot: UInt32 = 0
    var kind: NodeKind
    private var flags: UInt8 = Node.attachedFlag | Node.downloadableFlag
    /// 0: no rev; 1...16: packed hex digits; `spilled`: in `spill`.
    private var revForm: UInt8 = 0
    /// Low 2 bits: 0 no id, 1 packed, `spilled` in `spill`; high 6 bits: the 22nd id character.
    private var idForm: UInt8 = 0

    init(parent: UInt32, name: String, kind: NodeKind) {
        self.parent = parent
        self.name = name
        self.kind = kind
    }

    private static let zeroHash = ContentHash(bytes: [UInt8](repeating: 0, count: 32))
    private static let attachedFlag: UInt8 = 1
    private static let downloadableFlag: UInt8 = 2
    private static let keyIsNameFlag: UInt8 = 4
    private static let hashFlag: UInt8 = 8
    private static let provisionalFlag: UInt8 = 16
    private static let traverseOnlyFlag: UInt8 = 32
    private static let noAccessFlag: UInt8 = 64
    private static let spilled: UInt8 = 0xFF
    private static let timeSpilled = UInt32.max

    private func flag(_ bit: UInt8) -> Bool { flags & bit != 0 }
    private mutating func setFlag(_ bit: UInt8, _ on: Bool) { flags = on ? flags | bit : flags & ~bit }

    /// False once the entry left the tree; the record stays until the kernel forgets it.
    var attached: Bool {
        get { flag(Self.attachedFlag) }
        set { setFlag(Self.attachedFlag, newValue) }
    }
    var isDownloadable: Bool {
        get { flag(Self.downloadableFlag) }
        set { setFlag(Self.downloadableFlag, newValue) }
    }
    /// A folder made from an entry's path because the entry came before its parent's own entry
    /// (Dropbox promises no order); cleared when that entry arrives (MetadataTree.provisionalFolder).
    var provisional: Bool {
        get { flag(Self.provisionalFlag) }
        set { setFlag(Self.provisionalFlag, newValue) }
    }

    /// What the user may do in this folder, from its `sharing_info` (docs/SEMANTICS.md, "Access
    /// levels"); `.full` for files and for folders that carry none.
    var access: FolderAccess {
        get { flag(Self.noAccessFlag) ? .noAccess : flag(Self.traverseOnlyFlag) ? .traverseOnly : .full }
        set {
            setFlag(Self.noAccessFlag, newValue == .noAccess)
            setFlag(Self.traverseOnlyFlag, newValue == .traverseOnly)
        }
    }

    /// Dropbox's key for the entry is its name byte for byte (a lower-case name, or one with no
    /// case at all): its parent's ChildTable checks it without folding (MetadataTree.child).
    var keyIsName: Bool {
        get { flag(Self.keyIsNameFlag) }
        set { setFlag(Self.keyIsNameFlag, newValue) }
    }

    var contentHash: ContentHash? {
        get { flag(Self.hashFlag) ? hash : nil }
        set {
            setFlag(Self.hashFlag, newValue != nil)
            hash = newValue ?? Self.zeroHash
        }
    }

    /// Dropbox `id` ("id:..."); empty for the root.
    var id: String {
        get {
            switch idForm & 3 {
            case 0: return ""
            case 1: return Self.unpackID(idLow, idHigh, idForm >> 2)
            default: return spill?.id ?? ""
            }
        }
        set {
            if newValue.isEmpty {
                setPackedID((0, 0, 0))
            } else if let packed = Self.withUTF8(newValue, Self.packID) {
                setPackedID(packed)
            } else {
                (idLow, idHigh, idForm) = (0, 0, 3)
                respill(id: .some(newValue))
            }
        }
    }

    /// Sets `id` from its UTF-8 bytes, making a String only when they do not pack: the load of a
    /// stored tree reads them from SQLite's row in place.
    mutating func setID(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        if bytes.isEmpty {
            setPackedID((0, 0, 0))
        } else if let packed = Self.packID(bytes) {
            setPackedID(packed)
        } else {
            id = String(decoding: bytes, as: UTF8.self)
        }
    }

    private mutating func setPackedID(_ packed: (UInt64, UInt64, UInt8)) {
        (idLow, idHigh, idForm) = packed
        if spill?.id != nil { respill(id: .some(nil)) }
    }

    /// Dropbox `rev`; empty for the root and for folders.
    var rev: String {
        get {
            switch revForm {
            case 0: return ""
            case Self.spilled: return spill?.rev ?? ""
            default: return Self.unpackRev(revBits, digits: Int(revForm))
            }
        }
        set {
            if newValue.isEmpty {
                setPackedRev((0, 0))
            } else if let packed = Self.withUTF8(newValue, Self.packRev) {
                setPackedRev(packed)
            } else {
                (revBits, revForm) = (0, Self.spilled)
                respill(rev: .some(newValue))
            }
        }
    }

    /// Sets `rev` from its UTF-8 bytes, making a String only when they do not pack (see `setID`).
    mutating func setRev(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        if bytes.isEmpty {
            setPackedRev((0, 0))
        } else if let packed = Self.packRev(bytes) {
            setPackedRev(packed)
        } else {
            rev = String(decoding: bytes, as: UTF8.self)
        }
    }

    private mutating func setPackedRev(_ packed: (UInt64, UInt8)) {
        (revBits, revForm) = packed
        if spill?.rev != nil { respill(rev: .some(nil)) }
    }

    /// client_modified (files) or the folder time, seconds since the epoch.
    var mtime: Int64 {
        get { mtimeBits != Self.timeSpilled ? Int64(mtimeBits) : spill?.mtime ?? 0 }
        set {
            let (bits, spilled) = Self.splitTime(newValue)
            mtimeBits = bits
            if spilled != nil || spill?.mtime != nil { respill(mtime: .some(spilled)) }
        }
    }

    /// server_modified (files) or the folder time.
    var ctime: Int64 {
        get { ctimeBits != Self.timeSpilled ? Int64(ctimeBits) : spill?.ctime ?? 0 }
        set {
            let (bits, spilled) = Self.splitTime(newValue)
            ctimeBits = bits
            if spilled != nil || spill?.ctime != nil { respill(ctime: .some(spilled)) }
        }
    }

    /// Whether any field is kept in the spill (for tests: it goes once every field packs again).
    var hasSpill: Bool { spill != nil }

    /// Replaces the spill with one whose given fields changed (`.some(nil)`: no longer spilled).
    private mutating func respill(
        id: String?? = .none, rev: String?? = .none, mtime: Int64?? = .none, ctime: Int64?? = .none
    ) {
        spill = NodeSpill(
            id: id ?? spill?.id, rev: rev ?? spill?.rev, mtime: mtime ?? spill?.mtime, ctime: ctime ?? spill?.ctime)
    }

    /// Whether this node's `id` is `packed` (from `packID`), or `text` when that did not pack:
    /// compared without building a string for a packed id.
    func hasID(packed: (UInt64, UInt64, UInt8)?, text: String) -> Bool {
        if let packed, idForm & 3 == 1 { return (idLow, idHigh, idForm) == packed }
        guard packed == nil, idForm & 3 == 3 else { return false }
        return id == text
    }

    /// `id`'s packed form, for `hasID`; nil when it does not pack.
    static func packedID(_ id: String) -> (UInt64, UInt64, UInt8)? {
        withUTF8(id, packID)
    }

    /// Whether `id` and `rev` are the same as `other`'s (without building the strings when packed).
    func sameIDAndRev(as other: Node) -> Bool {
        if idForm == other.idForm && revForm == other.revForm && idLow == other.idLow && idHigh == other.idHigh
            && revBits == other.revBits && spill == nil && other.spill == nil
        {
            return true
        }
        return id.utf8.elementsEqual(other.id.utf8) && rev.utf8.elementsEqual(other.rev.utf8)
    }

    // MARK: Packing

    /// Seconds from 1970 to early 2106 (32 bits, the spill marker excluded); nil otherwise.
    static func packTime(_ seconds: Int64) -> UInt32? {
        seconds >= 0 && seconds < Int64(timeSpilled) ? UInt32(seconds) : nil
    }

    /// A time's 32-bit field and, when it does not pack, the value the spill keeps instead.
    private static func splitTime(_ seconds: Int64) -> (bits: UInt32, spilled: Int64?) {
        packTime(seconds).map { ($0, nil) } ?? (timeSpilled, seconds)
    }

    private static let idPrefix = Array("id:".utf8)
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static func sextet(_ byte: UInt8) -> UInt64? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt64(byte - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt64(byte - UInt8(ascii: "a") + 26)
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt64(byte - UInt8(ascii: "0") + 52)
        case UInt8(ascii: "-"): return 62
        case UInt8(ascii: "_"): return 63
        default: return nil
        }
    }

    /// Runs `body` on a string's UTF-8 bytes, in place when the string is native (always, for
    /// strings decoded from JSON or SQLite), else on a copy.
    private static func withUTF8<T>(_ string: String, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        string.utf8.withContiguousStorageIfAvailable(body) ?? Array(string.utf8).withUnsafeBufferPointer(body)
    }

    /// "id:" + exactly 22 URL-safe base64 characters: characters 0-9 in the low 60 bits of `low`,
    /// 10-19 in those of `high`, character 20 split over the top 4 bits of each, character 21 in the
    /// top 6 bits of the form byte (whose low bits are 1). Anything else is not packed. Works on
    /// bytes rather than the String's view: it runs for every entry of a fill and of a load.
    static func packID(_ utf8: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64, UInt8)? {
        guard utf8.count == 25, utf8[0] == UInt8(ascii: "i"), utf8[1] == UInt8(ascii: "d"), utf8[2] == UInt8(ascii: ":")
        else { return nil }
        var low: UInt64 = 0
        var high: UInt64 = 0
        var last: UInt64 = 0
        for i in 0..<22 {
            guard let v = sextet(utf8[3 + i]) else { return nil }
            switch i {
            case 0..<10: low |= v << UInt64(6 * i)
            case 10..<20: high |= v << UInt64(6 * (i - 10))
            case 20:
                low |= (v & 0xF) << 60
                high |= (v >> 4) << 60
            default: last = v
            }
        }
        return (low, high, UInt8(last) << 2 | 1)
    }

    static func unpackID(_ low: UInt64, _ high: UInt64, _ last: UInt8) -> String {
        var bytes = idPrefix
        bytes.reserveCapacity(25)
        for i in 0..<10 { bytes.append(alphabet[Int((low >> UInt64(6 * i)) & 63)]) }
        for i in 0..<10 { bytes.append(alphabet[Int((high >> UInt64(6 * i)) & 63)]) }
        bytes.append(alphabet[Int((low >> 60) | ((high >> 60) & 3) << 4)])
        bytes.append(alphabet[Int(last & 63)])
        return String(decoding: bytes, as: UTF8.self)
    }

    /// 1 to 16 lowercase hex digits (leading zeros kept by the digit count).
    static func packRev(_ utf8: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt8)? {
        guard (1...16).contains(utf8.count) else { return nil }
        var value: UInt64 = 0
        for byte in utf8 {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
            value = value << 4 | digit
        }
        return (value, UInt8(utf8.count))
    }

    static func unpackRev(_ value: UInt64, digits: Int) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var bytes = [UInt8](repeating: 0, count: digits)
        for i in 0..<digits { bytes[digits - 1 - i] = hex[Int((value >> UInt64(4 * i)) & 15)] }
        return String(decoding: bytes, as: UTF8.self)
    }
}
