// The knobs of the pacer: how often and how long to retry, and how many requests may run at once.

public struct RetryPolicy: Sendable, Equatable {
    /// The first backoff ceiling; it doubles per failure up to `maxDelay`.
    public var baseDelay: Duration
    public var maxDelay: Duration
    /// Attempts in all (the first one included) for 5xx replies and transient network failures.
    public var maxAttempts: Int
    /// 429 replies one request may wait out before it fails with `.rateLimited`.
    public var maxRateLimitWaits: Int
    /// Up to this much is added at random to each `retry_after`, so paused callers do not return at once.
    public var rateLimitJitter: Duration
    /// Requests in flight at once through one pacer.
    public var maxConcurrentRequests: Int
    /// Read-ahead requests of small files in flight at once, besides those (Pacer's lanes).
    public var maxReadAheadRequests: Int = 48
    /// The longest pause one 429 may cause, whatever its `retry_after` says (at most
    /// ServerLimits.maxRetryAfter; shorter for tests).
    public var maxRateLimitPause: Duration

    public init(
        baseDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(5), maxAttempts: Int = 5,
        maxRateLimitWaits: Int = 10, rateLimitJitter: Duration = .milliseconds(250), maxConcurrentRequests: Int = 8,
        maxRateLimitPause: Duration = .seconds(ServerLimits.maxRetryAfter)
    ) {
        precondition(maxAttempts >= 1 && maxConcurrentRequests >= 1)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxAttempts = maxAttempts
        self.maxRateLimitWaits = maxRateLimitWaits
        self.rateLimitJitter = rateLimitJitter
        self.maxConcurrentRequests = maxConcurrentRequests
        self.maxRateLimitPause = maxRateLimitPause
    }
}
