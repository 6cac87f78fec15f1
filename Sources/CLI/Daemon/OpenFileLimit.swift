// The daemon holds a descriptor per connection to Dropbox, per disk cache file being read or
// written, and libfuse's own; the soft limit on open files (often 1024) is far below the hard limit
// a user may raise it to. So `mount` raises the soft limit to the hard one at start (capped at
// 2^20, the kernel's usual ceiling, for hard limits that say "unlimited").

import Log

#if canImport(Glibc)
    import Glibc
#endif

enum OpenFileLimit {
    static let ceiling: rlim_t = 1 << 20

    /// Raises the soft RLIMIT_NOFILE to the hard limit; returns the soft limit in force after.
    @discardableResult
    static func raiseToHardLimit() -> rlim_t {
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return 0 }
        let wanted = min(limit.rlim_max, ceiling)
        guard limit.rlim_cur < wanted else { return limit.rlim_cur }
        let before = limit.rlim_cur
        limit.rlim_cur = wanted
        guard setrlimit(resource, &limit) == 0 else {
            Log.debug("cannot raise the open file limit from \(before) to \(wanted): \(String(cString: strerror(errno)))")
            return before
        }
        return wanted
    }
}
