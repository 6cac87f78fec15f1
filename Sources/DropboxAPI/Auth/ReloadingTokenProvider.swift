// Credentials that can be fixed while mounted. A token in a file (--access-token-file) or a stored
// sign-in (credentials.json, rewritten by `dropboxfs auth`) may be replaced while a mount runs: a
// revoked or expired token is then fixed without a remount. Before handing out a token, at most
// once per `checkEvery`, the source's `version` (the file's identity, size and change time) is
// compared with the one loaded; when it changed, `load` builds the provider anew and later requests
// use it (one log line). After Dropbox rejects a token as expired and the provider in use cannot
// renew it, the source is looked at once more at once, so a new token is used by that very request.
// A source that cannot be read keeps the provider in use. New credentials may belong to another
// account than the one mounted (a token file rewritten with another account's token, `auth` run
// again for someone else): `accept` is asked before they are used, and credentials it refuses are
// not used (one log line, with its reason); those it cannot judge yet (Dropbox did not answer) are
// looked at again at the next check.
//
// `state` (a Mutex) guards the provider in use, its source version and the last check; no lock is
// held across a request or a load.

import Log
import Synchronization

public final class ReloadingTokenProvider: AccessTokenProvider {
    private struct State {
        var provider: any AccessTokenProvider
        var version: String?
        var checkedAt: ContinuousClock.Instant?
    }
    private let state: Mutex<State>
    private let version: @Sendable () -> String?
    private let load: @Sendable () -> (any AccessTokenProvider)?
    private let accept: @Sendable (any AccessTokenProvider) async -> Acceptance
    private let checkEvery: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    /// Named in the log line, e.g. "the access token file /home/a/token" (never a token).
    private let source: String

    /// What `accept` says of new credentials.
    public enum Acceptance: Sendable, Equatable {
        case accepted
        /// Not to be used, ever (the reason is logged once): e.g. another account's.
        case refused(String)
        /// Cannot be told now (Dropbox did not answer): asked again at the next check.
        case unknown
    }

    /// `initial` is the provider loaded from the source at `version()` now.
    public init(
        initial: any AccessTokenProvider, source: String, checkEvery: Duration = .seconds(1),
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
        version: @escaping @Sendable () -> String?, load: @escaping @Sendable () -> (any AccessTokenProvider)?,
        accept: @escaping @Sendable (any AccessTokenProvider) async -> Acceptance = { _ in .accepted }
    ) {
        self.version = version
        self.load = load
        self.accept = accept
        self.checkEvery = checkEvery
        self.now = now
        self.source = source
        state = Mutex(State(provider: initial, version: version(), checkedAt: now()))
    }

    /// The provider to use: the one in use, or a new one when the source changed (and `accept`
    /// took it).
    private func current(force: Bool) async -> (provider: any AccessTokenProvider, reloaded: Bool) {
        let t = now()
        let due = state.withLock { s -> Bool in
            guard force || s.checkedAt.map({ t - $0 >= checkEvery }) ?? true else { return false }
            s.checkedAt = t
            return true
        }
        guard due, let seen = version() else { return (state.withLock { $0.provider }, false) }
        if state.withLock({ $0.version == seen }) { return (state.withLock { $0.provider }, false) }
        guard let fresh = load() else { return (state.withLock { $0.provider }, false) }
        switch await accept(fresh) {
        case .accepted:
            break
        case .refused(let why):
            // Not looked at again until the source changes once more.
            let first = state.withLock { s -> Bool in
                defer { s.version = seen }
                return s.version != seen
            }
            if first { Log.warning("\(source) changed, but \(why): the credentials in use are kept") }
            return (state.withLock { $0.provider }, false)
        case .unknown:
            return (state.withLock { $0.provider }, false)
        }
        state.withLock { s in
            s.provider = fresh
            s.version = seen
        }
        Log.info("\(source) changed: using the new credentials")
        return (fresh, true)
    }

    public func accessToken() async throws(DropboxError) -> String {
        try await current(force: false).provider.accessToken()
    }

    public func refreshAfterRejection(of token: String) async throws(DropboxError) -> String {
        let provider = await current(force: false).provider
        do {
            return try await provider.refreshAfterRejection(of: token)
        } catch {
            let (fresh, reloaded) = await current(force: true)
            guard reloaded else { throw error }
            return try await fresh.accessToken()
        }
    }
}
