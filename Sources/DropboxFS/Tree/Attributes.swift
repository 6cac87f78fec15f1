// Dropbox metadata -> POSIX attributes, as SEMANTICS.md documents them: read-only permission bits
// owned by the mounting user, st_blocks from the size so du is right, client_modified as mtime and
// server_modified as ctime, one fixed time for folders (Dropbox does not date them) whose
// nanoseconds count the changes of the folder's entries, so the kernel can tell a cached listing
// of a folder from its current one (Filesystem+Directories.swift).

/// The attributes of one inode, free of any FUSE or libc type.
public struct FileAttributes: Sendable, Equatable {
    public var inode: UInt64
    public var generation: UInt64
    public var kind: NodeKind
    /// Permission bits only (no file-type bits).
    public var permissions: UInt32
    public var linkCount: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var size: UInt64
    /// 512-byte blocks, as st_blocks counts them.
    public var blocks: UInt64
    public var blockSize: UInt32
    public var atime: Int64
    public var mtime: Int64
    public var ctime: Int64
    /// The nanoseconds of all three times: 0 for files; for folders, the count of the folder's
    /// changes since mount modulo 10^9 (FolderState.stamp).
    public var timeNanoseconds: UInt32 = 0
    /// False when these attributes may change with no invalidation reaching the kernel before the
    /// next `stat`: the listed size of an export-only document not exported yet, which its first
    /// open replaces by the export's. The kernel must then not cache them (attribute timeout 0).
    public var cacheable = true
    /// False when the name that led to this inode may mean another inode with no invalidation
    /// reaching the kernel first: the entries of the shared-folders view, whose listings are polled
    /// (SharedFolders/). The kernel then keeps no entry (entry timeout 0), so each path walk asks.
    public var entryCacheable = true
}

/// Who owns the files, and how permissive the bits are.
public struct Ownership: Sendable, Equatable {
    public var uid: UInt32
    public var gid: UInt32

    public init(uid: UInt32, gid: UInt32) {
        self.uid = uid
        self.gid = gid
    }
}

extension MetadataTree {
    /// The attributes of a node, a folder's change counter included.
    func attributes(of index: UInt32, ownership: Ownership) -> FileAttributes {
        var attributes = nodes[Int(index)].attributes(inode: index, ownership: ownership)
        if attributes.kind == .folder { attributes.timeNanoseconds = stamp(of: index) % 1_000_000_000 }
        if let exported = exportedSizes[index], exported.rev == nodes[Int(index)].rev {
            attributes.size = exported.size
            attributes.blocks = exported.size / 512 + (exported.size % 512 == 0 ? 0 : 1)
        } else if attributes.kind == .file && !nodes[Int(index)].isDownloadable {
            attributes.cacheable = false
        }
        return attributes
    }

    /// Records the size of `index`'s export for revision `rev`; returns whether the reported size
    /// changed (the kernel's attributes must then be invalidated).
    mutating func noteExportedSize(_ index: UInt32, rev: String, size: UInt64) -> Bool {
        let node = nodes[Int(index)]
        let before = exportedSizes[index].flatMap { $0.rev == node.rev ? $0.size : nil } ?? node.size
        exportedSizes[index] = (rev, size)
        return before != size
    }
}

extension Node {
    /// The attributes of the node alone; use MetadataTree.attributes(of:ownership:) for folders.
    func attributes(inode: UInt32, ownership: Ownership) -> FileAttributes {
        let permissions: UInt32
        switch kind {
        case .file: permissions = 0o444
        // A folder this account may not open shows it: mode 000 (docs/SEMANTICS.md, "Access levels").
        case .folder: permissions = access == .noAccess ? 0 : 0o555
        case .symlink: permissions = 0o777
        }
        return FileAttributes(
            inode: UInt64(inode),
            generation: UInt64(generation),
            kind: kind,
            permissions: permissions,
            // Folders report 1 link, the "unknown subfolder count" convention (as btrfs does), so
            // find's leaf optimisation never skips a folder.
            linkCount: 1,
            uid: ownership.uid,
            gid: ownership.gid,
            size: size,
            blocks: size / 512 + (size % 512 == 0 ? 0 : 1),  // no overflow near 2^64
            blockSize: 4096,
            atime: mtime,
            mtime: mtime,
            ctime: ctime)
    }
}
