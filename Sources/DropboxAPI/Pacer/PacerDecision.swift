// What the pacer does after a failed attempt, as a pure function of the error, the attempts so far
// and a random value: tested from a table, with no clock involved.

public enum PacerDecision: Sendable, Equatable {
    /// Wait this long, then try again (5xx, lost connection, timeout).
    case retry(after: Duration)
    /// Dropbox said 429: pause every caller of the pacer this long, then try again.
    case pauseAll(for: Duration)
    /// Give up and surface the error.
    case fail

    /// The failures one request has met so far.
    public struct Attempts: Sendable, Equatable {
        /// 5xx replies and transient transport failures.
        public var failures: Int
        /// 429 replies waited out.
        public var rateLimits: Int

        public init(failures: Int = 0, rateLimits: Int = 0) {
            self.failures = failures
            self.rateLimits = rateLimits
        }
    }

    /// The decision after `error`; `attempts` is updated to count it.
    public static func after(
        _ error: DropboxError, attempts: inout Attempts, random: Double, policy: RetryPolicy
    ) -> PacerDecision {
        switch error {
        case .rateLimited(let retryAfter):
            guard attempts.rateLimits < policy.maxRateLimitWaits else { return .fail }
            attempts.rateLimits += 1
            let jitter = Backoff.nanoseconds(policy.rateLimitJitter)
            // Bounded again here: a `.rateLimited` may come from any client, not only the decoder.
            let cap = min(ServerLimits.maxRetryAfter, Double(policy.maxRateLimitPause.components.seconds))
            let seconds = retryAfter.isFinite ? min(max(retryAfter, 0), cap) : cap
            // A zero (retry_after 0, or a Retry-After date already past) pauses for the jitter
            // only: the server allows the request at once, and the jitter keeps the callers the
            // pause held from all returning together. A server that keeps answering so is bounded
            // by maxRateLimitWaits.
            let wait = Int64(seconds * 1e9) + Int64(Double(jitter) * min(max(random, 0), 1))
            return .pauseAll(for: .nanoseconds(wait))
        case .serverError:
            return retry(&attempts, random: random, policy: policy)
        case .transport(let transport) where transport.isTransient:
            return retry(&attempts, random: random, policy: policy)
        default:
            return .fail
        }
    }

    private static func retry(_ attempts: inout Attempts, random: Double, policy: RetryPolicy) -> PacerDecision {
        attempts.failures += 1
        guard attempts.failures < policy.maxAttempts else { return .fail }
        return .retry(after: Backoff.delay(afterFailure: attempts.failures, random: random, policy: policy))
    }
}
