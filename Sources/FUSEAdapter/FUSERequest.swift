// Typed replies to one kernel request. Every libfuse reply call lives here, so the operations read as
// "decode, call the core, reply", and each request is answered exactly once.

import CFuse
import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

/// A kernel request that can be answered from any thread (libfuse allows replies from other
/// threads; the request is answered exactly once).
struct FUSERequest: @unchecked Sendable {
    let raw: fuse_req_t

    init(_ raw: fuse_req_t) { self.raw = raw }

    func fail(_ error: FilesystemError) {
        fuse_reply_err(raw, error.errno)
    }

    /// Answers with the errno of a core error; anything else is an I/O error.
    func fail(_ error: any Error) {
        fuse_reply_err(raw, (error as? FilesystemError)?.errno ?? EIO)
    }

    func fail(errno: Int32) {
        fuse_reply_err(raw, errno)
    }

    func entry(_ attributes: FileAttributes, timeouts: CacheTimeouts) {
        var param = fuse_entry_param()
        param.ino = attributes.inode
        param.generation = attributes.generation
        param.attr = StatConversion.stat(attributes)
        param.attr_timeout = timeouts.attributes
        param.entry_timeout = timeouts.entry
        fuse_reply_entry(raw, &param)
    }

    /// A negative entry: the kernel may cache "no such name" for `timeout` seconds.
    func negativeEntry(timeout: Double) {
        var param = fuse_entry_param()
        param.ino = 0
        param.entry_timeout = timeout
        fuse_reply_entry(raw, &param)
    }

    func attributes(_ attributes: FileAttributes, timeout: Double) {
        var st = StatConversion.stat(attributes)
        fuse_reply_attr(raw, &st, timeout)
    }

    func buffer(_ bytes: UnsafeRawBufferPointer) {
        fuse_reply_buf(raw, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count)
    }

    func link(_ target: String) {
        fuse_reply_readlink(raw, target)
    }

    func statfs(_ stats: FilesystemStats) {
        var st = statvfs()
        st.f_bsize = UInt(stats.blockSize)
        st.f_frsize = UInt(stats.blockSize)
        st.f_blocks = UInt(stats.totalBlocks)
        st.f_bfree = UInt(stats.freeBlocks)
        st.f_bavail = UInt(stats.freeBlocks)
        st.f_files = UInt(stats.files)
        st.f_ffree = 0
        st.f_favail = 0
        st.f_namemax = UInt(stats.maxNameLength)
        fuse_reply_statfs(raw, &st)
    }

    func open(_ info: fuse_file_info) {
        var info = info
        fuse_reply_open(raw, &info)
    }

    func xattrSize(_ size: Int) {
        fuse_reply_xattr(raw, size)
    }

    func none() {
        fuse_reply_none(raw)
    }
}

/// How long the kernel may trust what it was told.
public struct CacheTimeouts: Sendable, Equatable {
    public var entry: Double
    public var attributes: Double
    public var negative: Double

    public init(entry: Double, attributes: Double, negative: Double) {
        self.entry = entry
        self.attributes = attributes
        self.negative = negative
    }
}

enum StatConversion {
    static func stat(_ a: FileAttributes) -> stat {
        var st = Glibc.stat()
        st.st_ino = UInt(a.inode)
        let typeBits: UInt32
        switch a.kind {
        case .file: typeBits = 0o100000  // S_IFREG
        case .folder: typeBits = 0o040000  // S_IFDIR
        case .symlink: typeBits = 0o120000  // S_IFLNK
        }
        st.st_mode = typeBits | a.permissions
        st.st_nlink = UInt(a.linkCount)
        st.st_uid = a.uid
        st.st_gid = a.gid
        st.st_size = Int(clamping: a.size)
        st.st_blocks = Int(clamping: a.blocks)
        st.st_blksize = Int(a.blockSize)
        let nanoseconds = Int(a.timeNanoseconds)
        st.st_atim = timespec(tv_sec: Int(a.atime), tv_nsec: nanoseconds)
        st.st_mtim = timespec(tv_sec: Int(a.mtime), tv_nsec: nanoseconds)
        st.st_ctim = timespec(tv_sec: Int(a.ctime), tv_nsec: nanoseconds)
        return st
    }
}
