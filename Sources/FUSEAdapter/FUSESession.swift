// The life of one mount: create the libfuse session with our operations and mount options, install
// signal handlers, mount, wait until the kernel's INIT was answered (KernelInit.swift; only then
// does the mount count as started), run the loop (SessionLoop's, or libfuse's multi-threaded one)
// until unmounted or signalled, then tear down.
// Kernel cache invalidations also go through here, since they need the session: it installs itself
// as the core's invalidation handler when it is made (the core lets go of it at `stop`).
//
// Teardown, whatever ended the loop (`fusermount3 -u`, SIGTERM, SIGINT, SIGHUP, or a lazy unmount
// noticed by DetachWatch): the request owner fails every request still in flight and refuses new
// ones (RequestOwner.swift); then, until no reply or invalidation is inside libfuse any more, the
// requests the kernel still queues are answered (an invalidation may wait in the kernel for one of
// them); only then is the session destroyed, so nothing ever replies into a destroyed session. An
// invalidation still stuck after a few seconds is freed by aborting the kernel connection (fusectl,
// where it is mounted); failing that, the session is left undestroyed rather than freed under it.
//
// Locking: `session` is written once before the loop starts and cleared after it ends, under
// `lock`, which is held only to read or write the pointer. Whether the session may still be used
// is the request owner's business.

import CFuse
import DropboxFS
import Log
import Synchronization
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

public enum MountFailure: Error, Sendable, Equatable, CustomStringConvertible {
    case badOptions([String])
    case mountFailed(String)
    /// Mounted, but the kernel's INIT was not answered (KernelInit.swift): nothing stays mounted.
    case notStarted(String, KernelInit.Outcome)

    public var description: String {
        switch self {
        case .badOptions(let options): return "libfuse rejected the mount options \(options.joined(separator: ","))"
        case .mountFailed(let mountpoint): return "could not mount on \(mountpoint) (see the message above)"
        case .notStarted(let mountpoint, let outcome):
            let why: String
            switch outcome {
            case .refused: why = "libfuse refused the kernel's INIT request (see the message above)"
            case .timedOut: why = "the kernel sent no INIT request within \(Int(KernelInit.limit)) s"
            case .ended, .started: why = "the session ended before the kernel's INIT request was answered"
            }
            return "could not start the mount on \(mountpoint): \(why); nothing is mounted"
        }
    }
}

public final class FUSESession: Sendable {
    private struct SessionPointer: @unchecked Sendable { let raw: OpaquePointer }
    private let lock = Mutex<SessionPointer?>(nil)

    public let filesystem: FUSEFilesystem
    public let mountpoint: String
    public let mountOptions: [String]
    /// Threads of libfuse's multi-threaded loop, used when `spinMicroseconds` is 0.
    public let maxThreads: Int
    /// How long the one thread of SessionLoop stays awake for the next request; 0: libfuse's loop.
    public let spinMicroseconds: Int
    /// Kernel read-ahead for this mount, set when running as root.
    public let readaheadKilobytes: Int

    public init(
        filesystem: FUSEFilesystem, mountpoint: String, mountOptions: [String], maxThreads: Int = 16,
        spinMicroseconds: Int = 0, readaheadKilobytes: Int = 1024
    ) {
        self.filesystem = filesystem
        self.mountpoint = mountpoint
        self.mountOptions = mountOptions
        self.maxThreads = maxThreads
        self.spinMicroseconds = SessionLoop.spinMicroseconds(requested: spinMicroseconds)
        self.readaheadKilobytes = readaheadKilobytes
        filesystem.core.setInvalidationHandler { [self] in invalidate($0) }
    }

