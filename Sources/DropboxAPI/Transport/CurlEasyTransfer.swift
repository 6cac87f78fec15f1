// One transfer inside CurlMultiLoop: builds the easy handle from an HTTPRequest, collects the
// status, header lines and body through libcurl's callbacks, notes when bytes last arrived (for
// the loop's stall watchdog), and resumes the caller exactly once. An instance is created, used
// and freed on the loop thread only.

import CCurl
import CShim
import Log

final class CurlEasyTransfer {
    let id: UInt64
    let handle: UnsafeMutableRawPointer
    private let completion: CurlMultiLoop.Completion
    private let method: HTTPMethod
    private let route: String
    private let bytesSent: Int
    private let maxBodyBytes: Int
    private let started = ContinuousClock.now
    private let stallLimit: Duration?
    private let answerLimit: Duration?
    /// When the last header or body bytes arrived (the start, before any).
    private var lastActivity = ContinuousClock.now
    /// Whether any byte of a reply arrived (a failure before is `silent`).
    private var answered = false
    private var requestHeaders: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
    private var responseHeaders: [HTTPHeader] = []
    /// Whether the blank line ending the current response's header block arrived. A connection
    /// closed inside the header block still ends with CURLE_OK and the status line's code, so
    /// without this a cut reply would pass for a complete one with an empty body.
    private var headerBlockEnded = false
    private var body: [UInt8] = []
    private var bodyTooLarge = false
    private var finished = false

    private init(_ item: CurlMultiLoop.Submitted, handle: UnsafeMutableRawPointer, maxBodyBytes: Int) {
        id = item.id
        self.handle = handle
        completion = item.completion
        method = item.request.method
        route = item.request.route
        bytesSent = item.request.body.count
        stallLimit = item.request.timeouts.stall
        answerLimit = item.request.timeouts.answer
        self.maxBodyBytes = maxBodyBytes
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(requestHeaders)
        errorBuffer.deallocate()
    }

    /// A configured easy handle for `item`, or the error that prevented it.
    static func make(
        _ item: CurlMultiLoop.Submitted, configuration: CurlTransport.Configuration
    ) -> Result<CurlEasyTransfer, DropboxError> {
        guard let handle = curl_easy_init() else {
            return .failure(.transport(TransportError(kind: .other, message: "curl_easy_init failed")))
        }
        let cap = item.request.maxBodyBytes.map { min($0, configuration.maxBodyBytes) } ?? configuration.maxBodyBytes
        let transfer = CurlEasyTransfer(item, handle: handle, maxBodyBytes: cap)
        if let failure = transfer.configure(item.request, configuration) {
            return .failure(
                .transport(TransportError(kind: .other, message: "could not set up the request: \(failure)")))
        }
        return .success(transfer)
    }

