// Waits with no deadline, retried on EINTR by the rule of Errno.swift (a signal that interrupts
// them is not a reason to stop waiting): for a child process to end (the daemon's parent waits for
// a daemon that failed to start, the mount table for fusermount3), and for an event on descriptors
// (the lazy-unmount watch). A wait with a deadline is not retried this way, since each retry would
// start its timeout again.

#if canImport(Glibc)
    import Glibc
#endif

/// Waits for the child `pid` to end; its wait status (WEXITSTATUS and friends decode it).
public func waitForExit(_ pid: pid_t) throws(Errno) -> Int32 {
    var status: Int32 = 0
    _ = try systemCall { waitpid(pid, &status, 0) }
    return status
}

/// poll(2) with no timeout, retried on EINTR: waits until one of `fds` has an event.
public func waitForEvents(_ fds: inout [pollfd]) throws(Errno) -> Int32 {
    try systemCall { poll(&fds, nfds_t(fds.count), -1) }
}
