// The Dropbox content_hash (docs/DROPBOX-API.md, "content_hash"): the published vectors for n bytes
// of 'A' around the 4 MiB block boundary, and the same results when bytes arrive in awkward pieces.

import DropboxAPI
import Testing

@Suite struct ContentHashTests {
    @Test(arguments: [
        (0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        (1, "1cd6ef71e6e0ff46ad2609d403dc3fee244417089aa4461245a4e4fe23a55e42"),
        (4_194_304, "d4d63bac5b866c71620185392a8a6218ac1092454a2d16f820363b69852befa3"),
        (4_194_305, "8f553da8d00d0bf509d8470e242888be33019c20c0544811f5b2b89e98360b92"),
    ])
    func vectors(count: Int, hex: String) {
        let bytes = [UInt8](repeating: UInt8(ascii: "A"), count: count)
        #expect(ContentHasher.hash(bytes).hex == hex)
    }

    @Test func streamingInPiecesMatchesOneShot() {
        let bytes = (0..<(ContentHasher.blockSize * 2 + 12345)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let hasher = ContentHasher()
        var offset = 0
        for piece in [1, 4095, ContentHasher.blockSize - 4096, ContentHasher.blockSize + 7, 3]
        where offset < bytes.count {
            let end = min(offset + piece, bytes.count)
            hasher.update(Array(bytes[offset..<end]))
            offset = end
        }
        hasher.update(Array(bytes[offset...]))
        #expect(hasher.finalize() == ContentHasher.hash(bytes))
    }

    @Test func hasherStartsOverAfterFinalize() {
        let hasher = ContentHasher()
        hasher.update([1, 2, 3])
        _ = hasher.finalize()
        #expect(hasher.finalize() == ContentHasher.hash([]))
    }

    @Test func hexRoundTrip() throws {
        let hex = "485291fa0ee50c016982abbfa943957bcd231aae0492ccbaa22c58e3997b35e0"
        let hash = try #require(ContentHash(hex: hex))
        #expect(hash.hex == hex)
        #expect(ContentHash(hex: hex.uppercased()) == hash)
        #expect(ContentHash(bytes: hash.bytes) == hash)
        #expect(ContentHash(hex: String(hex.dropLast())) == nil)
        #expect(ContentHash(hex: String(hex.dropLast()) + "g") == nil)
    }
}

/// HMAC-SHA256 (the keyed tag of a bare access token): the RFC 4231 vectors.
@Suite struct HMACTests {
    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    @Test func rfc4231Vectors() {
        #expect(
            Self.hex(Digest.hmacSHA256(key: [UInt8](repeating: 0x0b, count: 20), message: Array("Hi There".utf8)))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(
            Self.hex(Digest.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
