// Extended attributes that expose Dropbox facts about an entry: user.dropbox.id, .rev and
// .content_hash (files only for the last two). The root also carries user.dropboxfs.status, the
// sync engine's progress, which `dropboxfs status` reads. Read-only; setting one answers EROFS.

extension Filesystem {
    /// The root's attribute that `dropboxfs status` reads.
    public static let statusAttribute = "user.dropboxfs.status"

    /// The extended attributes of an inode, in a stable order.
    public func extendedAttributes(of inode: UInt64) throws(FilesystemError) -> [(name: String, value: String)] {
        let index = try Self.index(inode)
        if index == MetadataTree.rootIndex { return [(Self.statusAttribute, syncStatus())] }
        return try tree.dropboxAttributes(of: index)
    }
}

extension Filesystem {
    /// One extended attribute. Names outside the `user.` namespace answer EOPNOTSUPP rather than
    /// ENODATA: `ls -l` then stops asking for SELinux labels and ACLs on this mount after the first
    /// file, instead of costing a kernel round trip per entry.
    public func extendedAttribute(_ name: String, of inode: UInt64) throws(FilesystemError) -> String {
        guard name.hasPrefix("user.") else {
            _ = try Self.index(inode)
            throw .notSupported
        }
        guard let value = try extendedAttributes(of: inode).first(where: { $0.name == name })?.value else { throw .noAttribute }
        return value
    }
}
