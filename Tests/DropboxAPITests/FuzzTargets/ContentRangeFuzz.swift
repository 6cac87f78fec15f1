// Content-Range and the checks of a download's bytes (DropboxHTTPClient.downloadedBytes). The input:
//
//     STATUS OFFSET LENGTH SIZE BODY\n     (decimal; the request's range, the file's size, the body length)
//     Content-Range value                   (the rest; the header is absent when the input has no second line)
//
// An input whose first line does not have that shape is taken whole as a Content-Range value. Checks:
//
// - ContentRange(parsing:) accepts exactly `bytes FIRST-LAST/TOTAL` or `bytes FIRST-LAST/*` (digits
//   only, each within UInt64, FIRST <= LAST < TOTAL), with ASCII white space around it, as an
//   independent reading of the grammar does; what it parses prints back to itself;
// - downloadedBytes never traps, and what it returns is what was asked for: for a 206 the body, no
//   longer than the range, starting at the range's offset; for a 200 the requested slice of the
//   body, or without a range the whole body, never shorter than the file.
//
// Offsets and sizes stay within 2^53 and lengths within 2^32, as the reader asks for them; the body
// is at most the length plus the transport's slack (DropboxHTTPClient.downloadBodySlack), as the
// transport caps it.

@testable import DropboxAPI

enum ContentRangeFuzz {
    static func check(_ input: UnsafeBufferPointer<UInt8>) -> String? {
        var lines = Lines(input)
        let first = lines.next().map { String(decoding: $0, as: UTF8.self).trimmingSpaces } ?? ""
        let numbers = first.split(separator: " ").compactMap { UInt64($0) }
        guard numbers.count == 5, first.split(separator: " ").count == 5 else {
            return checkParser(String(decoding: input, as: UTF8.self))
        }
        let rest = UnsafeBufferPointer(rebasing: input[lines.offset...])
        let header: String? = lines.offset < input.count || input.last == 0x0A ? String(decoding: rest, as: UTF8.self) : nil
        if let header, let failure = checkParser(header) { return failure }
        return checkDownload(
            status: numbers[0] == 206 ? 206 : 200, offset: numbers[1] % (1 << 53), length: numbers[2] % (1 << 32),
            size: numbers[3] % ((1 << 53) + 1), bodyLength: numbers[4], contentRange: header)
    }

    static func checkParser(_ text: String) -> String? {
        let parsed = ContentRange(parsing: text)
        let got = parsed.map { Bounds(first: $0.first, last: $0.last, total: $0.total) }
        let want = Self.reference(text)
        guard got == want else {
            return "Content-Range \(Exact.render(text)): parsed as \(String(describing: got)), "
                + "the grammar says \(String(describing: want))"
        }
        if let parsed {
            let printed = "bytes \(parsed.first)-\(parsed.last)/\(parsed.total.map(String.init) ?? "*")"
            guard ContentRange(parsing: printed) == parsed else { return "\(printed) does not parse back" }
        }
        return nil
    }

    struct Bounds: Equatable {
        var first: UInt64
        var last: UInt64
        var total: UInt64?
    }

    /// The grammar read byte by byte: nil unless the text is exactly that.
    static func reference(_ text: String) -> Bounds? {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        var bytes = ArraySlice(text.utf8)
        while let c = bytes.first, isSpace(c) { bytes.removeFirst() }
        while let c = bytes.last, isSpace(c) { bytes.removeLast() }
        guard bytes.starts(with: "bytes ".utf8) else { return nil }
        bytes.removeFirst(6)
        func number() -> UInt64?? {
            var value: UInt64 = 0
            var count = 0
            while let c = bytes.first, c >= 0x30, c <= 0x39 {
                let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(c - 0x30))
                if o1 || o2 { return .some(nil) }
                value = sum
                count += 1
                bytes.removeFirst()
            }
            return count == 0 ? .some(nil) : .some(value)
        }
        guard let first = number() ?? nil, bytes.first == UInt8(ascii: "-") else { return nil }
        bytes.removeFirst()
        guard let last = number() ?? nil, bytes.first == UInt8(ascii: "/"), first <= last else { return nil }
        bytes.removeFirst()
        if bytes.elementsEqual("*".utf8) { return Bounds(first: first, last: last, total: nil) }
        guard let total = number() ?? nil, bytes.isEmpty, last < total else { return nil }
        return Bounds(first: first, last: last, total: total)
    }

    static func checkDownload(
        status: Int, offset: UInt64, length: UInt64, size: UInt64, bodyLength: UInt64, contentRange: String?
    ) -> String? {
        let range = length == 0 ? nil : ByteRange(offset: offset, length: length)
        let cap = UInt64(min(range.map { Int($0.length) + DropboxHTTPClient.downloadBodySlack } ?? 1 << 20, 1 << 20))
        let body = (0..<Int(min(bodyLength, cap))).map { UInt8(truncatingIfNeeded: $0 % 251) }
        var headers = HTTPHeaders()
        if let contentRange { headers.add("Content-Range", contentRange) }
        let metadata = FileMetadata(
            name: "f", id: "id:f", pathLower: "/f", pathDisplay: "/f", clientModified: DropboxTimestamp(secondsSinceEpoch: 0),
            serverModified: DropboxTimestamp(secondsSinceEpoch: 0), rev: "0123456789", size: size)
        let response = HTTPResponse(status: status, headers: headers, body: body)
        guard let data = try? DropboxHTTPClient.downloadedBytes(response, range: range, metadata: metadata, route: "fuzz")
        else { return nil }
        switch (status, range) {
        case (206, let range?):
            guard data == body, UInt64(data.count) <= range.length,
                let served = contentRange.flatMap(ContentRange.init(parsing:)), served.first == range.offset
            else { return "a 206 of \(body.count) bytes for \(range.headerValue) gave \(data.count) bytes" }
        case (200, let range?):
            let end = min(range.offset + range.length, UInt64(body.count))
            guard range.offset < end, data[...] == body[Int(range.offset)..<Int(end)], UInt64(body.count) >= size else {
                return "a 200 of \(body.count) bytes for \(range.headerValue) gave \(data.count) bytes"
            }
        case (200, nil):
            guard data == body, UInt64(body.count) >= size else { return "a 200 without a range gave \(data.count) bytes" }
        default:
            return "status \(status) without a range gave bytes"
        }
        return nil
    }
}
