// Noticing that the machine slept. CLOCK_BOOTTIME counts the time a laptop is suspended and
// CLOCK_MONOTONIC does not, so their difference grows by the time slept. libcurl's timeouts run on
// the monotonic clock, which stood still meanwhile: a longpoll sent before the sleep waits on a
// connection that died with it, for its whole timeout after the resume, and changes made meanwhile
// showed minutes late. The sync engine checks the gap every second (SyncEngine.watchForResume);
// when it grew by more than `threshold` seconds it wakes the change watcher (WatcherWakeup, ChangeWatcher.swift),
// which drops its longpoll or pause and catches up at once, and lets requests probe unreachable
// hosts again at once (docs/SEMANTICS.md, "Offline, sleep and sign-in").
//
// A test hook stands in for a real suspend: with DROPBOXFS_TEST_CLOCK_JUMP_FILE set, the seconds
// written in that file are added to the gap (docs/TESTING.md, "Test-only hooks"; the daemon warns
// at start). `state` (a Mutex) guards the last gap seen.

import Synchronization
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

public final class ResumeDetector: Sendable {
    private let gap: @Sendable () -> Double
    private let threshold: Double
    private let last: Mutex<Double>

    /// `gap`: seconds the machine has slept since boot (CLOCK_BOOTTIME - CLOCK_MONOTONIC).
    public init(gap: @escaping @Sendable () -> Double = SystemClock.suspendedSeconds, threshold: Double = 2) {
        self.gap = gap
        self.threshold = threshold
        last = Mutex(gap())
    }

    /// The seconds slept since the last check, when more than the threshold; else nil.
    public func check() -> Double? {
        let now = gap()
        let slept = last.withLock { previous -> Double in
            defer { previous = now }
            return now - previous
        }
        return slept > threshold ? slept : nil
    }

    /// `SystemClock.suspendedSeconds` plus the seconds written in the file at `path` (a test hook; an absent or
    /// unreadable file adds nothing).
    public static func gap(withJumpFile path: String) -> @Sendable () -> Double {
        { SystemClock.suspendedSeconds() + jump(path) }
    }

    private static func jump(_ path: String) -> Double {
        guard let file = fopen(path, "r") else { return 0 }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return 0 }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return Double(text.filter { !$0.isWhitespace }) ?? 0
    }
}
