// Time as the pacer and the token provider see it. Production uses the continuous clock; tests
// inject a manual clock so retry and pause logic runs without real sleeping.

public protocol Sleeper: Sendable {
    var now: ContinuousClock.Instant { get }
    /// Returns at `deadline` (at once if it has passed); throws `.transport(.cancelled)` if the
    /// calling task is cancelled first.
    func sleep(until deadline: ContinuousClock.Instant) async throws(DropboxError)
}

public struct SystemSleeper: Sleeper {
    public init() {}

    public var now: ContinuousClock.Instant { .now }

    public func sleep(until deadline: ContinuousClock.Instant) async throws(DropboxError) {
        do {
            try await Task.sleep(until: deadline, clock: .continuous)
        } catch {
            throw .cancelled
        }
    }
}

extension DropboxError {
    /// The error of work abandoned because its task was cancelled.
    static let cancelled = DropboxError.transport(TransportError(kind: .cancelled, message: "request cancelled"))
}
