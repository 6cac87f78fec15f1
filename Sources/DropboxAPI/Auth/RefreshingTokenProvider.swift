// Short-lived access tokens from a stored refresh token. A token is renewed 5 minutes before it
// expires (or halfway through a shorter life) and after Dropbox rejects it as expired. An early
// renewal runs in the background while callers keep using the token, which is still valid: a slow
// or failing token endpoint holds no request until the token really expires (a failed early
// renewal is tried again after `earlyRetryPause`). Only one refresh runs at a time: every caller
// that needs a new token waits for that same refresh, and a caller whose rejected token has already
// been replaced simply gets the newer one, unless that one was rejected too or has expired (then it
// waits for its replacement like everyone else). A caller whose task is cancelled (an interrupted request)
// stops waiting at once; the refresh goes on for the others (CancellableWait.swift).

import Log
import Synchronization

public final class RefreshingTokenProvider: AccessTokenProvider {
    private typealias Refresh = Task<Result<String, DropboxError>, Never>

    private struct State {
        var token: String?
        /// When `token` stops working; nil when unknown (treated as valid until rejected).
        var expiresAt: ContinuousClock.Instant?
        /// How long before `expiresAt` to renew: the margin, or half the token's lifetime when
        /// that is shorter (else a token living under the margin would be renewed on every call).
        var renewBefore: Duration = .zero
        /// The refresh in flight, shared by every caller that waits for a token.
        var refreshing: Refresh?
        /// Completed refreshes, for tests and status output.
        var refreshCount = 0
        /// No early renewal starts before this (after one failed).
        var earlyRetryAt: ContinuousClock.Instant?
    }

    private enum Next {
        case ready(String)
        case wait(Refresh)
    }

    private let refreshToken: String
    private let oauth: OAuthClient
    private let clock: any Sleeper
    private let margin: Duration
    /// Guards the current token, its expiry and the refresh in flight.
    private let state: Mutex<State>

    /// `initialAccessToken` (with the `expiresIn` Dropbox gave it) saves the first refresh.
    public init(
        refreshToken: String, oauth: OAuthClient, initialAccessToken: String? = nil, expiresIn: Duration? = nil,
        clock: any Sleeper = SystemSleeper(), margin: Duration = .seconds(300)
    ) {
        self.refreshToken = refreshToken
        self.oauth = oauth
        self.clock = clock
        self.margin = margin
        let expiresAt = initialAccessToken == nil ? nil : expiresIn.map { clock.now + $0 }
        state = Mutex(
            State(token: initialAccessToken, expiresAt: expiresAt, renewBefore: Self.renewBefore(expiresIn, margin: margin)))
    }

    /// Pause before an early renewal that failed is tried again.
    static let earlyRetryPause: Duration = .seconds(5)

    public func accessToken() async throws(DropboxError) -> String {
        let now = clock.now
        let next = state.withLock { s -> Next in
            if let token = s.token, s.expiresAt.map({ now + s.renewBefore < $0 }) ?? true { return .ready(token) }
            if let token = s.token, let expiresAt = s.expiresAt, now < expiresAt {
                // Inside the renewal window, still valid: renew in the background.
                if s.refreshing == nil, s.earlyRetryAt.map({ now >= $0 }) ?? true { _ = startRefresh(&s) }
                return .ready(token)
            }
            return .wait(s.refreshing ?? startRefresh(&s))
        }
        switch next {
        case .ready(let token):
            return token
        case .wait(let refresh):
            switch await Self.outcome(of: refresh) {
            case .success(let token):
                return token
            case .failure(let error):
                if case .transport(let failure) = error, failure.kind == .cancelled { throw error }
                // A token still inside its lifetime beats failing because the early refresh failed.
                let fallback = state.withLock { s in
                    s.expiresAt.flatMap { clock.now < $0 ? s.token : nil }
                }
                guard let fallback else { throw error }
                Log.warning("could not refresh the Dropbox access token early (\(error)); using the current one")
                return fallback
            }
        }
    }

    public func refreshAfterRejection(of token: String) async throws(DropboxError) -> String {
        let now = clock.now
        let next = state.withLock { s -> Next in
            if let current = s.token, current != token {
                // Replaced already; but the replacement may itself have been rejected (its expiry is
                // then now) while its own replacement is being fetched.
                if s.expiresAt.map({ now < $0 }) ?? true { return .ready(current) }
            } else {
                // Nobody should start a request with the rejected token any more.
                s.expiresAt = now
            }
            return .wait(s.refreshing ?? startRefresh(&s))
        }
        switch next {
        case .ready(let token): return token
        case .wait(let refresh): return try await Self.outcome(of: refresh).get()
        }
    }

    /// The refresh's outcome, or a cancelled transport error as soon as the caller is cancelled.
    private static func outcome(of refresh: Refresh) async -> Result<String, DropboxError> {
        await waitCancellably(
            for: refresh, cancelled: .failure(.transport(TransportError(kind: .cancelled, message: "request cancelled"))))
    }

    /// Refreshes completed so far.
    static func renewBefore(_ lifetime: Duration?, margin: Duration) -> Duration {
        guard let lifetime else { return margin }
        return min(margin, lifetime / 2)
    }

    public var refreshCount: Int { state.withLock { $0.refreshCount } }

    /// Starts the one refresh; called with the lock held, stores itself in `s.refreshing`.
    private func startRefresh(_ s: inout State) -> Refresh {
        let task = Refresh { [oauth, refreshToken, clock] in
            let outcome: Result<TokenGrant, DropboxError>
            do throws(DropboxError) {
                outcome = .success(try await oauth.refresh(refreshToken: refreshToken))
            } catch {
                outcome = .failure(error)
            }
            let now = clock.now
            return self.state.withLock { s -> Result<String, DropboxError> in
                s.refreshing = nil
                switch outcome {
                case .success(let grant):
                    s.token = grant.accessToken
                    let lifetime = grant.expiresIn.map { Duration.seconds(ServerLimits.tokenLifetime($0)) }
                    s.expiresAt = lifetime.map { now + $0 }
                    s.renewBefore = Self.renewBefore(lifetime, margin: margin)
                    s.refreshCount += 1
                    s.earlyRetryAt = nil
                    return .success(grant.accessToken)
                case .failure(let error):
                    s.earlyRetryAt = now + Self.earlyRetryPause
                    Log.warning("could not renew the Dropbox access token (\(error))")
                    return .failure(error)
                }
            }
        }
        s.refreshing = task
        return task
    }
}
