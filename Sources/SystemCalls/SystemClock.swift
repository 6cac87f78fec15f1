// The clocks: monotonic seconds for every deadline, timeout and rate (never the wall clock, which
// jumps), the time suspended (to notice that the machine slept), and the wall clock for log
// timestamps. Tests that need time to move at will inject a
// function of the monotonic clock's shape instead.

#if canImport(Glibc)
    import Glibc
#endif

public enum SystemClock {
    /// Seconds on CLOCK_MONOTONIC: only differences mean anything.
    @Sendable public static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// The seconds this machine was suspended since boot: CLOCK_BOOTTIME, which counts them, minus
    /// CLOCK_MONOTONIC, which does not. It grows by the time of each suspend.
    @Sendable public static func suspendedSeconds() -> Double {
        var boot = timespec()
        var mono = timespec()
        clock_gettime(CLOCK_BOOTTIME, &boot)
        clock_gettime(CLOCK_MONOTONIC, &mono)
        return Double(boot.tv_sec - mono.tv_sec) + Double(boot.tv_nsec - mono.tv_nsec) / 1e9
    }

    /// The wall clock (CLOCK_REALTIME).
    public static func realtime() -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now
    }
}
