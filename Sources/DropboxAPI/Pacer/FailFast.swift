// Requests made for a waiting user fail fast when a host is silent. The pacer retries a
// transient failure up to five times; against a dead network (no route, or a connection that
// swallows every packet) each attempt waits out the connect or answer bound, so a `cat` waited
// minutes to be told what the first attempt already knew. A request run inside
// `FailFast.$enabled.withValue(true)` gets one attempt when the host is not heard from at all (a
// silent failure, TransportError.meansUnreachable): it fails with the kind `.unreachable`, which
// the pacer does not retry. Any failure after the host answered (a reset midway, a 5xx, a stall
// in a body) is retried as before. The background work (fill, change watcher) does not set it:
// it retries on its own schedule.

public enum FailFast {
    /// Whether requests of the current task give up at the first silent failure.
    @TaskLocal public static var enabled = false

    /// `error` as the current task should see it: a silent failure becomes `.unreachable`
    /// (not retried) when failing fast; anything else is unchanged.
    static func adjust(_ error: DropboxError) -> DropboxError {
        guard enabled, case .transport(let failure) = error, failure.meansUnreachable, failure.kind != .unreachable
        else { return error }
        return .transport(TransportError(kind: .unreachable, message: failure.message, silent: true))
    }
}
