// The loop that reads requests from the kernel and hands them to libfuse, used in place of
// libfuse's multi-threaded loop unless `--spin-us 0` or `--threads` is given, or only one CPU is
// usable. Why: a kernel-cold walk (`find`, `du`, a file manager's first look, the walk after a
// remount) is a ping-pong of one request at a time between the walker and the daemon, and on a
// virtual machine most of each round trip is waking a sleeping thread on another CPU (an
// inter-processor interrupt, which traps to the hypervisor). Here the thread that waits for the
// next request stays awake for a moment (`spin`, 200 µs by default) after each request before it
// sleeps in poll(), so the walker's next request finds it awake: one wake-up per round trip
// instead of two. It yields the CPU at each turn, so staying awake only ever uses a CPU that no
// other thread wants (a cold walk spins while the fill runs). On the project's 2-CPU VM a
// 100,000-entry walk took 1.2 to 1.4 s instead of 1.5 to 2.3 s (docs/JOURNAL.md, "Spinning
// for the next request").
//
// One thread serves every request, inline: no FUSE handler waits for the network, the disk or
// another request (anything that waits is answered later from a task, see Operations.swift), so a second thread would only add the hand-over
// wake-ups this loop exists to avoid (measured: handing the watch to a follower thread for each
// request lost the whole gain).
//
// Ending: libfuse's signal handlers (SIGINT, SIGTERM, SIGHUP) and DetachWatch mark the session
// exited and interrupt this thread (the one that mounted, as with libfuse's loop), which notices
// between requests, in its poll(), or within a second should the signal land elsewhere (poll's
// timeout: the net for a wake-up lost between the check and the poll). A read (DeviceReader.swift)
// that says ENODEV (unmounted, or the connection aborted) ends the loop too; whether the kernel ended the
// connection is FUSESession's to tell, from the device. Since signals are now delivered to the
// thread that runs the callbacks (libfuse's workers block them), a system call in a callback may
// fail with EINTR; none is retried (a retry would keep a stopping daemon waiting), and none that
// can wait runs here at all: disk cache calls run on the disk queue (Reader/DiskWork.swift). Not spinning
// where only one CPU is usable: it would only take the CPU from the process whose request it
// waits for.

import CFuse
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

public enum SessionLoop {
    /// Serves requests on the calling thread until the session ends. Returns 0 when it ended
    /// (told to exit, or the kernel ended the connection), a negative errno when reading the
    /// device failed (ECONNABORTED: a read raced an abort).
    static func run(_ session: OpaquePointer, spinMicroseconds: Int) -> Int32 {
        let reader = DeviceReader(session)
        // The device stays non-blocking after the loop too: the teardown's drain wants that.
        do { _ = try reader.setNonBlocking() } catch { return -error.rawValue }
        let spin = Double(max(0, spinMicroseconds)) / 1e6
        var awakeUntil = 0.0
        while fuse_session_exited(session) == 0 {
            switch reader.receive() {
            case .served:
                if spin > 0 { awakeUntil = SystemClock.monotonicSeconds() + spin }
            case .nothing:
                if spin > 0 && SystemClock.monotonicSeconds() < awakeUntil {
                    // Stay awake, but give the CPU to any other thread that wants it (the fill,
                    // the store's writer): spinning must only use a CPU that would be idle.
                    sched_yield()
                    continue
                }
                reader.waitForRequest(milliseconds: 1000)
            case .interrupted:
                continue
            case .ended(let result):
                return result  // 0: ENODEV, or told to exit (libfuse answers 0 for both)
            }
        }
        return 0
    }

    /// Spinning helps only where another CPU runs the process whose next request is awaited: the
    /// CPUs this process may run on (taskset, systemd's CPUAffinity=, a container's cpuset), not
    /// the machine's.
    static func spinMicroseconds(requested: Int) -> Int {
        UsableCPUs.count() < 2 ? 0 : requested
    }
}
