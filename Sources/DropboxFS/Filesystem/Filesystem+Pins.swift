// "Available offline" through the mount (Offline/OfflineKeeper.swift). The mount is read-only (the
// kernel refuses setxattr before the daemon sees it), so `dropboxfs pin`, `unpin` and `pinned` talk
// to the daemon the way `dropboxfs status` does: by reading extended attributes. Reading
// `user.dropboxfs.pin` of an entry pins it, `user.dropboxfs.unpin` unpins it, and the root's
// `user.dropboxfs.pins` lists the pins; each answer is the text the command prints. These names are
// never listed (listxattr), so `getfattr -d` and file managers never trigger them. The listed one,
// `user.dropboxfs.offline`, says of an entry under a pin whether its contents are on disk.

extension Filesystem {
    public static let pinRequestAttribute = "user.dropboxfs.pin"
    public static let unpinRequestAttribute = "user.dropboxfs.unpin"
    public static let pinsAttribute = "user.dropboxfs.pins"
    public static let offlineAttribute = "user.dropboxfs.offline"

    /// The answer of a pin request attribute read on `index`; nil when `name` is none of them.
    func pinRequest(_ name: String, of index: UInt32) throws(FilesystemError) -> String? {
        switch name {
        case Self.pinRequestAttribute:
            return offline.pin(try existing(index))
        case Self.unpinRequestAttribute:
            return offline.unpin(try existing(index))
        case Self.pinsAttribute where index == MetadataTree.rootIndex:
            return offline.reports().map(\.line).joined(separator: "\n")
        default:
            return nil
        }
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
