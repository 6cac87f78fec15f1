// The life of one mount: create the libfuse session with our operations and mount options, install
// signal handlers, mount, run the multi-threaded loop until unmounted or signalled, then tear down.
// Kernel cache invalidations also go through here, since they need the session.
//
// Locking: `session` is written once before the loop starts and cleared after it ends, under `lock`,
// which invalidation batches also hold while they call into libfuse.

import CFuse
import DropboxAPI  // for Log only
import DropboxFS
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

public enum MountFailure: Error, Sendable, Equatable, CustomStringConvertible {
    case badOptions([String])
    case mountFailed(String)

    public var description: String {
        switch self {
        case .badOptions(let options): return "libfuse rejected the mount options \(options.joined(separator: ","))"
        case .mountFailed(let mountpoint): return "could not mount on \(mountpoint) (see the message above)"
        }
    }
}

public final class FUSESession: Sendable {
    private struct SessionPointer: @unchecked Sendable { let raw: OpaquePointer }
    private let lock = Mutex<SessionPointer?>(nil)

    public let filesystem: FUSEFilesystem
    public let mountpoint: String
    public let mountOptions: [String]
    public let maxThreads: Int
    /// Kernel read-ahead for this mount, set when running as root.
    public let readaheadKilobytes: Int

    public init(
        filesystem: FUSEFilesystem, mountpoint: String, mountOptions: [String], maxThreads: Int = 16,
        readaheadKilobytes: Int = 1024
    ) {
        self.filesystem = filesystem
        self.mountpoint = mountpoint
        self.mountOptions = mountOptions
        self.maxThreads = maxThreads
        self.readaheadKilobytes = readaheadKilobytes
    }

    /// Mounts, calls `mounted`, and serves requests until the filesystem is unmounted or the
    /// process gets SIGINT, SIGTERM or SIGHUP. Blocks the calling thread.
    public func run(mounted: () -> Void) throws(MountFailure) {
        let arguments: [String] = ["dropboxfs", "-o", mountOptions.joined(separator: ",")]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        defer { argv.forEach { free($0) } }
        let userdata = Unmanaged.passRetained(filesystem)
        defer { userdata.release() }
        var ops = FUSEOperations.table()
        let session: OpaquePointer? = argv.withUnsafeMutableBufferPointer { buffer in
            var args = fuse_args(argc: Int32(buffer.count), argv: buffer.baseAddress, allocated: 0)
            defer { fuse_opt_free_args(&args) }
            return fuse_session_new(&args, &ops, MemoryLayout<fuse_lowlevel_ops>.size, userdata.toOpaque())
        }
        guard let session else { throw .badOptions(mountOptions) }
        defer { fuse_session_destroy(session) }

        // libfuse installs its handlers only where the disposition is SIG_DFL; a daemon started in
        // the background inherits SIGINT ignored (NOTES-swift-fuse.md, signals).
        for signal in [SIGINT, SIGTERM, SIGHUP] { Glibc.signal(signal, SIG_DFL) }
        guard fuse_set_signal_handlers(session) == 0 else { throw .mountFailed(mountpoint) }
        defer { fuse_remove_signal_handlers(session) }

        guard fuse_session_mount(session, mountpoint) == 0 else { throw .mountFailed(mountpoint) }
        lock.withLock { $0 = SessionPointer(raw: session) }
        KernelReadahead.raise(mountpoint: mountpoint, kilobytes: readaheadKilobytes)
        mounted()

        let config = fuse_loop_cfg_create()
        fuse_loop_cfg_set_max_threads(config, UInt32(maxThreads))
        fuse_loop_cfg_set_clone_fd(config, 0)
        let result = fuse_session_loop_mt(session, config)
        fuse_loop_cfg_destroy(config)
        lock.withLock { $0 = nil }
        if result != 0 && result != -EINTR && result != SIGINT && result != SIGTERM && result != SIGHUP {
            Log.debug("fuse loop ended with \(result)")
        }
        fuse_session_unmount(session)
    }

    /// Tells the kernel to drop cached names and attributes that a tree change made stale. The
    /// session lock is held for the whole batch, so teardown (which clears the pointer before
    /// destroying the session) never frees the session under a notify call.
    public func invalidate(_ invalidations: [Invalidation]) {
        lock.withLock { pointer in
            guard let session = pointer else { return }
            for invalidation in invalidations {
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