    /// Sets every option; returns a description of the first one libcurl refused.
    private func configure(_ request: HTTPRequest, _ configuration: CurlTransport.Configuration) -> String? {
        var failed: String?
        func check(_ code: CURLcode, _ what: String) {
            if code != CURLE_OK, failed == nil { failed = "\(what): \(String(cString: curl_easy_strerror(code)))" }
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        check(dbx_easy_setopt_str(handle, CURLOPT_URL, request.url), "url")
        check(dbx_easy_setopt_str(handle, CURLOPT_PROTOCOLS_STR, "http,https"), "protocols")
        check(dbx_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1), "nosignal")
        check(dbx_easy_setopt_long(handle, CURLOPT_TCP_NODELAY, 1), "tcp_nodelay")
        check(dbx_easy_setopt_str(handle, CURLOPT_ACCEPT_ENCODING, nil), "accept_encoding")
        check(dbx_easy_setopt_ptr(handle, CURLOPT_ERRORBUFFER, errorBuffer), "errorbuffer")
        check(dbx_easy_setopt_write_cb(handle, CURLOPT_WRITEFUNCTION, curlWriteBody), "writefunction")
        check(dbx_easy_setopt_ptr(handle, CURLOPT_WRITEDATA, me), "writedata")
        check(dbx_easy_setopt_write_cb(handle, CURLOPT_HEADERFUNCTION, curlWriteHeader), "headerfunction")
        check(dbx_easy_setopt_ptr(handle, CURLOPT_HEADERDATA, me), "headerdata")
        check(
            dbx_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.timeouts.connect)),
            "connect timeout")
        if let total = request.timeouts.total {
            check(dbx_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, Self.milliseconds(total)), "timeout")
        }
        if request.freshConnection {
            check(dbx_easy_setopt_long(handle, CURLOPT_FRESH_CONNECT, 1), "fresh connect")
            check(dbx_easy_setopt_long(handle, CURLOPT_FORBID_REUSE, 1), "forbid reuse")
        }
        if let lowSpeed = request.timeouts.lowSpeed {
            check(dbx_easy_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, max(1, lowSpeed.bytesPerSecond)), "low speed limit")
            let seconds = max(1, Int(lowSpeed.window.components.seconds))
            check(dbx_easy_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, seconds), "low speed time")
        }
        if let ca = configuration.caBundlePath {
            check(dbx_easy_setopt_str(handle, CURLOPT_CAINFO, ca), "cainfo")
        }
        switch request.method {
        case .get:
            check(dbx_easy_setopt_long(handle, CURLOPT_HTTPGET, 1), "httpget")
        case .post:
            check(setBody(request.body), "body")
        case .delete:
            check(dbx_easy_setopt_str(handle, CURLOPT_CUSTOMREQUEST, "DELETE"), "method")
            if !request.body.isEmpty { check(setBody(request.body), "body") }
        }
        var lines = request.headers.fields.map { "\($0.name): \($0.value)" }
        // No "Expect: 100-continue" round trip, and no default form Content-Type on a POST.
        lines.append("Expect:")
        if request.method != .get, !request.headers.contains("Content-Type") { lines.append("Content-Type:") }
        for line in lines {
            guard let appended = curl_slist_append(requestHeaders, line) else {
                failed = failed ?? "header list: out of memory"
                break
            }
            requestHeaders = appended
        }
        check(dbx_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, requestHeaders), "headers")
        return failed
    }

    /// Makes the request a POST carrying a copy of `body` (zero-length bodies included).
    private func setBody(_ body: [UInt8]) -> CURLcode {
        let size = dbx_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
        guard size == CURLE_OK else { return size }
        if body.isEmpty {
            return dbx_easy_setopt_str(handle, CURLOPT_COPYPOSTFIELDS, "")
        }
        return body.withUnsafeBytes { raw in
            dbx_easy_setopt_ptr(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress))
        }
    }

    private static func milliseconds(_ d: Duration) -> Int {
        let (seconds, attoseconds) = d.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }

    // MARK: callbacks (loop thread)

    /// The instant this transfer counts as stalled unless more bytes arrive; nil without a limit.
    /// (libcurl's own low-speed check averages over about five seconds, so it fires that much late.)
    /// Before the reply begins, the answer limit from the start counts too, whichever is earlier.
    var stallDeadline: ContinuousClock.Instant? {
        let stall = stallLimit.map { lastActivity + $0 }
        guard !answered, let answerLimit else { return stall }
        return min(stall ?? started + answerLimit, started + answerLimit)
    }

    var stallDescription: String {
        if !answered, let answerLimit, stallLimit.map({ answerLimit <= $0 }) ?? true {
            return "\(Self.format(answerLimit)) (no reply began)"
        }
        return stallLimit.map { Self.format($0) } ?? "-"
    }

    fileprivate func appendBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        lastActivity = .now
        answered = true
        guard body.count + bytes.count <= maxBodyBytes else {
            bodyTooLarge = true
            return false
        }
        body.append(contentsOf: bytes)
        return true
    }

    fileprivate func appendHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        lastActivity = .now
        answered = true
        if !bytes.isEmpty, bytes.allSatisfy({ $0 == 0x0D || $0 == 0x0A }) {
            headerBlockEnded = true
            return
        }
        guard let line = HeaderLine(bytes) else { return }
        switch line {
        case .statusLine:
            // A new response begins (after an interim 100 reply): forget earlier header lines.
            responseHeaders.removeAll()
            headerBlockEnded = false
        case .field(let field):
            responseHeaders.append(field)
            if HTTPHeaders.sameName(field.name, "Content-Length"), let length = Int(field.value), length > 0 {
                body.reserveCapacity(min(length, maxBodyBytes))
            }
        }
    }

    // MARK: completion

    /// Called when libcurl reports the transfer done with `code`.
    func complete(code: CURLcode) {
        let elapsed = ContinuousClock.now - started
        guard code == CURLE_OK else {
            var message = String(cString: errorBuffer)
            if message.isEmpty { message = String(cString: curl_easy_strerror(code)) }
            var kind = TransportError.Kind(curlCode: code)
            if bodyTooLarge {
                kind = .other
                message = "reply body exceeds \(maxBodyBytes) bytes"
            }
            Log.debug("\(method.rawValue) \(route) failed after \(Self.format(elapsed)): \(message)")
            finish(.failure(.transport(TransportError(kind: kind, message: message, silent: !answered))))
            return
        }
        guard headerBlockEnded else {
            let message = "connection closed inside the reply's header block"
            Log.debug("\(method.rawValue) \(route) failed after \(Self.format(elapsed)): \(message)")
            finish(.failure(.transport(TransportError(kind: .connectionLost, message: message))))
            return
        }
        var status = 0
        _ = dbx_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        let headers = HTTPHeaders(responseHeaders)
        if Log.isEnabled(.debug) {
            let requestId = headers["X-Dropbox-Request-Id"] ?? "-"
            var connects = 0
            _ = dbx_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
            Log.debug(
                "\(method.rawValue) \(route) -> \(status) request-id \(requestId), \(Self.format(elapsed)), "
                    + "sent \(bytesSent) B, received \(body.count) B, \(connects > 0 ? "new" : "reused") connection")
        }
        finish(.success(HTTPResponse(status: status, headers: headers, body: body)))
    }

    /// Ends the transfer before libcurl did (stall, cancellation, shutdown).
    func abandon(_ kind: TransportError.Kind, _ message: String) {
        Log.debug(
            "\(method.rawValue) \(route) abandoned after \(Self.format(ContinuousClock.now - started)): \(message)")
        finish(.failure(.transport(TransportError(kind: kind, message: message, silent: !answered))))
    }

    /// Resumes the caller; later calls do nothing.
    func finish(_ result: Result<HTTPResponse, DropboxError>) {
        guard !finished else { return }
        finished = true
        completion.resume(returning: result)
    }

    private static func format(_ d: Duration) -> String {
        let (seconds, attoseconds) = d.components
        let micros = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        return "\(micros / 1000).\(String(micros % 1000 / 100)) ms"
    }
}

