// Reachability of Dropbox, one fact per host (api: listings, changes, account; content: downloads,
// exports, thumbnails; notify: the longpoll), learnt from every answer. Any HTTP answer, an error
// status included, proves its host reachable; only a failure that heard nothing from the host
// (connection refused, no route, name not resolved, no byte within the connect or answer bound:
// TransportError.meansUnreachable) marks it unreachable. The mount is "offline" while the api host
// is unreachable. While a host is unreachable, user requests that need it fail at once with
// ENETUNREACH instead of waiting, and one of them every `retryInterval` is let through as the probe
// that finds it back; a probe fails fast too (FailFast.swift), so it costs at most the connect or
// answer bound. The change watcher keeps trying the api and notify hosts on its own schedule, and
// brings the mount back online when an answer comes. A host found unreachable or back is logged once
// (docs/SEMANTICS.md, "Offline, sleep and sign-in").
//
// The sign-in's health (SignInHealth.swift) is learnt from the same answers: a rejected token is
// not a network fault, and the mount says so instead of calling itself offline.
//
// `state` (a Mutex) guards the per-host times and probes; no lock is held across a request.

import DropboxAPI
import Log
import Synchronization
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

/// The three hosts a mount talks to (docs/DROPBOX-API.md, "Hosts and request styles").
public enum DropboxHost: String, Sendable, CaseIterable {
    case api, content, notify
}

public final class Connectivity: Sendable {
    struct HostState {
        /// Seconds since the epoch when the host was found unreachable, nil while reachable.
        var unreachableSince: Int64?
        /// What the failure that marked it said (libcurl's text; never a token).
        var reason = ""
        /// When a blocked request was last let through as a probe (monotonic seconds).
        var lastProbe: Double = -.infinity
    }
    private struct State {
        var hosts: [DropboxHost: HostState] = [.api: HostState(), .content: HostState(), .notify: HostState()]
    }
    private let state = Mutex(State())
    /// Called after a host is found unreachable or back, or the sign-in accepted again (the
    /// change watcher's wakeup). Guarded by its own Mutex.
    private let listener = Mutex<StoredClosure<@Sendable () -> Void>?>(nil)
    private let retryInterval: Double
    private let now: @Sendable () -> Double
    private let wallNow: @Sendable () -> Int64
    /// Whether Dropbox accepts the credentials, learnt from the same answers.
    public let signIn: SignInHealth

    /// `offline`: the mount starts offline (it could not reach Dropbox): the api and content hosts
    /// count as unreachable until they answer. The notify host is left to the watcher's first
    /// longpoll, the only request that can clear it (it answers after its timeout). `retryInterval`: how often a blocked request is let through to
    /// find out whether its host is back.
    public init(
        offline: Bool = false, retryInterval: Double = 10,
        now: @escaping @Sendable () -> Double = SystemClock.monotonicSeconds,
        wallNow: @escaping @Sendable () -> Int64 = { Int64(time(nil)) },
        signIn: SignInHealth = SignInHealth()
    ) {
        self.retryInterval = retryInterval
        self.now = now
        self.wallNow = wallNow
        self.signIn = signIn
        let t = now()
        let wall = wallNow()
        if offline {
            state.withLock { s in
                for host in [DropboxHost.api, .content] {
                    s.hosts[host] = HostState(unreachableSince: wall, reason: "not reachable at mount", lastProbe: t)
                }
            }
        }
    }

    /// Sets what to call when reachability or the sign-in changes (one listener).
    func onChange(_ call: @escaping @Sendable () -> Void) {
        listener.withLock { $0 = StoredClosure(call) }
    }

    private func changed() {
        listener.withLock { $0 }?.call()
    }

    /// When the api host (listings and changes) was found unreachable: the mount is offline.
    public var since: Int64? { unreachableSince(.api) }

    public var isOffline: Bool { since != nil }

    /// When `host` was found unreachable, nil while it answers.
    public func unreachableSince(_ host: DropboxHost) -> Int64? {
        state.withLock { $0.hosts[host]?.unreachableSince }
    }

