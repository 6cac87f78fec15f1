// Reading requests from the session's device (/dev/fuse) and handing them to libfuse: the one read
// step of every loop that serves the kernel, the start's wait for INIT (KernelInit.swift), the
// request loop (SessionLoop.swift) and the teardown's drain (FUSESession.swift). Each loop decides
// only what to do between requests: spin, poll, give up.
//
// The device is read non-blocking (`setNonBlocking`), so a request that polled as queued but
// vanished (its caller was killed) never blocks a loop that has a deadline; an interrupted read
// (EINTR) is reported, never retried, so a stopping signal is noticed at once.
//
// Used by one thread at a time (the one serving the session); it owns libfuse's read buffer.

import CFuse
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

final class DeviceReader {
    enum Received: Equatable {
        /// A request was read and handed to libfuse.
        case served
        /// Nothing queued (EAGAIN).
        case nothing
        /// The read was interrupted by a signal (EINTR).
        case interrupted
        /// libfuse's answer when the session is over: 0 for ENODEV (unmounted, or the connection
        /// aborted) or told to exit, else a negative errno.
        case ended(Int32)
    }

    let session: OpaquePointer
    let device: FileDescriptor
    private var buffer = fuse_buf()

    init(_ session: OpaquePointer) {
        self.session = session
        self.device = FileDescriptor(rawValue: fuse_session_fd(session))
    }

    deinit { free(buffer.mem) }

    /// Makes reads of the device non-blocking; the flags before, for `restore`.
    func setNonBlocking() throws(Errno) -> Int32 {
        let flags = try device.statusFlags()
        try device.setStatusFlags(flags | O_NONBLOCK)
        return flags
    }

    func restore(flags: Int32) {
        try? device.setStatusFlags(flags)
    }

    /// Reads one request, if one is queued, and has libfuse process it.
    func receive() -> Received {
        let received = fuse_session_receive_buf(session, &buffer)
        if received > 0 {
            fuse_session_process_buf(session, &buffer)
            return .served
        }
        switch received {
        case -EAGAIN: return .nothing
        case -EINTR: return .interrupted
        default: return .ended(received)
        }
    }

    /// Waits at most `milliseconds` (not retried when a signal interrupts it) for a request to
    /// be queued; whether one is.
    @discardableResult
    func waitForRequest(milliseconds: Int32) -> Bool {
        var fds = pollfd(fd: device.rawValue, events: Int16(POLLIN), revents: 0)
        return poll(&fds, 1, milliseconds) > 0
    }
}
