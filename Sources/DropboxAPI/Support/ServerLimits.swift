// Every number a server controls is bounded where it enters the client, so no reply, however
// absurd, can make the daemon trap on arithmetic, sleep for years, or renew its token in a loop. Each
// limit is named here once; when one bites, one log line says which value was cut to what. A value
// that cannot be made sensible (a file size past 2^53) makes its entry undecodable instead, and the
// entry is hidden like any other bad entry (docs/SEMANTICS.md, "Names").

import Log

public enum ServerLimits {
    /// The longest pause a 429's `retry_after` (or `Retry-After`) may ask for.
    public static let maxRetryAfter: Double = 600
    /// The longest `backoff` a longpoll reply may ask for before the next longpoll.
    public static let maxLongpollBackoff: Int = 600
    /// Access token lifetimes (`expires_in`) are taken to be within these bounds: a shorter or
    /// negative one would make every request renew the token (a token is renewed halfway through
    /// a short lifetime, so at most one refresh every 2.5 s).
    public static let minTokenLifetime: Int = 5
    public static let maxTokenLifetime: Int = 30 * 86_400
    /// The largest file size accepted: 2^53 bytes (Dropbox's own upload limit is below 2^41, and
    /// sizes up to 2^53 stay exact in every conversion and sum the filesystem makes).
    public static let maxFileSize: UInt64 = 1 << 53

    /// `retry_after` seconds, bounded to 0...maxRetryAfter (a value that is not a number counts as
    /// the maximum).
    public static func retryAfter(_ seconds: Double) -> Double {
        guard seconds.isFinite else { return bitten("retry_after", "\(seconds)", maxRetryAfter) }
        if seconds > maxRetryAfter { return bitten("retry_after", "\(seconds)", maxRetryAfter) }
        return max(seconds, 0)
    }

    /// A longpoll `backoff`, bounded to 0...maxLongpollBackoff.
    public static func longpollBackoff(_ seconds: Int) -> Int {
        if seconds > maxLongpollBackoff { return bitten("longpoll backoff", "\(seconds)", maxLongpollBackoff) }
        return max(seconds, 0)
    }

    /// An access token's `expires_in`, bounded to minTokenLifetime...maxTokenLifetime.
    public static func tokenLifetime(_ seconds: Int) -> Int {
        if seconds < minTokenLifetime { return bitten("expires_in", "\(seconds)", minTokenLifetime) }
        if seconds > maxTokenLifetime { return bitten("expires_in", "\(seconds)", maxTokenLifetime) }
        return seconds
    }

    private static func bitten<T>(_ what: String, _ value: String, _ bound: T) -> T {
        Log.warning("the server sent \(what) \(Log.quoted(value)); using \(bound) instead")
        return bound
    }
}