    /// Whether any host is unreachable (the watcher then retries at least every `offlineRetry`).
    public var anyUnreachable: Bool {
        state.withLock { s in s.hosts.values.contains { $0.unreachableSince != nil } }
    }

    /// Whether a user request may go to `host`: always while it is reachable; while not, one every
    /// `retryInterval` (the probe that finds it back).
    func mayTry(_ host: DropboxHost) -> Bool {
        let t = now()
        return state.withLock { s in
            guard let h = s.hosts[host], h.unreachableSince != nil else { return true }
            guard t - h.lastProbe >= retryInterval else { return false }
            s.hosts[host]?.lastProbe = t
            return true
        }
    }

    /// Notes what a request to `host` found: nil for an answer with a result, else its error.
    func note(_ host: DropboxHost, _ error: DropboxError?) {
        if case .transport(let failure) = error {
            if failure.meansUnreachable { noteUnreachable(host, failure) }
            // Other transport failures (a connection lost midway, a stall after the reply began,
            // cancellation) say nothing about reachability.
        } else {
            noteAnswer(host)
        }
        // The longpoll carries no token: its answers say nothing about the sign-in.
        if host != .notify, signIn.note(error) { changed() }
    }

    private func noteUnreachable(_ host: DropboxHost, _ failure: TransportError) {
        let t = now()
        let wall = wallNow()
        let changed = state.withLock { s -> Bool in
            guard s.hosts[host]?.unreachableSince == nil else { return false }
            s.hosts[host] = HostState(unreachableSince: wall, reason: failure.message, lastProbe: t)
            return true
        }
        guard changed else { return }
        self.changed()
        switch host {
        case .api:
            Log.warning("Dropbox cannot be reached (\(failure.message)): offline, serving the known tree")
        case .content:
            Log.warning(
                "Dropbox's content host cannot be reached (\(failure.message)): reads not in the disk cache fail "
                    + "until it answers")
        case .notify:
            Log.warning(
                "Dropbox's notify host cannot be reached (\(failure.message)): changes are fetched on a timer "
                    + "until it answers")
        }
    }

    private func noteAnswer(_ host: DropboxHost) {
        let was = state.withLock { s -> Int64? in
            let was = s.hosts[host]?.unreachableSince
            guard was != nil else { return nil }
            s.hosts[host]?.unreachableSince = nil
            // The network is back for one host: the next request to another unreachable host
            // probes it at once rather than waiting out the retry interval.
            for other in DropboxHost.allCases where other != host { s.hosts[other]?.lastProbe = -.infinity }
            return was
        }
        guard let was else { return }
        changed()
        let seconds = wallNow() - was
        Log.info(
            host == .api
                ? "Dropbox is reachable again (offline for \(seconds) s)"
                : "Dropbox's \(host.rawValue) host is reachable again (after \(seconds) s)")
    }

    /// After a sleep: the next request to each unreachable host probes it at once.
    func resumed() {
        state.withLock { s in
            for host in DropboxHost.allCases { s.hosts[host]?.lastProbe = -.infinity }
        }
    }

    /// The error a request for `host` gets while that host is unreachable.
    func offlineError(_ host: DropboxHost) -> DropboxError {
        let since = unreachableSince(host) ?? wallNow()
        let what = host == .api ? "Dropbox has" : "Dropbox's \(host.rawValue) host has"
        return .transport(
            TransportError(kind: .offline, message: "offline: \(what) been unreachable since \(Self.timestamp(since))"))
    }

    /// `unreachable_api=...` pairs for the status line: every host not answering, and since when.
    func statusFields() -> [String] {
        let hosts = state.withLock { $0.hosts }
        return DropboxHost.allCases.compactMap { host in
            hosts[host]?.unreachableSince.map { "unreachable_\(host.rawValue)=\(Self.timestamp($0))" }
        }
    }

    /// "2026-12-01T17:04:05Z".
    public static func timestamp(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}
