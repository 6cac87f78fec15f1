// Which libcurl failures mean what to the client. The pacer retries timeouts and lost or refused
// connections but not TLS failures, so the grouping here decides retry behaviour; keep it a table.
// CURLE_SSL_CONNECT_ERROR is not a TLS failure in that sense: libcurl reports any fault during the
// handshake with it, a connection reset or closed by the network included ("Recv failure:
// Connection reset by peer"), so it is a lost connection. A certificate or configuration failure
// has codes of its own (60, 58, 77, ...), and those stay `.tls`. A handshake the server refuses
// outright also comes as CURLE_SSL_CONNECT_ERROR; it is retried too, within the pacer's bound.

import CCurl

extension TransportError.Kind {
    /// The kind of a failed transfer's CURLcode.
    init(curlCode code: CURLcode) {
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            self = .timeout
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            self = .couldNotConnect
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2,
            CURLE_HTTP2_STREAM, CURLE_HTTP3, CURLE_SSL_CONNECT_ERROR:
            self = .connectionLost
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_ENGINE_NOTFOUND,
            CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED, CURLE_USE_SSL_FAILED:
            self = .tls
        case CURLE_ABORTED_BY_CALLBACK:
            self = .cancelled
        default:
            self = .other
        }
    }
}

extension TransportError {
    /// Whether retrying the same request may succeed: the network failed, not the request.
    public var isTransient: Bool {
        switch kind {
        case .timeout, .couldNotConnect, .connectionLost: return true
        case .tls, .cancelled, .offline, .unreachable, .other: return false
        }
    }
}