    /// Mounts, waits until the kernel's INIT was answered (KernelInit.swift), calls `mounted`, and
    /// serves requests until the filesystem is unmounted (also lazily) or the process gets SIGINT,
    /// SIGTERM or SIGHUP. Blocks the calling thread. A session that ends before INIT was answered
    /// is torn down and unmounted like any other, then thrown as `.notStarted`, `mounted` uncalled.
    public func run(mounted: () -> Void) throws(MountFailure) {
        let arguments: [String] = ["dropboxfs", "-o", mountOptions.joined(separator: ",")]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        defer { argv.forEach { free($0) } }
        for option in mountOptions where option.hasPrefix("max_read=") {
            filesystem.maxRead.store(UInt32(option.dropFirst("max_read=".count)) ?? 0, ordering: .relaxed)
        }
        let userdata = Unmanaged.passRetained(filesystem)
        defer { userdata.release() }
        var ops = FUSEOperations.table()
        let session: OpaquePointer? = argv.withUnsafeMutableBufferPointer { buffer in
            var args = fuse_args(argc: Int32(buffer.count), argv: buffer.baseAddress, allocated: 0)
            defer { fuse_opt_free_args(&args) }
            return fuse_session_new(&args, &ops, MemoryLayout<fuse_lowlevel_ops>.size, userdata.toOpaque())
        }
        guard let session else { throw .badOptions(mountOptions) }
        var destroy = true
        defer { if destroy { fuse_session_destroy(session) } }

        // libfuse installs its handlers only where the disposition is SIG_DFL; a daemon started in
        // the background inherits SIGINT ignored (docs/SWIFT-FUSE-NOTES.md, "Signals").
        for signal in [SIGINT, SIGTERM, SIGHUP] { Glibc.signal(signal, SIG_DFL) }
        guard fuse_set_signal_handlers(session) == 0 else { throw .mountFailed(mountpoint) }
        defer { fuse_remove_signal_handlers(session) }

        guard fuse_session_mount(session, mountpoint) == 0 else { throw .mountFailed(mountpoint) }
        lock.withLock { $0 = SessionPointer(raw: session) }
        let device = MountTable.entries().last(where: { $0.isMounted(at: mountpoint) })?.device
        KernelReadahead.raise(device: device, kilobytes: readaheadKilobytes)
        // A lazy unmount ends the loop as SIGTERM does: libfuse's handler, run on this thread,
        // wakes the loop, which waits in poll() or, libfuse's, in sem_wait (fuse_session_exit
        // alone would not wake it).
        let loopThread = pthread_self()
        let sessionToEnd = SessionPointer(raw: session)
        let detachWatch = device.flatMap { device in
            DetachWatch.start(device: device, connection: fuse_session_fd(session)) {
                Log.info("\(self.mountpoint) was detached (lazy unmount); stopping")
                fuse_session_exit(sessionToEnd.raw)
                pthread_kill(loopThread, SIGTERM)
            }
        }
        let start = KernelInit.wait(session, filesystem: filesystem, now: SystemClock.monotonicSeconds)
        if start == .started {
            mounted()
            serve(session)
        } else if start == .timedOut {
            Log.warning("the kernel sent no INIT request within \(Int(KernelInit.limit)) s after the mount; giving up")
        }
        detachWatch?.stop()  // before the signal handlers go: its wake-up is a SIGTERM
        finish(session, device: device, destroy: &destroy)
        if start != .started { throw .notStarted(mountpoint, start) }
    }

    /// Runs the request loop (SessionLoop's, or libfuse's multi-threaded one) until it ends.
    private func serve(_ session: OpaquePointer) {
        let result: Int32
        if spinMicroseconds > 0 {
            Log.debug("serving requests on one thread, awake \(spinMicroseconds) µs for the next one")
            result = SessionLoop.run(session, spinMicroseconds: spinMicroseconds)
        } else {
            Log.debug("serving requests with libfuse's loop, up to \(maxThreads) threads")
            let config = fuse_loop_cfg_create()
            fuse_loop_cfg_set_max_threads(config, UInt32(maxThreads))
            fuse_loop_cfg_set_clone_fd(config, 0)
            result = fuse_session_loop_mt(session, config)
            fuse_loop_cfg_destroy(config)
        }
        if result != 0 && result != -EINTR && result != SIGINT && result != SIGTERM && result != SIGHUP {
            Log.debug("fuse loop ended with \(result)")
        }
    }

    /// After the loop (or a start that failed): tears the session down and unmounts what is still
    /// ours. `destroy`: whether the session may be destroyed afterwards.
    private func finish(_ session: OpaquePointer, device: String?, destroy: inout Bool) {
        // Whatever the loop answered, the device tells whether the kernel ended the connection:
        // after an unmount the mount is gone; after an abort through fusectl it is still there.
        let stillMounted = { device.map { device in MountTable.entries().contains(where: { $0.device == device }) } ?? true }
        // An unmount ends the connection a moment before its mount leaves the table: a mount that
        // leaves within 200 ms was unmounted, not aborted.
        let staysMounted = {
            for _ in 0..<20 where stillMounted() { usleep(10_000) }
            return stillMounted()
        }
        if device != nil && stillMounted() && Self.connectionGone(session) && staysMounted() {
            Log.info("the kernel connection of \(mountpoint) was aborted (/sys/fs/fuse/connections); stopping")
        }
        destroy = tearDown(session, device: device)
        lock.withLock { $0 = nil }
        // Only a mount still in the table is ours to unmount: after a lazy unmount another mount
        // may stand on the same folder.
        guard stillMounted() else { return }
        if Self.connectionGone(session) {
            // Aborted (from outside, or by the teardown to free a stuck invalidation): libfuse
            // leaves such a mount alone (its device polls as an error), and it would stay behind
            // as "Transport endpoint is not connected" until fusermount3's auto_unmount helper,
            // racing our exit, happened to remove it.
            if !MountTable.detach(mountpoint) { Log.warning("could not unmount \(mountpoint) after the abort") }
        } else {
            fuse_session_unmount(session)
        }
    }

