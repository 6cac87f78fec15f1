// Turns a non-success reply into a DropboxError (docs/DROPBOX-API.md, "Errors"). The decision rests
// on the status code and the decoded `.tag`s of the error union; error_summary is only carried
// along for messages, except one documented prefix (`range/not_satisfiable`) whose tag shape is
// unconfirmed.

extension DropboxError {
    /// The error for a reply with a status other than the route's success status. `now` is the
    /// local wall clock in seconds since the epoch, read only for a 429 whose Retry-After is a date
    /// and that carries no Date of its own.
    static func fromReply(
        status: Int, headers: HTTPHeaders, body: [UInt8], now: @autoclosure () -> Int64 = HTTPDate.now()
    ) -> DropboxError {
        switch status {
        case 400:
            return .badRequest(message: Self.text(body))
        case 401:
            guard let error = Self.envelope(body)?.error, let tag = error.unionTag else {
                return Self.withoutJSON("401 without a JSON AuthError", body)
            }
            return .authentication(Self.authFailure(tag: tag, error: error))
        case 403:
            guard let tag = Self.envelope(body)?.error?.unionTag else {
                return Self.withoutJSON("403 without a JSON AccessError", body)
            }
            return .accessDenied(tag: tag)
        case 409:
            guard let envelope = Self.envelope(body), let error = envelope.error, let tag = error.unionTag else {
                return Self.withoutJSON("409 without a JSON route error", body)
            }
            return Self.routeError(tag: tag, error: error, summary: envelope.summary)
        case 416:
            return .rangeNotSatisfiable
        case 422:
            guard let tag = Self.envelope(body)?.error?.unionTag else {
                return Self.withoutJSON("422 without a JSON PathRootError", body)
            }
            return .pathRoot(tag: tag)
        case 429:
            return .rateLimited(retryAfter: Self.retryAfter(headers: headers, body: body, now: now))
        case 500...599:
            return .serverError(status: status)
        default:
            return .unexpectedStatus(status)
        }
    }

    private static func authFailure(tag: String, error: JSONValue) -> AuthFailure {
        switch tag {
        case "expired_access_token": return .expiredAccessToken
        case "invalid_access_token": return .invalidAccessToken
        case "missing_scope": return .missingScope(error["required_scope"]?.string ?? "unknown")
        case "user_suspended": return .userSuspended
        default: return .other(tag)
        }
    }

    private static func routeError(tag: String, error: JSONValue, summary: String) -> DropboxError {
        switch tag {
        case "path", "path_lookup":
            guard let lookup = error.unionValue?.unionTag else { return .routeError(summary: summary) }
            return .lookup(LookupFailure(tag: lookup))
        case "reset":
            return .cursorReset
        case "unsupported_file":
            return .unsupportedFile
        case "range" where error.unionValue?.unionTag == "not_satisfiable":
            return .rangeNotSatisfiable
        default:
            if let failure = SharedLinkFailure(tag: tag) { return .sharedLink(failure) }
            if summary.hasPrefix("range/not_satisfiable") { return .rangeNotSatisfiable }
            return .routeError(summary: summary.isEmpty ? tag : summary)
        }
    }

    /// Seconds to wait: JSON `error.retry_after` when the reply is JSON, else the `Retry-After`
    /// header (seconds, or an HTTP-date), else 1 (the spec's default); at most
    /// ServerLimits.maxRetryAfter. A zero, or a date already past, is kept as zero: the server lets
    /// the request go again at once, and the pacer's jitter alone spreads the callers it held
    /// (PacerDecision), where the 1 s default would make them wait for nothing.
    private static func retryAfter(headers: HTTPHeaders, body: [UInt8], now: () -> Int64) -> Double {
        let isJSON = headers["Content-Type"]?.lowercased().hasPrefix("application/json") ?? false
        if isJSON, let seconds = Self.envelope(body)?.error?["retry_after"]?.number, seconds >= 0 {
            return ServerLimits.retryAfter(seconds)
        }
        guard let header = headers["Retry-After"]?.trimmingSpaces else { return 1 }
        if let seconds = Double(header), seconds >= 0 {
            return ServerLimits.retryAfter(seconds)
        }
        if let until = HTTPDate.parse(header) {
            // Measured on the server's clock when the reply is dated: ours may be off by minutes.
            let from = headers["Date"].flatMap(HTTPDate.parse) ?? now()
            return ServerLimits.retryAfter(Double(max(until - from, 0)))
        }
        return 1
    }

    /// The JSON error envelope `{"error_summary", "error", "user_message"?}`.
    private struct Envelope {
        var summary: String
        var error: JSONValue?
    }

    private static func envelope(_ body: [UInt8]) -> Envelope? {
        guard let json = JSONValue.parse(body), case .object = json else { return nil }
        return Envelope(summary: json["error_summary"]?.string ?? "", error: json["error"])
    }

    /// The error for an error reply whose body is not the JSON expected, saying so when the body was
    /// too large to be read as JSON at all (JSONValue.maxParsedBytes).
    private static func withoutJSON(_ what: String, _ body: [UInt8]) -> DropboxError {
        guard body.count > JSONValue.maxParsedBytes else { return .malformedResponse(what) }
        return .malformedResponse("\(what): a body of \(body.count) bytes, over the \(JSONValue.maxParsedBytes) read as JSON")
    }

    /// A plain-text body for a message, shortened so one odd reply cannot flood a log.
    static func text(_ body: [UInt8], limit: Int = 500) -> String {
        let text = String(decoding: body.prefix(limit), as: UTF8.self).trimmingSpaces
        return body.count > limit ? text + "…" : text
    }
}

extension String {
    /// Without leading and trailing ASCII spaces, tabs and line breaks.
    var trimmingSpaces: String {
        let utf8 = Array(self.utf8)
        func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }
        guard let first = utf8.firstIndex(where: { !isSpace($0) }),
            let last = utf8.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(decoding: utf8[first...last], as: UTF8.self)
    }
}
