// Notices a lazy unmount (`fusermount3 -u -z`, `umount -l`) while the session runs. The kernel
// tells the daemon nothing then: files still open keep the connection alive, and readers stuck on
// a slow download would keep the daemon (and themselves) waiting for as long as the downloads take.
// So a thread watches the mount table (/proc/self/mountinfo, which poll() reports as changed on
// every mount and unmount) for the mount's device to disappear while the kernel connection stays
// up, and then ends the session as SIGTERM would: the requests in flight are failed and the daemon
// exits. (A plain unmount also leaves the table, but it ends the connection, and with it the loop.)
//
// The mount is known by its device number, which stays taken while the detached mount lives, so a
// new mount on the same folder is never mistaken for it.
//
// Locking: `state` guards the write end of the wake-up pipe and whether the watch was stopped; the
// thread runs `detached` holding it, so once `stop` returns, `detached` has run or never will.

import Foundation
import Synchronization
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

final class DetachWatch: Sendable {
    private struct State {
        /// The write end of the pipe that wakes the thread, until the thread leaves.
        var wake: Int32?
        var stopped = false
    }

    private let state: Mutex<State>

    /// Starts watching for the mount of `device` ("major:minor") to leave the mount table while the
    /// kernel connection on `connection` (the session's /dev/fuse descriptor) stays up; calls
    /// `detached` once, on the watching thread, when it does. Nil if the table cannot be watched.
    static func start(device: String, connection: Int32, detached: @escaping @Sendable () -> Void) -> DetachWatch? {
        let table = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)
        guard table >= 0 else { return nil }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            close(table)
            return nil
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        let watch = DetachWatch(wake: writeEnd)
        let thread = Thread {
            defer {
                close(table)
                watch.state.withLock { s in
                    close(readEnd)
                    if let open = s.wake { close(open) }
                    s.wake = nil
                }
            }
            var fds = [
                pollfd(fd: table, events: Int16(POLLPRI), revents: 0),
                pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0),
            ]
            while true {
                if !MountTable.entries().contains(where: { $0.device == device }) {
                    // A plain unmount ends the connection too, a moment after the table changed.
                    if connectionEnds(connection, within: 200) { return }
                    watch.state.withLock { s in
                        if !s.stopped { detached() }
                    }
                    return
                }
                // Wakes on a change of the mount table (POLLPRI | POLLERR) or a stop request.
                _ = try? waitForEvents(&fds)
                if fds[1].revents != 0 { return }
            }
        }
        thread.name = "dropboxfs-detach-watch"
        thread.start()
        return watch
    }

    private init(wake: Int32) {
        state = Mutex(State(wake: wake))
    }

    /// Whether the kernel ends the connection (POLLERR on /dev/fuse) within `milliseconds`.
    private static func connectionEnds(_ connection: Int32, within milliseconds: Int32) -> Bool {
        var fd = pollfd(fd: connection, events: 0, revents: 0)
        return poll(&fd, 1, milliseconds) > 0 && fd.revents & Int16(POLLERR | POLLNVAL) != 0
    }

    /// Stops the thread; once this returns, `detached` has run or never will.
    func stop() {
        state.withLock { s in
            s.stopped = true
            var byte: UInt8 = 1
            if let wake = s.wake { _ = write(wake, &byte, 1) }
        }
    }
}
