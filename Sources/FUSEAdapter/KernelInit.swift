// Waiting for the kernel's INIT before a mount is reported ready. `fuse_session_mount` returns once
// the mount is in the mount table, but the kernel has then only queued its INIT request (the first
// request of every connection, sent by the mount itself). libfuse answers it when a loop reads it:
// it calls the init callback, then may still refuse it (a max_read that differs from the mount
// option's, capabilities the kernel lacks: docs/SWIFT-FUSE-NOTES.md "INIT can be refused"), which
// fails the kernel's INIT and ends the session. A ready report sent before that told the parent
// and systemd "mounted" about a mount that was gone a moment later, and the daemon then exited 0.
//
// So the thread that mounted serves requests itself, before either loop starts, until the init
// callback has run, and only a session still serving after it counts as started. INIT is already
// queued when the mount returns, so this costs what the loop would have spent on it. A kernel that
// never sends INIT (none does) would hold the start forever: the wait is bounded (`limit`), and a
// session that ends first (a signal, an unmount) is a failure too.
//
// `wait` is the decision alone, over injected steps and clock, so unit tests prove the bound
// without a kernel; `serve` is the step on the real device.

import CFuse
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

public enum KernelInit {
    /// How long the kernel may take to send INIT after the mount: it is queued by the mount
    /// itself, so this bounds a broken kernel, never a slow start.
    public static let limit: Double = 10

    public enum Outcome: Equatable, Sendable {
        /// INIT answered by the init callback, and the session still serves.
        case started
        /// The init callback ran but the session ended with it: libfuse refused INIT.
        case refused
        /// The session ended before INIT came (a signal, an unmount, a lost connection).
        case ended
        /// No INIT within the limit.
        case timedOut
    }

    /// What one step of serving the device did.
    enum Step: Equatable, Sendable {
        /// A request was read and handed to libfuse.
        case served
        /// Nothing came within the step's wait, or the wait was interrupted (a signal).
        case idle
        /// The device said the connection is gone, or reading it failed.
        case disconnected
    }

    /// Serves steps until the init callback ran (`initialized`), the session ended (`exited`), or
    /// `limit` seconds passed on `now`. `step` gets the most milliseconds it may wait.
    static func wait(
        limit: Double, now: () -> Double, initialized: () -> Bool, exited: () -> Bool,
        step: (_ waitMilliseconds: Int32) -> Step
    ) -> Outcome {
        let deadline = now() + limit
        while true {
            if initialized() { return exited() ? .refused : .started }
            if exited() { return .ended }
            let remaining = deadline - now()
            if remaining <= 0 { return .timedOut }
            // Short waits: a signal that lands on another thread is noticed within one.
            // INIT is only ever handed to libfuse by a step that says `.served`, so a lost
            // connection means it never came.
            if step(Int32(min(remaining, 0.1) * 1000) + 1) == .disconnected { return .ended }
        }
    }

    /// The real wait on `session`'s device: non-blocking reads handed to libfuse, poll() between
    /// them. The device's flags are restored afterwards (libfuse's multi-threaded loop wants
    /// blocking reads; docs/SWIFT-FUSE-NOTES.md "A loop of one's own").
    static func wait(_ session: OpaquePointer, filesystem: FUSEFilesystem, now: () -> Double) -> Outcome {
        let reader = DeviceReader(session)
        guard let flags = try? reader.setNonBlocking() else { return .ended }
        defer { reader.restore(flags: flags) }
        return wait(
            limit: limit, now: now,
            initialized: { filesystem.kernelInitialized.load(ordering: .acquiring) },
            exited: { fuse_session_exited(session) != 0 },
            step: { milliseconds in serve(reader, waitMilliseconds: milliseconds) })
    }

    private static func serve(_ reader: DeviceReader, waitMilliseconds: Int32) -> Step {
        switch reader.receive() {
        case .served:
            return .served
        case .nothing:
            reader.waitForRequest(milliseconds: waitMilliseconds)
            return .idle
        case .interrupted:
            return .idle
        case .ended:
            return .disconnected  // 0: ENODEV (unmounted, aborted) or told to exit; else a read error
        }
    }
}