    /// Whether the kernel ended the session's connection (unmounted or aborted): the device then
    /// polls as an error.
    static func connectionGone(_ session: OpaquePointer) -> Bool {
        var fds = pollfd(fd: fuse_session_fd(session), events: Int16(POLLIN), revents: 0)
        return poll(&fds, 1, 0) == 1 && fds.revents & Int16(POLLERR) != 0
    }

    /// Fails the requests still in flight and waits (answering what the kernel still queues) until
    /// nothing is inside libfuse. Returns whether the session may be destroyed.
    private func tearDown(_ session: OpaquePointer, device: String?) -> Bool {
        let requests = filesystem.requests
        let failed = requests.pendingCount
        requests.close(failingWith: FilesystemError.unmounting.errno)
        if failed > 0 { Log.info("\(failed) requests still in flight were failed (the mount is going away)") }
        var drain = SessionDrain(session)
        defer {
            if drain.answered > 0 { Log.info("answered \(drain.answered) requests the kernel sent while stopping") }
        }
        if requests.finish(within: .seconds(3), meanwhile: { drain.step(milliseconds: 50) }) { return true }
        // Still blocked: the kernel's own way out is aborting the connection, which ends every call
        // waiting in it (fusectl, where it is mounted and the connection is ours).
        let aborted = device.map(Self.abortConnection) ?? false
        if aborted && requests.finish(within: .seconds(1), meanwhile: { usleep(10_000) }) { return true }
        Log.warning("a kernel cache invalidation is still blocked in the kernel; exiting without freeing the session")
        return false
    }

    /// Aborts the kernel connection of the mount on `device` ("major:minor") through
    /// /sys/fs/fuse/connections; false when that is not possible.
    private static func abortConnection(device: String) -> Bool {
        guard let minor = device.split(separator: ":").last else { return false }
        let path = "/sys/fs/fuse/connections/\(minor)/abort"
        guard let file = try? FileDescriptor.open(path, O_WRONLY | O_CLOEXEC) else { return false }
        defer { try? file.close() }
        Log.info("aborting the kernel connection (\(path)) to free a blocked cache invalidation")
        return (try? Array("1".utf8).withUnsafeBytes { try file.write($0) }) == 1
    }

    /// Tells the kernel to drop cached names and attributes that a tree change made stale. The
    /// request owner lets it run only while the session serves (teardown waits for a batch in
    /// progress, and a batch stops early once teardown began); no lock is held meanwhile, since
    /// the kernel may hold a call until a request in flight is answered.
    public func invalidate(_ invalidations: [Invalidation]) {
        guard let session = lock.withLock({ $0 }) else { return }
        let requests = filesystem.requests
        requests.whileServing {
            for invalidation in invalidations {
                guard requests.isServing else { return }
                switch invalidation {
                case .entry(let parent, let name):
                    let rc = name.withCString { fuse_lowlevel_notify_inval_entry(session.raw, parent, $0, strlen($0)) }
                    if rc != 0 && rc != -ENOENT { Log.debug("inval_entry \(parent)/\(name): \(rc)") }
                case .inode(let inode):
                    let rc = fuse_lowlevel_notify_inval_inode(session.raw, inode, 0, 0)
                    if rc != 0 && rc != -ENOENT { Log.debug("inval_inode \(inode): \(rc)") }
                }
            }
        }
    }
}

/// After the loop ended: answers the requests the kernel still queues, one at a time on the
/// tearing-down thread (the request owner is closing, so those that would wait are failed at once).
/// libfuse drops what it reads once the session was told to exit, hence the reset first.
private struct SessionDrain {
    let reader: DeviceReader
    var connected = true
    /// Requests read from the kernel and answered (failed, mostly) by the drain.
    var answered = 0

    init(_ session: OpaquePointer) {
        fuse_session_reset(session)
        reader = DeviceReader(session)
        // Never block in a read: a request that polled as queued can vanish before it is read
        // (its caller was killed), and the drain must keep its time limit.
        _ = try? reader.setNonBlocking()
    }

    mutating func step(milliseconds: Int32) {
        guard connected else {
            usleep(UInt32(milliseconds) * 1000)
            return
        }
        guard reader.waitForRequest(milliseconds: milliseconds) else { return }
        switch reader.receive() {
        case .served: answered += 1
        case .nothing, .interrupted: break
        case .ended: connected = false  // unmounted or aborted (ENODEV), or told to exit again
        }
    }
}
