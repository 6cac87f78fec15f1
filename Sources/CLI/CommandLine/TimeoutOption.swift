// `--timeouts SPEC`: the request deadlines of docs/SEMANTICS.md "Bounds", for slow links (longer)
// and for tests of stalls (seconds instead of minutes). SPEC is a comma list of
// connect=S, answer=S (no byte of a reply that long after the start: with connect, how soon a
// silent host counts as unreachable), rpc=S, download=S, download-rate=BYTES, stall=S,
// low-speed=BYTES/S, max-pause=S (the longest pause one 429 may cause), stale=S (how long catching
// up with Dropbox may fail before the status calls the tree stale); S a duration (seconds, or
// 250ms, 30s, 5m, 1h), `0` turns a limit off where that makes sense (stall, low-speed). Items may
// also be separated by ':', which is how they fit in one `-o timeouts=...` item of an fstab line.

import DropboxAPI

enum TimeoutOption {
    struct Settings {
        var http = DropboxHTTPClient.Configuration()
        var retryPolicy = RetryPolicy()
        /// Seconds (FilesystemOptions.staleAfter).
        var staleAfter: Double = 300
    }

    static func parse(_ text: String?) throws(UsageError) -> Settings {
        var settings = Settings()
        guard let text else { return settings }
        let (configuration, policy) = try parseDeadlines(text, stale: &settings.staleAfter)
        settings.http = configuration
        settings.retryPolicy = policy
        return settings
    }

    private static func parseDeadlines(
        _ text: String, stale: inout Double
    ) throws(UsageError) -> (DropboxHTTPClient.Configuration, RetryPolicy) {
        var configuration = DropboxHTTPClient.Configuration()
        var policy = RetryPolicy()
        for item in text.split(whereSeparator: { $0 == "," || $0 == ":" }) {
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw usage("\"\(item)\" is not NAME=VALUE") }
            let (name, value) = (parts[0], parts[1])
            switch name {
            case "connect": configuration.timeouts.connect = try duration(value, name, allowZero: false)
            case "stale": stale = Double(try duration(value, name, allowZero: false).components.seconds)
            case "answer": configuration.timeouts.answer = try duration(value, name, allowZero: false)
            case "rpc": configuration.rpcDeadline = try duration(value, name, allowZero: false)
            case "download": configuration.downloadDeadline = try duration(value, name, allowZero: false)
            case "download-rate":
                guard let rate = Int(value), rate > 0 else { throw usage("download-rate must be bytes per second (1 or more)") }
                configuration.downloadMinimumRate = rate
            case "stall":
                let d = try duration(value, name, allowZero: true)
                configuration.timeouts.stall = d == .zero ? nil : d
            case "max-pause":
                let d = try duration(value, name, allowZero: false)
                guard d <= .seconds(ServerLimits.maxRetryAfter) else {
                    throw usage("max-pause is at most \(Int(ServerLimits.maxRetryAfter)) s")
                }
                policy.maxRateLimitPause = d
            case "low-speed":
                if value == "0" {
                    configuration.timeouts.lowSpeed = nil
                    continue
                }
                let halves = value.split(separator: "/").map(String.init)
                guard halves.count == 2, let bytes = Int(halves[0]), bytes > 0 else {
                    throw usage("low-speed must be BYTES/SECONDS, e.g. 1024/30, or 0")
                }
                configuration.timeouts.lowSpeed = LowSpeedLimit(
                    bytesPerSecond: bytes, window: try duration(halves[1], name, allowZero: false))
            default:
                throw usage(
                    "unknown timeout \"\(name)\" (connect, answer, rpc, download, download-rate, stall, low-speed, "
                        + "max-pause, stale)")
            }
        }
        return (configuration, policy)
    }

    private static func duration(_ text: String, _ name: String, allowZero: Bool) throws(UsageError) -> Duration {
        guard let seconds = DurationText.seconds(text), seconds >= 0, allowZero || seconds > 0, seconds <= 86_400 else {
            throw usage("\(name) must be a duration such as 30s, 5m or 1h (\(allowZero ? "0" : "more than 0") to 1d)")
        }
        return .milliseconds(Int64(seconds * 1000))
    }

    private static func usage(_ message: String) -> UsageError {
        UsageError(description: "--timeouts: " + message)
    }
}
