// Whether Dropbox accepts the mount's credentials. A token that expired and cannot be renewed, a
// revoked sign-in, a token Dropbox rejects, a suspended account or a missing permission is not a
// network fault: the host answered. The mount says so once in the log, with what to do (`advice`,
// which depends on where the credentials come from), shows it in the status attribute
// (`sign_in=refused`), and requests that need Dropbox fail with EACCES meanwhile (ErrnoTable.swift).
// The next request that succeeds (after a new token or `dropboxfs auth`, which the token provider
// re-reads: Sources/CLI/Credentials/Credentials.swift) clears it, with one more log line.
//
// `state` (a Mutex) guards the problem and its time; no lock is held across a request.

import DropboxAPI
import Log
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

public final class SignInHealth: Sendable {
    public struct Problem: Sendable, Equatable {
        /// Seconds since the epoch when Dropbox first refused the credentials.
        public var since: Int64
        /// What Dropbox said (DropboxError's description; never a token).
        public var reason: String
    }
    private let state = Mutex<Problem?>(nil)
    /// What the user should do, e.g. "run `dropboxfs auth` to sign in again".
    let advice: String
    private let wallNow: @Sendable () -> Int64

    public init(
        advice: String = "sign in again with `dropboxfs auth`",
        wallNow: @escaping @Sendable () -> Int64 = { Int64(time(nil)) }
    ) {
        self.advice = advice
        self.wallNow = wallNow
    }

    /// The current refusal, nil while the credentials work.
    public var problem: Problem? { state.withLock { $0 } }

    /// Notes a request's outcome: nil for success, else its error. Only a success clears a
    /// refusal, and only an authentication failure sets one; other errors say nothing about it.
    /// Returns whether a refusal ended.
    @discardableResult
    func note(_ error: DropboxError?) -> Bool {
        guard let error else {
            let was = state.withLock { s -> Problem? in
                defer { s = nil }
                return s
            }
            if let was { Log.info("Dropbox accepts the sign-in again (it was refused for \(wallNow() - was.since) s)") }
            return was != nil
        }
        guard case .authentication = error else { return false }
        let reason = error.description
        let now = wallNow()
        let first = state.withLock { s -> Bool in
            guard s == nil else {
                s?.reason = reason
                return false
            }
            s = Problem(since: now, reason: reason)
            return true
        }
        if first {
            Log.warning(
                "Dropbox refused the sign-in (\(reason)): \(advice). Until then, requests that need Dropbox fail "
                    + "with EACCES")
        }
        return false
    }

    /// `sign_in=refused sign_in_since=... sign_in_error=...` for the status line, or nothing.
    func statusFields() -> [String] {
        guard let problem else { return [] }
        return [
            "sign_in=refused", "sign_in_since=\(Connectivity.timestamp(problem.since))",
            "sign_in_error=" + Log.escaped(problem.reason).replacingOccurrences(of: " ", with: "_"),
        ]
    }
}
