// SHA-256 through OpenSSL's EVP interface (libcrypto): the one place the crypto library is called.
// Used by the content hasher and the PKCE challenge. Not shareable: one instance per computation.
// `Digest` gives other modules one-shot digests (the in-memory Dropbox's content hashes, the MD5
// names of thumbnail files, the HMAC that tags a bare token) without calling libcrypto themselves.

import CCrypto

final class SHA256 {
    static let digestLength = 32
    private let context: OpaquePointer

    init() {
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            fatalError("OpenSSL could not start a SHA-256 computation")
        }
        self.context = context
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        guard EVP_DigestUpdate(context, base, bytes.count) == 1 else { fatalError("EVP_DigestUpdate failed") }
    }

    func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest; the instance is then ready for a new computation.
    func finish() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Self.digestLength)
        var length: UInt32 = 0
        let ok = digest.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
        guard ok == 1, length == Self.digestLength, EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            fatalError("EVP_DigestFinal_ex failed")
        }
        return digest
    }

    static func hash(_ bytes: [UInt8]) -> [UInt8] {
        let sha = SHA256()
        sha.update(bytes)
        return sha.finish()
    }
}

/// One-shot digests of a byte array.
public enum Digest {
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        SHA256.hash(bytes)
    }

    /// HMAC-SHA256 of `message` under `key` (RFC 2104): a tag of a secret that does not let the
    /// secret be recovered without the key.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: SHA256.digestLength)
        var length: UInt32 = 0
        let ok = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                digest.withUnsafeMutableBufferPointer { out in
                    HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress?.assumingMemoryBound(to: UInt8.self),
                         m.count, out.baseAddress, &length)
                }
            }
        }
        guard ok != nil, length == SHA256.digestLength else { fatalError("HMAC(SHA-256) failed") }
        return digest
    }

    /// MD5: only where a format names files by it (the freedesktop thumbnail cache).
    public static func md5(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 16)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_md5(), nil)
            }
        }
        guard ok == 1, length == 16 else { fatalError("EVP_Digest(MD5) failed") }
        return digest
    }
}
