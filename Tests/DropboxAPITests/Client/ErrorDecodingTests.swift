// Status plus body to DropboxError (docs/DROPBOX-API.md, "Errors"), as a table: every envelope of
// the doc,
// nested and bare-string union members, the 429 variants, and bodies that are not what they claim.

import Testing

@testable import DropboxAPI

@Suite struct ErrorDecodingTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var status: Int
        var body: String
        var json: Bool = true
        var headers: [(String, String)] = []
        var expected: DropboxError
        var testDescription: String { "\(status) \(body.prefix(60))" }
    }

    static let cases: [Case] = [
        Case(
            status: 400, body: #"Error in call to API function "files/list_folder": request body: path: bad"#,
            json: false,
            expected: .badRequest(
                message: #"Error in call to API function "files/list_folder": request body: path: bad"#)),
        Case(
            status: 401, body: #"{"error_summary":"expired_access_token/..","error":{".tag":"expired_access_token"}}"#,
            expected: .authentication(.expiredAccessToken)),
        Case(
            status: 401, body: #"{"error_summary":"invalid_access_token/...","error":{".tag":"invalid_access_token"}}"#,
            expected: .authentication(.invalidAccessToken)),
        Case(
            status: 401,
            body:
                #"{"error_summary": "missing_scope/", "error": {".tag": "missing_scope", "required_scope": "files.metadata.read"}}"#,
            expected: .authentication(.missingScope("files.metadata.read"))),
        Case(
            status: 401, body: #"{"error_summary":"user_suspended/","error":{".tag":"user_suspended"}}"#,
            expected: .authentication(.userSuspended)),
        Case(
            status: 401, body: #"{"error_summary":"route_access_denied/..","error":{".tag":"route_access_denied"}}"#,
            expected: .authentication(.other("route_access_denied"))),
        Case(
            status: 401, body: "Unauthorized", json: false, expected: .malformedResponse("401 without a JSON AuthError")
        ),
        Case(
            status: 403, body: #"{"error_summary":"no_permission/..","error":{".tag":"no_permission"}}"#,
            expected: .accessDenied(tag: "no_permission")),
        Case(
            status: 403,
            body:
                #"{"error_summary":"paper_access_denied/not_paper_user/","error":{".tag":"paper_access_denied","paper_access_denied":{".tag":"not_paper_user"}}}"#,
            expected: .accessDenied(tag: "paper_access_denied")),
        Case(
            status: 409,
            body: #"{"error_summary":"path/not_found/..","error":{".tag":"path","path":{".tag":"not_found"}}}"#,
            expected: .lookup(.notFound)),
        Case(
            status: 409,
            body: #"{"error_summary":"path/not_folder/.","error":{".tag":"path","path":{".tag":"not_folder"}}}"#,
            expected: .lookup(.notFolder)),
        Case(
            status: 409, body: #"{"error_summary":"path/not_file/","error":{".tag":"path","path":"not_file"}}"#,
            expected: .lookup(.notFile)),
        Case(
            status: 409,
            body:
                #"{"error_summary":"path/malformed_path/...","error":{".tag":"path","path":{".tag":"malformed_path","malformed_path":"bad"}}}"#,
            expected: .lookup(.malformedPath)),
        Case(
            status: 409,
            body:
                #"{"error_summary":"path/restricted_content/..","error":{".tag":"path","path":{".tag":"restricted_content"}}}"#,
            expected: .lookup(.restrictedContent)),
        Case(
            status: 409, body: #"{"error_summary":"path/locked/..","error":{".tag":"path","path":{".tag":"locked"}}}"#,
            expected: .lookup(.locked)),
        Case(
            status: 409, body: #"{"error_summary":"path/weird/..","error":{".tag":"path","path":{".tag":"weird"}}}"#,
            expected: .lookup(.other("weird"))),
        Case(
            status: 409,
            body:
                #"{"error_summary":"path_lookup/not_found/..","error":{".tag":"path_lookup","path_lookup":{".tag":"not_found"}}}"#,
            expected: .lookup(.notFound)),
        Case(
            status: 409, body: #"{"error_summary":"reset/..","error":{".tag":"reset"}}"#, expected: .cursorReset),
        Case(
            status: 409, body: #"{"error_summary":"unsupported_file/.","error":{".tag":"unsupported_file"}}"#,
            expected: .unsupportedFile),
        Case(
            status: 409,
            body:
                #"{"error_summary":"range/not_satisfiable/..","error":{".tag":"range","range":{".tag":"not_satisfiable"}}}"#,
            expected: .rangeNotSatisfiable),
        Case(
            status: 409, body: #"{"error_summary":"range/not_satisfiable/","error":{".tag":"other"}}"#,
            expected: .rangeNotSatisfiable),
        Case(
            status: 409,
            body:
                #"{"error_summary":"template_error/template_not_found/..","error":{".tag":"template_error","template_error":{".tag":"template_not_found","template_not_found":"x"}}}"#,
            expected: .routeError(summary: "template_error/template_not_found/..")),
        Case(status: 409, body: #"{"error":{".tag":"brand_new"}}"#, expected: .routeError(summary: "brand_new")),
        Case(
            status: 409, body: #"{"error_summary":"path/not_found/..","error":{".tag":"path"}}"#,
            expected: .routeError(summary: "path/not_found/..")),
        Case(
            status: 409, body: "Conflict", json: false, expected: .malformedResponse("409 without a JSON route error")),
        Case(
            status: 409, body: #"{"error_summary":"path/not_found/..","error":"#,
            expected: .malformedResponse("409 without a JSON route error")),
        Case(status: 416, body: "", json: false, expected: .rangeNotSatisfiable),
        Case(
            status: 422,
            body:
                #"{"error_summary":"invalid_root/..","error":{".tag":"invalid_root","invalid_root":{".tag":"user","home_namespace_id":"1","root_namespace_id":"1"}}}"#,
            expected: .pathRoot(tag: "invalid_root")),
        Case(
            status: 422, body: #"{"error_summary":"no_permission/","error":{".tag":"no_permission"}}"#,
            expected: .pathRoot(tag: "no_permission")),
        Case(
            status: 429,
            body:
                #"{"error_summary":"too_many_requests/..","error":{"reason":{".tag":"too_many_requests"},"retry_after":300}}"#,
            expected: .rateLimited(retryAfter: 300)),
        Case(
            status: 429,
            body: #"{"error_summary":"too_many_requests/..","error":{"reason":{".tag":"too_many_requests"}}}"#,
            expected: .rateLimited(retryAfter: 1)),
        Case(
            status: 429, body: "Too Many Requests", json: false, headers: [("Retry-After", "7")],
            expected: .rateLimited(retryAfter: 7)),
        Case(status: 429, body: "too_many_requests", json: false, expected: .rateLimited(retryAfter: 1)),
        Case(
            status: 429, body: #"{"error":{"retry_after":300}}"#, json: false, headers: [("retry-after", " 2 ")],
            expected: .rateLimited(retryAfter: 2)),
        // A zero asks for no wait: retry soon (the pacer adds its jitter), never the 1 s default.
        Case(
            status: 429,
            body: #"{"error_summary":"too_many_requests/..","error":{"reason":{".tag":"too_many_requests"},"retry_after":0}}"#,
            expected: .rateLimited(retryAfter: 0)),
        Case(
            status: 429, body: "Too Many Requests", json: false, headers: [("Retry-After", "0")],
            expected: .rateLimited(retryAfter: 0)),
        // Retry-After as an HTTP-date: the time until then by the reply's own Date.
        Case(
            status: 429, body: "Too Many Requests", json: false,
            headers: [("Date", "Wed, 21 Oct 2026 07:26:30 GMT"), ("Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT")],
            expected: .rateLimited(retryAfter: 90)),
        Case(
            status: 429, body: #"{"error_summary":"too_many_requests/..","error":{"reason":{".tag":"too_many_requests"}}}"#,
            headers: [("Date", "Wed, 21 Oct 2026 07:28:00 GMT"), ("Retry-After", "Wed, 21 Oct 2026 07:28:07 GMT")],
            expected: .rateLimited(retryAfter: 7)),
        // A date already past is no wait; one too far ahead is cut to the maximum.
        Case(
            status: 429, body: "", json: false,
            headers: [("Date", "Wed, 21 Oct 2026 07:28:00 GMT"), ("Retry-After", "Tue, 20 Oct 2026 07:28:00 GMT")],
            expected: .rateLimited(retryAfter: 0)),
        Case(
            status: 429, body: "", json: false,
            headers: [("Date", "Wed, 21 Oct 2026 07:28:00 GMT"), ("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT")],
            expected: .rateLimited(retryAfter: 600)),
        // The obsolete date forms, and anything else, keep the 1 s default.
        Case(
            status: 429, body: "", json: false,
            headers: [("Date", "Wed, 21 Oct 2026 07:28:00 GMT"), ("Retry-After", "Wednesday, 21-Oct-26 07:29:00 GMT")],
            expected: .rateLimited(retryAfter: 1)),
        Case(
            status: 429, body: "", json: false,
            headers: [("Date", "Wed, 21 Oct 2026 07:28:00 GMT"), ("Retry-After", "Wed Oct 21 07:29:00 2026")],
            expected: .rateLimited(retryAfter: 1)),
        Case(
            status: 429, body: "", json: false, headers: [("Retry-After", "soon")], expected: .rateLimited(retryAfter: 1)),
        Case(status: 500, body: "Internal Server Error", json: false, expected: .serverError(status: 500)),
        Case(status: 503, body: "<html>unavailable</html>", json: false, expected: .serverError(status: 503)),
        Case(status: 404, body: "Not Found", json: false, expected: .unexpectedStatus(404)),
        Case(status: 302, body: "", json: false, expected: .unexpectedStatus(302)),
    ]

    @Test(arguments: cases)
    func classifies(_ c: Case) {
        var headers = HTTPHeaders()
        headers.add("Content-Type", c.json ? "application/json" : "text/plain; charset=utf-8")
        for (name, value) in c.headers { headers.add(name, value) }
        #expect(DropboxError.fromReply(status: c.status, headers: headers, body: Array(c.body.utf8)) == c.expected)
    }

    /// A Retry-After date in a reply without a Date header (or with one that is not a date) is
    /// measured from the local clock.
    @Test func aRetryAfterDateWithoutADateHeaderCountsFromTheLocalClock() {
        let now: Int64 = 1_792_567_680  // Wed, 21 Oct 2026 07:28:00 GMT
        for date in [nil, "yesterday"] as [String?] {
            var headers = HTTPHeaders()
            headers.add("Content-Type", "text/plain")
            headers.add("Retry-After", "Wed, 21 Oct 2026 07:28:45 GMT")
            if let date { headers.add("Date", date) }
            #expect(DropboxError.fromReply(status: 429, headers: headers, body: [], now: now) == .rateLimited(retryAfter: 45))
        }
    }

    /// A 409 whose error union carries an extra field of nested arrays (valid JSON, well under the
    /// 512-level depth limit, 24 KB) must decode at once. JSONValue's old try?-chain decoding was
    /// super-linear in the nesting depth (about 1 ms per byte here), so a hostile reply of a few MB
    /// held the request for hours.
    @Test func aNestedErrorBodyDecodesQuickly() async throws {
        let deep = String(repeating: "[", count: 400) + String(repeating: "]", count: 400)
        let filler = Array(repeating: deep, count: 30).joined(separator: ",")
        let body =
            #"{"error_summary":"path/not_found/..","error":{".tag":"path","path":{".tag":"not_found"},"x":["#
            + filler + "]}}"
        let transport = ScriptedTransport(replies: [.json(body, status: 409)])
        let start = ContinuousClock.now
        await #expect(throws: DropboxError.lookup(.notFound)) {
            try await makeClient(transport).getMetadata(path: "/a")
        }
        let elapsed = ContinuousClock.now - start
        // It took 25 s; now well under a millisecond, so the bound leaves room for a loaded machine.
        #expect(elapsed < .seconds(10), "a \(body.utf8.count)-byte error body took \(elapsed) to decode")
    }

    /// An error body over JSONValue.maxParsedBytes is not read as JSON, and the error says why.
    @Test func anErrorBodyOverTheJSONLimitIsNotRead() {
        let json = #"{"error_summary":"path/not_found/..","error":{".tag":"path","path":{".tag":"not_found"}}}"#
        let small = Array(json.utf8)
        #expect(DropboxError.fromReply(status: 409, headers: [:], body: small) == .lookup(.notFound))
        let large = small + [UInt8](repeating: 0x20, count: JSONValue.maxParsedBytes)
        guard case .malformedResponse(let message) = DropboxError.fromReply(status: 409, headers: [:], body: large)
        else {
            Issue.record("a large body was read")
            return
        }
        #expect(message.contains("\(large.count) bytes"), "\(message)")
    }

    @Test func jsonValuesParse() {
        let text = #" {"a": [1, -2.5e1, true, false, null, "x\u00e9\n"], "b": {}, "c": []} "#
        #expect(
            JSONValue.parse(Array(text.utf8))
                == .object([
                    "a": .array([.number(1), .number(-25), .bool(true), .bool(false), .null, .string("xé\n")]),
                    "b": .object([:]), "c": .array([]),
                ]))
        #expect(JSONValue.parse(Array(#""bare""#.utf8)) == .string("bare"))
        for bad in ["", "{", #"{"a":1,}"#, "[1] 2", "tru", "01", #"{"a" 1}"#, "\"\u{1}\""] {
            #expect(JSONValue.parse(Array(bad.utf8)) == nil, "\(bad)")
        }
        let deepest = String(repeating: "[", count: JSONBytes.maxDepth) + String(repeating: "]", count: JSONBytes.maxDepth)
        #expect(JSONValue.parse(Array(deepest.utf8)) != nil)
        #expect(JSONValue.parse(Array(("[" + deepest + "]").utf8)) == nil)
    }

    @Test func longPlainTextIsShortened() {
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 5000)
        guard case .badRequest(let message) = DropboxError.fromReply(status: 400, headers: [:], body: body) else {
            Issue.record("not a bad request")
            return
        }
        #expect(message.count == 501 && message.hasSuffix("…"))
    }
}
