// Error replies: any status, headers and body (ReplyInput) through DropboxError.fromReply, the
// mapping every non-success reply goes through. Besides not crashing (the body is parsed as JSON
// with the envelope's nested unions, Retry-After as a number or an HTTP-date):
//
// - the statuses decided without the body map as documented (400, 416, 5xx);
// - a 429's pause is finite and within 0...ServerLimits.maxRetryAfter;
// - a 400's message (the body shown as text) is at most 500 characters and an ellipsis.

@testable import DropboxAPI

enum ErrorBodyFuzz {
    static func check(_ input: UnsafeBufferPointer<UInt8>) -> String? {
        let reply = ReplyInput(input)
        let error = DropboxError.fromReply(status: reply.status, headers: reply.headers, body: reply.body)
        return ReplyChecks.check(error, status: reply.status)
    }
}

enum ReplyChecks {
    /// The properties of any DropboxError made from a reply with `status`.
    static func check(_ error: DropboxError, status: Int) -> String? {
        switch error {
        case .rateLimited(let seconds):
            guard seconds.isFinite, seconds >= 0, seconds <= ServerLimits.maxRetryAfter else {
                return "a 429 pause of \(seconds) s"
            }
        case .badRequest(let message):
            guard message.unicodeScalars.count <= 501 else {
                return "a 400 message of \(message.unicodeScalars.count) characters"
            }
        default:
            break
        }
        switch status {
        case 400:
            guard case .badRequest = error else { return "400 gave \(error)" }
        case 416:
            guard error == .rangeNotSatisfiable else { return "416 gave \(error)" }
        case 429:
            guard case .rateLimited = error else { return "429 gave \(error)" }
        case 500...599:
            guard error == .serverError(status: status) else { return "\(status) gave \(error)" }
        default:
            break
        }
        return nil
    }
}
