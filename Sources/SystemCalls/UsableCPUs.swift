// How many CPUs this process may run on: the CPUs of its affinity mask (taskset, systemd's
// CPUAffinity=, a container's cpuset), not the machine's. Asked by the session loop (spinning
// for the next request only pays with a second CPU) and by the malloc arena limit.

#if canImport(Glibc)
    import Glibc
#endif

public enum UsableCPUs {
    /// The CPUs in this process's affinity mask ("Cpus_allowed:" of /proc/self/status;
    /// sched_getaffinity is not in Swift's Glibc module), else the machine's.
    public static func count() -> Int {
        var count = 0
        forEachLine(ofFile: "/proc/self/status") { line in
            guard let allowed = allowed(inStatusLine: line) else { return true }
            count = allowed
            return false
        }
        return count > 0 ? count : sysconf(Int32(_SC_NPROCESSORS_ONLN))
    }

    /// The CPUs of a "Cpus_allowed:" line (hex words separated by commas), nil for another line.
    static func allowed(inStatusLine line: String) -> Int? {
        guard line.hasPrefix("Cpus_allowed:") else { return nil }
        let digits = line.dropFirst("Cpus_allowed:".count).filter { $0.isHexDigit }
        return digits.reduce(0) { $0 + (Int(String($1), radix: 16) ?? 0).nonzeroBitCount }
    }
}
