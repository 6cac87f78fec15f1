// The checks between a download reply and the bytes handed to the caller: a 206 must cover exactly
// the requested start (Content-Range), a 200 to a ranged request is sliced here, and a whole-file
// body shorter than the file's size counts as a lost connection, so the pacer retries it.

extension DropboxHTTPClient {
    static func downloadedBytes(
        _ response: HTTPResponse, range: ByteRange?, metadata: FileMetadata, route: String
    ) throws(DropboxError) -> [UInt8] {
        let body = response.body
        if response.status == 206 {
            guard let range else { throw .malformedResponse("\(route): 206 to a request without Range") }
            return try partialContent(body, range: range, contentRange: response.headers["Content-Range"], route: route)
        }
        // 200: the whole file, whether or not a range was asked for.
        if metadata.symlinkTarget == nil, UInt64(body.count) < metadata.size {
            throw .transport(
                TransportError(
                    kind: .connectionLost, message: "\(route): got \(body.count) of \(metadata.size) bytes"))
        }
        guard let range else { return body }
        guard range.offset < UInt64(body.count) else { throw .rangeNotSatisfiable }
        let start = Int(range.offset)
        let end = Int(min(range.offset + range.length, UInt64(body.count)))
        return Array(body[start..<end])
    }

    /// The body of a 206 after checking it against `Content-Range: bytes first-last/total`.
    private static func partialContent(
        _ body: [UInt8], range: ByteRange, contentRange: String?, route: String
    ) throws(DropboxError) -> [UInt8] {
        guard let contentRange, let served = ContentRange(parsing: contentRange) else {
            throw .malformedResponse("\(route): 206 without a valid Content-Range")
        }
        let count = UInt64(body.count)
        // Not `last - first + 1 == count`: that overflows (a trap) for `bytes 0-18446744073709551615/*`.
        guard served.first == range.offset, count > 0, served.last - served.first == count - 1, count <= range.length
        else {
            throw .malformedResponse("\(route): Content-Range \(contentRange) does not match \(range.headerValue)")
        }
        if count < range.length, let total = served.total, served.last + 1 != total {
            throw .malformedResponse("\(route): a short range (\(contentRange)) before the end of the file")
        }
        return body
    }
}

/// A parsed `Content-Range: bytes first-last/total` (total may be `*`).
struct ContentRange: Equatable {
    var first: UInt64
    var last: UInt64
    var total: UInt64?

    init?(parsing text: String) {
        let value = text.trimmingSpaces
        guard value.hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst("bytes ".count)
        let halves = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Self.number(bounds[0]), let last = Self.number(bounds[1]), first <= last
        else {
            return nil
        }
        if halves[1] == "*" {
            total = nil
        } else {
            guard let total = Self.number(halves[1]), last < total else { return nil }
            self.total = total
        }
        self.first = first
        self.last = last
    }

    /// ASCII digits only, as the header's grammar has them: UInt64(_:) alone also takes "+5" and "-0".
    private static func number(_ text: Substring) -> UInt64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return UInt64(text)
    }
}
