// What an operation answers, as a value, and the one place that turns it into a libfuse reply
// call. Operations build a Reply from what the core returned; FUSERequest sends it through the
// request owner (RequestOwner.swift). Also the kernel's formats built from core values: `struct
// stat` (StatConversion) and the packed entries of a readdir or readdirplus piece (DirectoryBuffer).

import CFuse
import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

/// A successful answer to a kernel request. Failures are answered by FUSERequest.fail.
enum Reply: Sendable {
    /// lookup: the entry and how long the kernel may trust its name and attributes.
    case entry(FileAttributes, CacheTimeouts)
    /// lookup: no such name, which the kernel may remember for `timeout` seconds.
    case negativeEntry(timeout: Double)
    /// getattr.
    case attributes(FileAttributes, timeout: Double)
    /// read, readdir, getxattr and listxattr.
    case bytes([UInt8])
    /// readlink.
    case link(String)
    /// statfs.
    case statfs(FilesystemStats)
    /// open and opendir: the request's file info with the handle and cache flags set.
    case open(FileInfo)
    /// getxattr and listxattr asked for the size only.
    case xattrSize(Int)
    /// release and releasedir.
    case success
    /// opendir where the kernel opens folders itself: success, and no more opendir or releasedir.
    case noOpendir
    /// forget: nothing is sent; libfuse only frees the request.
    case forgotten

    /// Sends the reply for `req`.
    func send(_ req: fuse_req_t) {
        switch self {
        case .entry(let attributes, let timeouts):
            var param = StatConversion.entry(attributes, timeouts: timeouts)
            fuse_reply_entry(req, &param)
        case .negativeEntry(let timeout):
            var param = fuse_entry_param()
            param.ino = 0
            param.entry_timeout = timeout
            fuse_reply_entry(req, &param)
        case .attributes(let attributes, let timeout):
            var st = StatConversion.stat(attributes)
            fuse_reply_attr(req, &st, timeout)
        case .bytes(let bytes):
            _ = bytes.withUnsafeBytes { fuse_reply_buf(req, $0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count) }
        case .link(let target):
            fuse_reply_readlink(req, target)
        case .statfs(let stats):
            var st = StatConversion.statvfs(stats)
            fuse_reply_statfs(req, &st)
        case .open(let info):
            var value = info.value
            fuse_reply_open(req, &value)
        case .xattrSize(let size):
            fuse_reply_xattr(req, size)
        case .success:
            fuse_reply_err(req, 0)
        case .noOpendir:
            fuse_reply_err(req, ENOSYS)
        case .forgotten:
            fuse_reply_none(req)
        }
    }

    /// The xattr reply protocol: size 0 asks for the length, a short buffer is ERANGE.
    static func xattr(_ bytes: [UInt8], size: Int) throws(FilesystemError) -> Reply {
        if size == 0 { return .xattrSize(bytes.count) }
        guard size >= bytes.count else { throw .bufferTooSmall }
        return .bytes(bytes)
    }
}

/// A copy of a request's fuse_file_info. libfuse passes a pointer to its own stack frame, which is
/// gone once the callback returns, so a reply sent later from a Task must not use the pointer.
struct FileInfo: @unchecked Sendable {
    var value: fuse_file_info
    init(_ pointer: UnsafeMutablePointer<fuse_file_info>) { self.value = pointer.pointee }
    init(_ value: fuse_file_info) { self.value = value }

    /// Opened for anything but reading, or to truncate.
    var wantsWriting: Bool { value.flags & O_ACCMODE != O_RDONLY || value.flags & O_TRUNC != 0 }

    /// The reply to open: the core's handle, and the page cache kept only when it holds this
    /// revision, bypassed while another revision is open (and for exports, whose size the kernel
    /// does not know yet).
    func opened(_ file: OpenedFile) -> FileInfo {
        var reply = value
        reply.fh = file.handle
        switch file.pageCache {
        case .keep: reply.keep_cache = 1
        case .drop: reply.keep_cache = 0
        case .bypass: reply.direct_io = 1
        }
        return FileInfo(reply)
    }

