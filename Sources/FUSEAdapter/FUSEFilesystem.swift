// The object libfuse's callbacks reach through the session userdata: the filesystem core plus the
// kernel cache settings, the owner of the requests in flight (RequestOwner.swift), the failure
// counts (OperationFailures.swift), and what the init callback records when the kernel connects
// (whether opendir is answered at all, see FUSEOperations.configure; that it ran, KernelInit.swift).

import CFuse
import DropboxFS
import Synchronization

public final class FUSEFilesystem: Sendable {
    public let core: Filesystem
    public let timeouts: CacheTimeouts
    /// Every reply and invalidation goes through it; FUSESession closes it at unmount.
    let requests = RequestOwner(kernel: LibfuseRequests())
    /// Set once in the init callback, before the kernel sends any other request: the kernel opens
    /// folders by itself (opendir answers ENOSYS, no releasedir follows).
    let kernelOpensFolders = Atomic<Bool>(false)
    /// Set at the end of the init callback: the kernel's INIT reached it (libfuse may still
    /// refuse INIT after it; KernelInit.swift tells the two apart).
    let kernelInitialized = Atomic<Bool>(false)
    /// The max_read mount option (0: none), which the init callback must ask for too. Set by
    /// FUSESession.run before the session exists.
    let maxRead = Atomic<UInt32>(0)
    /// Failed requests per operation (the one failure path logs and counts them).
    let failures = OperationFailures()
    /// Test-only (DROPBOXFS_TEST_REFUSE_INIT, docs/TESTING.md "Test-only hooks"): the init
    /// callback asks for what libfuse refuses, so tests can see a mount whose INIT fails.
    let refusesKernelInit: Bool

    /// `refusesKernelInit`: for tests only.
    public init(core: Filesystem, timeouts: CacheTimeouts, refusesKernelInit: Bool = false) {
        self.core = core
        self.timeouts = timeouts
        self.refusesKernelInit = refusesKernelInit
    }

    /// The FUSEFilesystem of a request (installed as session userdata by FUSESession).
    static func of(_ req: fuse_req_t) -> FUSEFilesystem {
        Unmanaged<FUSEFilesystem>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue()
    }
}