/// One header line as libcurl delivers it, trimmed as bytes (in Swift "\r\n" is one Character).
enum HeaderLine: Equatable {
    case statusLine
    case field(HTTPHeader)

    init?(_ raw: UnsafeRawBufferPointer) {
        var start = raw.startIndex
        var end = raw.endIndex
        func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0D || c == 0x0A }
        while start < end, isSpace(raw[start]) { start += 1 }
        while end > start, isSpace(raw[end - 1]) { end -= 1 }
        guard start < end else { return nil }
        let line = UnsafeRawBufferPointer(rebasing: raw[start..<end])
        if line.starts(with: "HTTP/".utf8) {
            self = .statusLine
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        var valueStart = colon + 1
        while valueStart < line.endIndex, isSpace(line[valueStart]) { valueStart += 1 }
        var nameEnd = colon
        while nameEnd > line.startIndex, isSpace(line[nameEnd - 1]) { nameEnd -= 1 }
        let name = String(decoding: line[line.startIndex..<nameEnd], as: UTF8.self)
        let value = String(decoding: line[valueStart..<line.endIndex], as: UTF8.self)
        self = .field(HTTPHeader(name: name, value: value))
    }
}

private func curlWriteBody(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlEasyTransfer>.fromOpaque(context).takeUnretainedValue()
    let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
    return transfer.appendBody(bytes) ? size * count : 0
}

private func curlWriteHeader(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlEasyTransfer>.fromOpaque(context).takeUnretainedValue()
    transfer.appendHeaderLine(UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}
