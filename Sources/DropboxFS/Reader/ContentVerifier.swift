// The running content_hash of one content's bytes, fed in file order as they arrive. Only the task
// holding the content's `hashing` flag (ReaderState) feeds it, so its lock is never contended; the
// lock is there to make the non-Sendable hasher shareable.

import DropboxAPI
import Synchronization

final class ContentVerifier: Sendable {
    let expected: ContentHash
    private let hasher = Mutex(ContentHasher())

    init(expected: ContentHash) {
        self.expected = expected
    }

    func update(_ bytes: ArraySlice<UInt8>) {
        hasher.withLock { hasher in bytes.withUnsafeBytes { hasher.update($0) } }
    }

    func update(_ bytes: [UInt8]) {
        update(bytes[...])
    }

    /// The hash of everything fed so far.
    func finish() -> ContentHash {
        hasher.withLock { $0.finalize() }
    }

    /// Whether `file`'s first `size` bytes have `expected` as content_hash, read in pieces of
    /// `chunk` bytes; yields between pieces so a large check does not hold a cooperative thread.
    static func check(_ file: CacheFile, size: UInt64, expected: ContentHash, chunk: UInt64) async -> Result<Bool, CacheIOError> {
        let hasher = ContentHasher()
        var offset: UInt64 = 0
        while offset < size {
            let end = min(size, offset + chunk)
            switch file.read(offset..<end) {
            case .success(let bytes): hasher.update(bytes)
            case .failure(let error): return .failure(error)
            }
            offset = end
            await Task.yield()
        }
        return .success(hasher.finalize() == expected)
    }
}
