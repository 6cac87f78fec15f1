// One kernel request and the one place it is answered (Operations.swift): `answer` takes the core's
// Answer (DropboxFS's Answer.swift) turned into a Reply, sends it at once when it is answered now,
// and runs it from a Task when the core must wait (a listing, a download, an export); whatever
// fails goes to `fail`, the one failure path (OperationFailures.swift: errno, log
// line, count). Each reply goes through the request owner (RequestOwner.swift), which sends it
// only while the session can take it; requests answered from a Task are registered with it first,
// so an interrupt cancels their Task and an unmount fails them. Each request is answered once.

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
    /// What was asked, and of which inode (for the failure path).
    let operation: Operation
    let inode: UInt64
    /// The id the owner registered the request under (`later`), 0 while it is answered on the
    /// FUSE thread that received it.
    private let id: UInt64

    /// The request as a FUSE callback receives it.
    init(_ raw: fuse_req_t, _ operation: Operation, inode: UInt64) {
        self.init(raw: RawRequest(pointer: raw), filesystem: FUSEFilesystem.of(raw), operation, inode: inode, id: 0)
    }

    private init(raw: RawRequest, filesystem: FUSEFilesystem, _ operation: Operation, inode: UInt64, id: UInt64) {
        self.raw = raw
        self.filesystem = filesystem
        self.operation = operation
        self.inode = inode
        self.id = id
    }

    var core: Filesystem { filesystem.core }
    var timeouts: CacheTimeouts { filesystem.timeouts }

    /// The thread that made the request and its uid, as the kernel reports them. Only on the FUSE
    /// thread that received the request (before it is answered).
    var caller: Caller {
        let context = fuse_req_ctx(raw.pointer).pointee
        return Caller(pid: context.pid, uid: context.uid)
    }

    /// Answers with what `reply` returns, on this thread (an operation that never waits).
    func answer(_ reply: () throws(FilesystemError) -> Reply) {
        answer(.now(Result(catching: reply)))
    }

    /// Answers the core's answer: at once when it is answered now; from a Task when it comes
    /// later, the request registered with its owner first, so an interrupt cancels the Task and an
    /// unmount fails the request if it has not answered by then.
    func answer(_ answer: Answer<Reply>) {
        switch answer {
        case .now(.success(let reply)): send(reply)
        case .now(.failure(let error)): fail(error)
        case .later(let work):
            let (raw, filesystem, operation, inode) = (self.raw, self.filesystem, self.operation, self.inode)
            filesystem.requests.later(raw) { id in
                let request = FUSERequest(raw: raw, filesystem: filesystem, operation, inode: inode, id: id)
                do throws(FilesystemError) {
                    request.send(try await work())
                } catch {
                    request.fail(error)
                }
            }
        }
    }

    /// The one failure path: logs and counts the failure, and answers its errno.
    func fail(_ error: FilesystemError) {
        let errno = filesystem.failures.record(operation, inode: inode, error)
        filesystem.requests.answer(id, raw) { fuse_reply_err($0.pointer, errno) }
    }

    private func send(_ reply: Reply) {
        filesystem.requests.answer(id, raw) { reply.send($0.pointer) }
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