    /// The reply to opendir (no folder handle): the kernel's listing cache as the core decided.
    func opened(_ directory: Filesystem.OpenedDirectory) -> FileInfo {
        var reply = value
        reply.fh = 0
        reply.cache_readdir = directory.cacheListing ? 1 : 0
        reply.keep_cache = directory.keepCachedListing ? 1 : 0
        return FileInfo(reply)
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

    /// How long the kernel may keep `a`: not at all when the core says they are not cacheable.
    func attributes(of a: FileAttributes) -> Double { a.cacheable ? attributes : 0 }
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

    /// A lookup's (or readdirplus entry's) answer: inode, generation, attributes and timeouts.
    static func entry(_ a: FileAttributes, timeouts: CacheTimeouts) -> fuse_entry_param {
        var param = fuse_entry_param()
        param.ino = a.inode
        param.generation = a.generation
        param.attr = stat(a)
        param.attr_timeout = timeouts.attributes(of: a)
        param.entry_timeout = a.entryCacheable ? timeouts.entry : 0
        return param
    }

    static func statvfs(_ stats: FilesystemStats) -> statvfs {
        var st = Glibc.statvfs()
        st.f_bsize = UInt(stats.blockSize)
        st.f_frsize = UInt(stats.blockSize)
        st.f_blocks = UInt(stats.totalBlocks)
        st.f_bfree = UInt(stats.freeBlocks)
        st.f_bavail = UInt(stats.freeBlocks)
        st.f_files = UInt(stats.files)
        st.f_ffree = 0
        st.f_favail = 0
        st.f_namemax = UInt(stats.maxNameLength)
        return st
    }
}

/// One readdir or readdirplus piece: entries packed in the kernel's format until the kernel's
/// buffer is full. An entry that does not fit is refused whole (the core then does not count it
/// as a kernel lookup). In readdirplus, "." and ".." carry inode 0, so they count as no lookup, and
/// so do lean entries (DirectoryEntry.lean): the kernel then emits the name and type only.
/// (libfuse's packing functions never use their request argument, so none is needed here.)
struct DirectoryBuffer: DirectoryPiece {
    let plus: Bool
    let timeouts: CacheTimeouts
    private var buffer: [UInt8]
    private(set) var used = 0

    init(size: Int, plus: Bool, timeouts: CacheTimeouts) {
        self.plus = plus
        self.timeouts = timeouts
        self.buffer = [UInt8](repeating: 0, count: size)
    }

    /// The entries packed so far (a copy).
    var bytes: [UInt8] { Array(buffer[0..<used]) }

    /// The entries packed so far, handing the buffer over instead of copying it: the reply of
    /// every folder piece goes through here.
    mutating func take() -> [UInt8] {
        buffer.removeSubrange(used...)
        return buffer
    }

    /// Packs `entry`, which the kernel resumes after at `nextOffset`; false when it does not fit.
    mutating func add(_ entry: DirectoryEntry, nextOffset: UInt64) -> Bool {
        let used = self.used
        let plus = self.plus
        let timeouts = self.timeouts
        let needed = buffer.withUnsafeMutableBytes { raw -> Int in
            let start = raw.baseAddress.map { $0.assumingMemoryBound(to: CChar.self) + used }
            let remaining = raw.count - used
            let offset = off_t(Int64(bitPattern: nextOffset))
            if plus {
                var param = StatConversion.entry(entry.attributes, timeouts: timeouts)
                if entry.lean || Self.isDot(entry.name) { param.ino = 0 }
                return fuse_add_direntry_plus(nil, start, remaining, entry.name, &param, offset)
            }
            var st = StatConversion.stat(entry.attributes)
            return fuse_add_direntry(nil, start, remaining, entry.name, &st, offset)
        }
        // Past the end libfuse wrote nothing and said how much the entry needs.
        guard needed <= buffer.count - used else { return false }
        self.used += needed
        return true
    }

    private static func isDot(_ name: String) -> Bool {
        name == "." || name == ".."
    }
}
