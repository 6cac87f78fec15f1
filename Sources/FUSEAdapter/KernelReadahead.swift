// The kernel reads ahead of a sequential reader by 128 KiB on a FUSE mount, which leaves our
// parallel prefetch starved between requests. As root we can raise it for our own mount only,
// through the mount's backing-device entry in sysfs (+20% on a cold 1 GiB cat, docs/READS.md).
// Without the permission nothing changes.

import Log

#if canImport(Glibc)
    import Glibc
#endif

enum KernelReadahead {
    /// Raises the read-ahead of the mount whose device is `device` ("major:minor").
    static func raise(device: String?, kilobytes: Int) {
        guard geteuid() == 0, let device else { return }
        let path = "/sys/class/bdi/\(device)/read_ahead_kb"
        guard let file = fopen(path, "w") else {
            Log.debug("cannot open \(path): \(String(cString: strerror(errno)))")
            return
        }
        defer { fclose(file) }
        if fputs("\(kilobytes)\n", file) < 0 { Log.debug("cannot write \(path)") }
    }
}
