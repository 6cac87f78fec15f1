// The seam between the Dropbox client and the network: one request in, one response out. The live
// implementation is CurlTransport; tests script their own. A transport never interprets statuses:
// a 409 is a response like any other, and only a failure below HTTP throws.

/// The HTTP methods the client and the test tools use.
public enum HTTPMethod: String, Sendable, Equatable {
    case get = "GET"
    case post = "POST"
    case delete = "DELETE"
}

/// One header line.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// An ordered list of header lines with case-insensitive lookup by name.
public struct HTTPHeaders: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public var fields: [HTTPHeader]

    public init(_ fields: [HTTPHeader] = []) {
        self.fields = fields
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { HTTPHeader(name: $0.0, value: $0.1) }
    }

    /// The value of the first field called `name` (compared ASCII case-insensitively).
    public subscript(name: String) -> String? {
        fields.first { Self.sameName($0.name, name) }?.value
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append(HTTPHeader(name: name, value: value))
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    static func sameName(_ a: String, _ b: String) -> Bool {
        let x = a.utf8
        let y = b.utf8
        guard x.count == y.count else { return false }
        return zip(x, y).allSatisfy { lowerASCII($0) == lowerASCII($1) }
    }

    private static func lowerASCII(_ c: UInt8) -> UInt8 {
        c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z") ? c + 32 : c
    }
}

/// Time limits of one request. `stall` fails a transfer that moves no bytes for that long, and
/// `answer` one whose reply has not begun that long after the start; leave both nil for requests
/// the server legitimately holds open (longpoll), and bound those with `total`. `connect` and
/// `answer` together bound how long a silent host (a dead network, a captive portal that
/// swallows packets) keeps one attempt waiting before it counts as unreachable.
public struct HTTPTimeouts: Sendable, Equatable {
    public var connect: Duration
    public var total: Duration?
    /// No byte at all for this long ends the transfer.
    public var stall: Duration?
    /// No byte of the reply this long after the start ends the transfer.
    public var answer: Duration?
    /// Fewer than `bytesPerSecond` on average over `window` ends the transfer: a server that
    /// trickles a byte now and then never trips the stall limit.
    public var lowSpeed: LowSpeedLimit?

    public init(
        connect: Duration = .seconds(10), total: Duration? = nil, stall: Duration? = .seconds(30),
        answer: Duration? = .seconds(10), lowSpeed: LowSpeedLimit? = LowSpeedLimit()
    ) {
        self.connect = connect
        self.total = total
        self.stall = stall
        self.answer = answer
        self.lowSpeed = lowSpeed
    }
}

public struct LowSpeedLimit: Sendable, Equatable {
    public var bytesPerSecond: Int
    /// Whole seconds (libcurl's granularity), at least 1.
    public var window: Duration

    public init(bytesPerSecond: Int = 1024, window: Duration = .seconds(30)) {
        self.bytesPerSecond = bytesPerSecond
        self.window = window
    }
}

public struct HTTPRequest: Sendable, Equatable {
    public var method: HTTPMethod
    public var url: String
    public var headers: HTTPHeaders
    public var body: [UInt8]
    public var timeouts: HTTPTimeouts
    /// The most reply body bytes this request accepts (nil: the transport's own cap); a longer
    /// reply fails as a transport error.
    public var maxBodyBytes: Int?
    /// Open a new connection for this request and close it after (no pooled connection is used).
    public var freshConnection = false

    public init(
        method: HTTPMethod, url: String, headers: HTTPHeaders = [:], body: [UInt8] = [],
        timeouts: HTTPTimeouts = HTTPTimeouts(), maxBodyBytes: Int? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeouts = timeouts
        self.maxBodyBytes = maxBodyBytes
    }
}

public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

public protocol HTTPTransport: Sendable {
    /// Sends one request. Throws only `.transport(...)`: a reply with any status code is returned.
    func send(_ request: HTTPRequest) async throws(DropboxError) -> HTTPResponse
}

extension HTTPRequest {
    /// The URL's path without scheme, host or query: what log lines show.
    public var route: String { Self.route(of: url) }

    static func route(of url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") {
            rest = rest[scheme.upperBound...]
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? "/"
        }
        if let query = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            rest = rest[..<query]
        }
        return String(rest)
    }
}
