// Computes Dropbox's content_hash of a byte stream (docs/DROPBOX-API.md, "content_hash"): SHA-256
// of each 4 MiB block, then SHA-256 of the concatenated block digests. Feed bytes in pieces of any
// size, so a file can be hashed while it is read.

public final class ContentHasher {
    public static let blockSize = 4 * 1024 * 1024

    private let block = SHA256()
    private let overall = SHA256()
    /// Bytes of the current block hashed so far.
    private var inBlock = 0

    public init() {}

    public func update(_ bytes: UnsafeRawBufferPointer) {
        var rest = bytes
        while !rest.isEmpty {
            let take = min(rest.count, Self.blockSize - inBlock)
            block.update(UnsafeRawBufferPointer(rebasing: rest[rest.startIndex..<(rest.startIndex + take)]))
            inBlock += take
            rest = UnsafeRawBufferPointer(rebasing: rest[(rest.startIndex + take)...])
            if inBlock == Self.blockSize { endBlock() }
        }
    }

    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The hash of everything fed so far; the hasher starts over afterwards.
    public func finalize() -> ContentHash {
        if inBlock > 0 { endBlock() }
        return ContentHash(bytes: overall.finish())
    }

    /// The content_hash of `bytes` in one call.
    public static func hash(_ bytes: [UInt8]) -> ContentHash {
        let hasher = ContentHasher()
        hasher.update(bytes)
        return hasher.finalize()
    }

    private func endBlock() {
        overall.update(block.finish())
        inBlock = 0
    }
}
