// The object libfuse's callbacks reach through the session userdata: the filesystem core plus the
// kernel cache settings. It holds no state of its own beyond configuration.

import CFuse
import DropboxFS

public final class FUSEFilesystem: Sendable {
    public let core: Filesystem
    public let timeouts: CacheTimeouts

    public init(core: Filesystem, timeouts: CacheTimeouts) {
        self.core = core
        self.timeouts = timeouts
    }

    /// The FUSEFilesystem of a request (installed as session userdata by FUSESession).
    static func of(_ req: fuse_req_t) -> FUSEFilesystem {
        Unmanaged<FUSEFilesystem>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue()
    }
}
