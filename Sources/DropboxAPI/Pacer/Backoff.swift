// Exponential backoff with jitter, as a pure function so that it is tested from a table.

public enum Backoff {
    /// The wait after the `failure`-th failed attempt (1 for the first) given `random` in 0..<1:
    /// the ceiling is `baseDelay * 2^(failure-1)` capped at `maxDelay`, and the wait lies in the
    /// upper half of it ("equal jitter"), so it never collapses to zero.
    public static func delay(afterFailure failure: Int, random: Double, policy: RetryPolicy) -> Duration {
        delay(afterFailure: failure, random: random, base: policy.baseDelay, cap: policy.maxDelay)
    }

    /// The same curve for retries outside the pacer (the change watcher, the whole-account fill):
    /// `base` doubled per failure up to `cap`, in the upper half of that ceiling.
    public static func delay(afterFailure failure: Int, random: Double, base: Duration, cap: Duration) -> Duration {
        let base = nanoseconds(base)
        let cap = nanoseconds(cap)
        let doublings = min(max(failure - 1, 0), 62)
        let (scaled, overflow) = base.multipliedReportingOverflow(by: Int64(1) << doublings)
        let ceiling = overflow ? cap : min(scaled, cap)
        let half = ceiling / 2
        let fraction = min(max(random, 0), 1)
        return .nanoseconds(ceiling - half + Int64(Double(half) * fraction))
    }

    static func nanoseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
