// The loop that reads requests from the kernel and hands them to libfuse, used in place of
// libfuse's multi-threaded loop unless `--spin-us 0`. Why: a kernel-cold walk (`find`, `du`, a
// file manager's first look, the walk after a remount) is a ping-pong of one request at a time
// between the walker and the daemon, and on a virtual machine most of each round trip is waking a
// sleeping thread on another CPU (an inter-processor interrupt, which traps to the hypervisor).
// Here the thread that waits for the next request stays awake for a moment (`spin`, 200 µs by
// default) after each request before it sleeps in poll(), so the walker's next request finds it
// awake: one wake-up per round trip instead of two. On the project's 2-CPU VM a 100,000-entry walk
// took 1.2 to 1.4 s instead of 1.5 to 2.3 s (docs/PERFORMANCE.md, "Spinning for the next request").
//
// One thread serves every request, inline: no FUSE handler waits for the network or for another
// request (anything that waits is answered later from a task, see Operations.swift), so a second
// thread would only add the hand-over wake-ups this loop exists to avoid (measured: handing the
// watch to a follower thread for each request lost the whole gain).
//
// Ending: libfuse's signal handlers (SIGINT, SIGTERM, SIGHUP) and DetachWatch mark the session
// exited and interrupt this thread (the one that mounted, as with libfuse's loop), which notices
// between requests, in its poll(), or within a second should the signal land elsewhere (poll's
// timeout: the net for a wake-up lost between the check and the poll). A read that says ENODEV
// (unmounted, or the connection aborted) ends the loop too. Not spinning on a machine with one CPU,
// where it would only take the CPU from the process whose request it waits for.

import CFuse

#if canImport(Glibc)
    import Glibc
#endif

enum SessionLoop {
    /// Serves requests on the calling thread until the session ends. Returns 0 when the kernel
    /// ended the connection (unmounted or aborted), -EINTR when the session was told to exit, and a
    /// negative errno when reading the device failed.
    static func run(_ session: OpaquePointer, spinMicroseconds: Int) -> Int32 {
        let device = fuse_session_fd(session)
        let flags = fcntl(device, F_GETFL)
        _ = fcntl(device, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(device, F_SETFL, flags) }
        let spin = UInt64(max(0, spinMicroseconds)) * 1000
        var buffer = fuse_buf()
        defer { free(buffer.mem) }
        var awakeUntil: UInt64 = 0
        while fuse_session_exited(session) == 0 {
            let received = fuse_session_receive_buf(session, &buffer)
            if received > 0 {
                fuse_session_process_buf(session, &buffer)
                if spin > 0 { awakeUntil = now() + spin }
                continue
            }
            switch received {
            case -EAGAIN:
                if spin > 0 && now() < awakeUntil { continue }
                var fds = pollfd(fd: device, events: Int16(POLLIN), revents: 0)
                _ = poll(&fds, 1, 1000)
            case -EINTR:
                continue
            case 0:
                // ENODEV, or told to exit: libfuse answers 0 for both.
                return connectionGone(device) ? 0 : -EINTR
            default:
                return received
            }
        }
        return connectionGone(device) ? 0 : -EINTR
    }

    /// Spinning helps only where another CPU runs the process whose next request is awaited.
    static func spinMicroseconds(requested: Int) -> Int {
        sysconf(Int32(_SC_NPROCESSORS_ONLN)) < 2 ? 0 : requested
    }

    /// Whether the kernel ended the connection (unmounted or aborted): the device then polls as an
    /// error.
    private static func connectionGone(_ device: Int32) -> Bool {
        var fds = pollfd(fd: device, events: Int16(POLLIN), revents: 0)
        return poll(&fds, 1, 0) == 1 && fds.revents & Int16(POLLERR) != 0
    }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
