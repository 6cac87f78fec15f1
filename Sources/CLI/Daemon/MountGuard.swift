// Unmounting after a daemon that died without unmounting (kill -9, an OOM kill, a crash), so the
// mount point never stays behind as "Transport endpoint is not connected".
//
// Why not only fusermount3's auto_unmount: its helper decides by opening the mount point and
// expecting ENOTCONN, but the kernel opens folders without asking the daemon once opendir answered
// ENOSYS (FUSEOperations.configure), so that open succeeds on a dead mount and nothing is unmounted.
//
// So the daemon starts this guard right after mounting: `dropboxfs __guard-mount MOUNTPOINT`, in a
// session of its own, with the read end of a pipe as its standard input. The daemon holds the write
// end until it exits; the guard blocks reading it. When the daemon's session ends normally (it was
// unmounted), the daemon writes one byte ("disarm") and the guard leaves without acting: by then a
// new mount may already stand on the same folder, with the same recycled device number. End of
// file without that byte means the daemon died: if the mount it guarded (same mount point and
// device) is still in the mount table, the guard detaches it (umount2 MNT_DETACH as root,
// `fusermount3 -u -z` otherwise) and says so on standard error, which is the daemon's log.

import FUSEAdapter
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

enum MountGuard {
    static let command = "__guard-mount"
    /// The daemon's end of a running guard.
    struct Handle {
        let pid: pid_t
        let writeEnd: Int32
    }

    /// In the daemon, once mounted: starts the guard. A failure is logged and otherwise ignored
    /// (fusermount3's auto_unmount still covers mounts where the kernel asks opendir).
    static func start(mountpoint: String) -> Handle? {
        guard let (readEnd, writeEnd) = SelfSpawn.pipe() else {
            printError("cannot start the mount guard: \(String(cString: strerror(errno)))")
            return nil
        }
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin:/usr/sbin:/sbin"
        let started = SelfSpawn.start(["dropboxfs", command, mountpoint], environment: ["PATH=\(path)"]) { actions in
            posix_spawn_file_actions_adddup2(&actions, readEnd, 0)
        }
        close(readEnd)
        guard case .success(let pid) = started else {
            close(writeEnd)
            if case .failure(let error) = started { printError("cannot start the mount guard: \(error.message)") }
            return nil
        }
        // writeEnd stays open (close-on-exec) for the life of the daemon: its end is the signal.
        return Handle(pid: pid, writeEnd: writeEnd)
    }

    /// In the daemon, after a normal end of the session (unmounted): tells the guard to leave
    /// without acting, and reaps it if it already has.
    static func disarm(_ handle: Handle?) {
        guard let handle else { return }
        // libfuse restored SIGPIPE's default at teardown: a guard already gone (killed with the
        // daemon by `pkill dropboxfs`) must not make this write kill the daemon.
        signal(SIGPIPE, SIG_IGN)
        var byte: UInt8 = 1
        _ = write(handle.writeEnd, &byte, 1)
        close(handle.writeEnd)
        var status: Int32 = 0
        _ = waitpid(handle.pid, &status, WNOHANG)
    }

    /// The guard process: waits for the daemon to end, then detaches its mount if still there.
    static func watch(_ arguments: [String]) -> ExitCode {
        guard arguments.count == 1 else { return .usage }
        let mountpoint = arguments[0]
        _ = chdir("/")  // never keep the mount point busy
        // Hold nothing of the daemon's but the pipe (libfuse's auto_unmount socket among others).
        var limit = rlimit()
        let highest = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 ? min(limit.rlim_cur, 1 << 16) : 1024
        for fd in Int32(3)..<Int32(highest) { close(fd) }
        guard let guarded = mount(at: mountpoint, device: nil) else { return .success }
        var byte: UInt8 = 0
        let read = withUnsafeMutableBytes(of: &byte) { try? FileDescriptor.standardInput.read(into: $0) }
        if read == 1 { return .success }  // disarmed: the daemon unmounted normally
        guard mount(at: mountpoint, device: guarded.device) != nil else { return .success }
        if MountTable.detach(mountpoint) {
            printError("the daemon ended without unmounting \(mountpoint); unmounted it")
            return .success
        }
        printError("the daemon ended without unmounting \(mountpoint), and unmounting it failed")
        return .failure
    }

    /// The newest dropboxfs mount at `mountpoint` (with that device number, when given).
    private static func mount(at mountpoint: String, device: String?) -> MountEntry? {
        MountTable.entries().last {
            $0.isMounted(at: mountpoint) && $0.fileSystemType == "fuse.dropboxfs" && (device == nil || $0.device == device)
        }
    }

}
