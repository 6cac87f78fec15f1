// The one error type of the DropboxAPI layer. It keeps "the server answered and said no" (the
// first group) apart from "we could not talk to it" (transport, malformedResponse), because callers
// decide differently on them: a not_found is an answer, a timeout is not. Every case is decided from
// status codes and decoded tags, never from message text. No case ever carries a token.

public enum DropboxError: Error, Sendable, Equatable {
    // The server answered and said no.
    /// 400 with a plain-text body: a malformed request. Never retried.
    case badRequest(message: String)
    /// 401 AuthError.
    case authentication(AuthFailure)
    /// 403 AccessError, by tag (`no_permission`, `team_access_denied`, ...).
    case accessDenied(tag: String)
    /// 409 `path/<LookupError>` (or `path_lookup/...` in some routes).
    case lookup(LookupFailure)
    /// 409 `reset`: the cursor expired; list again from scratch.
    case cursorReset
    /// 409 `unsupported_file`: the file cannot be downloaded (export only).
    case unsupportedFile
    /// 409 SharedLinkError of the shared-link routes (and of list_folder with a shared link).
    case sharedLink(SharedLinkFailure)
    /// 409 with another route-specific tag; `summary` is the server's error_summary.
    case routeError(summary: String)
    /// The requested byte range lies outside the file (416, or `range/not_satisfiable`).
    case rangeNotSatisfiable
    /// 422 PathRootError tag (`invalid_root`, `no_permission`).
    case pathRoot(tag: String)
    /// 429 after the pacer gave up waiting, with the server's `retry_after` in seconds.
    case rateLimited(retryAfter: Double)
    /// 5xx after the pacer's retries ran out.
    case serverError(status: Int)
    /// An OAuth token endpoint error (`invalid_grant`, `invalid_client`, ...).
    case oauth(error: String, description: String)
    /// Any other status code.
    case unexpectedStatus(Int)

    // We could not talk to it.
    case transport(TransportError)
    /// The reply did not have the documented shape (bad JSON, missing Dropbox-API-Result, ...).
    case malformedResponse(String)
}

public enum AuthFailure: Sendable, Equatable {
    case expiredAccessToken
    case invalidAccessToken
    /// The app lacks a permission; the associated value names the scope to enable.
    case missingScope(String)
    case userSuspended
    /// There is no credential at all, or it was revoked (`invalid_grant` on refresh).
    case noCredentials(String)
    case other(String)
}

public enum LookupFailure: Sendable, Equatable {
    case notFound
    case notFolder
    case notFile
    case malformedPath
    case restrictedContent
    case unsupportedContentType
    case locked
    case other(String)

    public init(tag: String) {
        switch tag {
        case "not_found": self = .notFound
        case "not_folder": self = .notFolder
        case "not_file": self = .notFile
        case "malformed_path": self = .malformedPath
        case "restricted_content": self = .restrictedContent
        case "unsupported_content_type": self = .unsupportedContentType
        case "locked": self = .locked
        default: self = .other(tag)
        }
    }
}

/// A failure below HTTP: no status code was received.
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case timeout
        case couldNotConnect
        case connectionLost
        case tls
        case cancelled
        /// Not tried: Dropbox has been unreachable and the request would only wait (the
        /// filesystem's connectivity gate answers this at once while offline).
        case offline
        /// Tried once and the host did not answer (refused, no route, or not a byte within the
        /// connect or answer bound), for a request that fails fast instead of retrying
        /// (`FailFast`): not retried.
        case unreachable
        case other
    }

    public var kind: Kind
    /// A human-readable reason (libcurl's error text); never contains request headers.
    public var message: String
    /// Not one byte of a reply arrived before the failure: the host was not heard from at all
    /// (a timeout of a silent host, unlike one of a slow transfer).
    public var silent: Bool

    public init(kind: Kind, message: String, silent: Bool = false) {
        self.kind = kind
        self.message = message
        self.silent = silent
    }

    /// Whether the failure says the host cannot be reached: a connection that could not be made,
    /// or a timeout or TLS failure before any byte of a reply. A reply of any kind, even an
    /// error status, or a connection lost midway, proves the host reachable or says nothing.
    public var meansUnreachable: Bool {
        switch kind {
        case .couldNotConnect, .unreachable: return true
        case .timeout, .tls: return silent
        case .connectionLost, .cancelled, .offline, .other: return false
        }
    }

    public var description: String { message }
}

extension DropboxError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .badRequest(let message): return "Dropbox rejected the request: \(message)"
        case .authentication(let failure):
            switch failure {
            case .expiredAccessToken: return "the Dropbox access token has expired"
            case .invalidAccessToken: return "Dropbox rejected the access token (invalid or revoked)"
            case .missingScope(let scope):
                return "the Dropbox app lacks the permission '\(scope)': enable it in the app console, then sign in again"
            case .userSuspended: return "the Dropbox account is suspended"
            case .noCredentials(let why): return why
            case .other(let tag): return "Dropbox authentication failed (\(tag))"
            }
        case .accessDenied(let tag): return "Dropbox denied access (\(tag))"
        case .lookup(let failure): return "Dropbox path lookup failed (\(failure))"
        case .cursorReset: return "the Dropbox listing cursor expired (reset)"
        case .unsupportedFile: return "this file cannot be downloaded from Dropbox (export only)"
        case .sharedLink(let failure): return failure.description
        case .routeError(let summary): return "Dropbox error: \(summary)"
        case .rangeNotSatisfiable: return "the requested byte range is outside the file"
        case .pathRoot(let tag) where tag == "no_permission":
            return "Dropbox refuses this account access to the namespace asked for (no_permission)"
        case .pathRoot(let tag):
            return "Dropbox no longer accepts this account's team space root (\(tag)): the account joined or "
                + "left a team space; unmount and mount again"
        case .rateLimited(let after): return "Dropbox rate limit: retry after \(after) s"
        case .serverError(let status): return "Dropbox server error (HTTP \(status))"
        case .oauth(let error, let description):
            return description.isEmpty ? "Dropbox sign-in failed (\(error))" : "Dropbox sign-in failed (\(error)): \(description)"
        case .unexpectedStatus(let status): return "unexpected HTTP status \(status) from Dropbox"
        case .transport(let error): return "could not reach Dropbox: \(error.message)"
        case .malformedResponse(let why): return "malformed reply from Dropbox: \(why)"
        }
    }
}
