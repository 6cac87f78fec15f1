// The small parsers between libcurl and the client: header lines trimmed as bytes, Content-Range,
// and which CURLcode means which kind of transport failure.

import CCurl
import Testing

@testable import DropboxAPI

@Suite struct WireParsingTests {
    static func parse(_ text: String) -> HeaderLine? {
        Array(text.utf8).withUnsafeBytes { HeaderLine($0) }
    }

    @Test func headerLines() {
        #expect(Self.parse("HTTP/1.1 200 OK\r\n") == .statusLine)
        #expect(Self.parse("HTTP/2 206\r\n") == .statusLine)
        #expect(
            Self.parse("Content-Type: application/json\r\n")
                == .field(HTTPHeader(name: "Content-Type", value: "application/json")))
        #expect(Self.parse("X-A :  \t spaced value \t\r\n") == .field(HTTPHeader(name: "X-A", value: "spaced value")))
        #expect(Self.parse("X-Empty:\r\n") == .field(HTTPHeader(name: "X-Empty", value: "")))
        #expect(
            Self.parse("Dropbox-API-Result: {\"name\":\"é:x\"}\r\n")
                == .field(HTTPHeader(name: "Dropbox-API-Result", value: "{\"name\":\"é:x\"}")))
        #expect(Self.parse("\r\n") == nil)
        #expect(Self.parse("no colon here\r\n") == nil)
    }

    @Test func headerLookupIgnoresCase() {
        var headers = HTTPHeaders()
        headers.add("X-Dropbox-Request-Id", "abc")
        headers.add("x-dropbox-request-id", "second")
        #expect(headers["x-dropbox-request-id"] == "abc")
        #expect(headers["X-DROPBOX-REQUEST-ID"] == "abc")
        #expect(headers["X-Dropbox-Request"] == nil)
        #expect(headers.contains("x-DROPBOX-request-ID"))
    }

    @Test func contentRange() {
        let full = ContentRange(parsing: "bytes 0-9/100")
        #expect(full?.first == 0 && full?.last == 9 && full?.total == 100)
        let open = ContentRange(parsing: " bytes 5-5/* ")
        #expect(open?.first == 5 && open?.last == 5 && open != nil && open?.total == nil)
        let widest = ContentRange(parsing: "bytes 0-18446744073709551615/*")
        #expect(widest?.first == 0 && widest?.last == UInt64.max && widest != nil && widest?.total == nil)
        for bad in [
            "bytes */100", "bytes 9-0/100", "bytes 0-100/100", "0-9/100", "bytes 0-9", "bytes a-9/100", "",
            "bytes 0-+3/7", "bytes +0-3/7", "bytes -0-3/7", "bytes 0-3/+7", "bytes 0-18446744073709551616/*",
        ] {
            #expect(ContentRange(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test(arguments: [
        (CURLE_OPERATION_TIMEDOUT, TransportError.Kind.timeout),
        (CURLE_COULDNT_CONNECT, .couldNotConnect),
        (CURLE_COULDNT_RESOLVE_HOST, .couldNotConnect),
        (CURLE_PARTIAL_FILE, .connectionLost),
        (CURLE_RECV_ERROR, .connectionLost),
        (CURLE_SEND_ERROR, .connectionLost),
        (CURLE_GOT_NOTHING, .connectionLost),
        (CURLE_HTTP2_STREAM, .connectionLost),
        (CURLE_PEER_FAILED_VERIFICATION, .tls),
        (CURLE_SSL_CONNECT_ERROR, .connectionLost),
        (CURLE_SSL_CERTPROBLEM, .tls),
        (CURLE_SSL_CACERT_BADFILE, .tls),
        (CURLE_WRITE_ERROR, .other),
        (CURLE_URL_MALFORMAT, .other),
        (CURLE_UNSUPPORTED_PROTOCOL, .other),
    ])
    func curlCodes(code: CURLcode, kind: TransportError.Kind) {
        #expect(TransportError.Kind(curlCode: code) == kind)
    }
}
