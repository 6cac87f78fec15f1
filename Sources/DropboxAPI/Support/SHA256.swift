// SHA-256 through OpenSSL's EVP interface (libcrypto): the one place the crypto library is called.
// Used by the content hasher and the PKCE challenge. Not shareable: one instance per computation.

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
