// Typed replies to one kernel request, so the operations read as "decode, call the core, reply",
// and each request is answered once. This file builds each reply (the fuse_reply_* call and its
// arguments); whether it is sent is decided by the request owner (RequestOwner.swift), the one way
// to answer a request, which sends it only while the session can take it. Requests answered from a
// Task are registered with it first (`later`), so an interrupt cancels their Task, an unmount fails
// them, and a reply that comes after either is dropped. Folder listings fill their buffer in
// DirectoryReplies.swift and reply through here; the owner's own libfuse calls (failing a request,
// registering the interrupt callback) are at the end of this file.

import CFuse
import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

/// A kernel request, answered on the FUSE thread that received it or later from a Task.
struct FUSERequest: Sendable {
    let raw: RawRequest
    /// The filesystem the request was asked of (a Task must not reach it through `raw`, which is
    /// freed once the request is answered, perhaps by the owner at unmount).
    let filesystem: FUSEFilesystem
    /// The id the owner registered the request under (`later`), 0 while it is answered on the
    /// FUSE thread that received it.
    let id: UInt64

    /// The request as a FUSE callback receives it.
    init(_ raw: fuse_req_t) {
        self.init(raw: RawRequest(pointer: raw), filesystem: FUSEFilesystem.of(raw), id: 0)
    }

    private init(raw: RawRequest, filesystem: FUSEFilesystem, id: UInt64) {
        self.raw = raw
        self.filesystem = filesystem
        self.id = id
    }

    /// The thread that made the request and its uid, as the kernel reports them. Only on the FUSE
    /// thread that received the request (before it is answered).
    var caller: (pid: Int32, uid: UInt32) {
        let context = fuse_req_ctx(raw.pointer).pointee
        return (context.pid, context.uid)
    }

    /// Answers from a Task running `work`: the request is registered with its owner, an interrupt
    /// cancels the Task, and an unmount fails the request if `work` has not answered by then.
    func later(_ work: @escaping @Sendable (FUSERequest) async -> Void) {
        let raw = self.raw
        let filesystem = self.filesystem
        filesystem.requests.later(raw) { id in
            await work(FUSERequest(raw: raw, filesystem: filesystem, id: id))
        }
    }

    private func send(_ reply: (fuse_req_t) -> Void) {
        filesystem.requests.answer(id, raw) { reply($0.pointer) }
    }

    func fail(_ error: FilesystemError) {
        send { fuse_reply_err($0, error.errno) }
    }

    /// Answers with the errno of a core error; anything else is an I/O error.
    func fail(_ error: any Error) {
        let errno = (error as? FilesystemError)?.errno ?? EIO
        send { fuse_reply_err($0, errno) }
    }

    func fail(errno: Int32) {
        send { fuse_reply_err($0, errno) }
    }

    func entry(_ attributes: FileAttributes, timeouts: CacheTimeouts) {
        var param = fuse_entry_param()
        param.ino = attributes.inode
        param.generation = attributes.generation
        param.attr = StatConversion.stat(attributes)
        param.attr_timeout = timeouts.attributes
        param.entry_timeout = timeouts.entry
        send { fuse_reply_entry($0, &param) }
    }

    /// A negative entry: the kernel may cache "no such name" for `timeout` seconds.
    func negativeEntry(timeout: Double) {
        var param = fuse_entry_param()
        param.ino = 0
        param.entry_timeout = timeout
        send { fuse_reply_entry($0, &param) }
    }

    func attributes(_ attributes: FileAttributes, timeout: Double) {
        var st = StatConversion.stat(attributes)
        send { fuse_reply_attr($0, &st, timeout) }
    }

    func buffer(_ bytes: UnsafeRawBufferPointer) {
        send { fuse_reply_buf($0, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count) }
    }

    func link(_ target: String) {
        send { fuse_reply_readlink($0, target) }
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
        send { fuse_reply_statfs($0, &st) }
    }

    func open(_ info: fuse_file_info) {
        var info = info
        send { fuse_reply_open($0, &info) }
    }

    func xattrSize(_ size: Int) {
        send { fuse_reply_xattr($0, size) }
    }

    func none() {
        send { fuse_reply_none($0) }
    }
}

/// The owner's own libfuse calls: failing a request, and registering the interrupt callback, which
/// finds the owner again through the session's userdata and passes the request's id as its data.
struct LibfuseRequests: RequestKernel {
    func fail(_ request: RawRequest, errno: Int32) {
        fuse_reply_err(request.pointer, errno)
    }

    func watchInterrupts(_ request: RawRequest, id: UInt64) {
        fuse_req_interrupt_func(
            request.pointer,
            { req, data in
                guard let req else { return }
                FUSEFilesystem.of(req).requests.interrupted(UInt64(UInt(bitPattern: data)))
            }, UnsafeMutableRawPointer(bitPattern: UInt(id)))
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
