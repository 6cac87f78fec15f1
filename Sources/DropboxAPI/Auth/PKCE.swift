// The PKCE pair of the OAuth code flow (RFC 7636, S256; docs/DROPBOX-API.md, "OAuth 2 with PKCE"):
// a 128-character verifier of [A-Za-z0-9] from OpenSSL's RAND_bytes, and its challenge
// base64url(SHA-256) without '='.

import CCrypto
import Foundation

public struct PKCE: Sendable, Equatable {
    public let verifier: String

    /// A fresh random verifier.
    public init() throws(DropboxError) {
        verifier = try Self.randomVerifier(length: 128)
    }

    /// A given verifier (tests, or resuming a flow).
    public init(verifier: String) {
        self.verifier = verifier
    }

    public var challenge: String { Self.challenge(for: verifier) }

    public static func challenge(for verifier: String) -> String {
        let digest = SHA256.hash(Array(verifier.utf8))
        return Data(digest).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// `length` characters drawn uniformly from the alphabet: random bytes at or above 248 (the
    /// largest multiple of 62 that fits a byte) are discarded instead of folded, to avoid bias.
    static func randomVerifier(length: Int) throws(DropboxError) -> String {
        var out = [UInt8]()
        out.reserveCapacity(length)
        let limit = UInt8(alphabet.count * (256 / alphabet.count))
        while out.count < length {
            var bytes = [UInt8](repeating: 0, count: length)
            let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
            guard ok == 1 else {
                throw .oauth(error: "no_randomness", description: "OpenSSL RAND_bytes failed")
            }
            for byte in bytes where byte < limit && out.count < length {
                out.append(alphabet[Int(byte) % alphabet.count])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
