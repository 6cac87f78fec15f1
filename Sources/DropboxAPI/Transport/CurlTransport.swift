// The live HTTPTransport over libcurl. All transfers of one CurlTransport run on one dedicated
// thread driving a curl_multi handle (CurlMultiLoop), so blocking network I/O never touches Swift's
// cooperative pool, and the multi handle's connection cache reuses connections across requests.

import CCurl
import Log

public final class CurlTransport: HTTPTransport {
    public struct Configuration: Sendable {
        /// Replies with a larger body fail with a `.other` transport error.
        public var maxBodyBytes: Int
        /// Idle connections kept for reuse (CURLMOPT_MAXCONNECTS).
        public var maxCachedConnections: Int
        /// A PEM file of CA certificates to trust instead of the system store (tests with TLS).
        public var caBundlePath: String?

        public init(maxBodyBytes: Int = 256 << 20, maxCachedConnections: Int = 48, caBundlePath: String? = nil) {
            self.maxBodyBytes = maxBodyBytes
            self.maxCachedConnections = maxCachedConnections
            self.caBundlePath = caBundlePath
        }
    }

    private let loop: CurlMultiLoop

    public init(configuration: Configuration = Configuration()) {
        _ = Self.globalInit
        loop = CurlMultiLoop(configuration: configuration)
    }

    deinit {
        loop.stop()
    }

    public func send(_ request: HTTPRequest) async throws(DropboxError) -> HTTPResponse {
        try await loop.perform(request).get()
    }

    /// `curl_global_init` runs once per process, before the first handle is made.
    private static let globalInit: Void = {
        let code = curl_global_init(Int(CURL_GLOBAL_ALL))
        if code != CURLE_OK {
            Log.error("libcurl failed to initialise: \(String(cString: curl_easy_strerror(code)))")
        }
    }()
}
