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

    /// What a check of a disk cache entry found.
    enum CheckOutcome: Sendable {
        case matches, differs
        case unreadable(CacheIOError)
        /// The checking task was cancelled (nobody waits for the check any more).
        case cancelled
    }

    /// Whether `file`'s first `size` bytes have `expected` as content_hash, read in pieces of
    /// `chunk` bytes. `pause` runs between pieces (by default it yields, so a large check does
    /// not hold a cooperative thread); a cancelled task stops at the next piece.
    static func check(
        _ file: CacheFile, size: UInt64, expected: ContentHash, chunk: UInt64,
        pause: @Sendable () async -> Void = { await Task.yield() }
    ) async -> CheckOutcome {
        let hasher = ContentHasher()
        var offset: UInt64 = 0
        while offset < size {
            if Task.isCancelled { return .cancelled }
            let end = min(size, offset + chunk)
            switch file.read(offset..<end) {
            case .success(let bytes): hasher.update(bytes)
            case .failure(let error): return .unreadable(error)
            }
            offset = end
            await pause()
        }
        return hasher.finalize() == expected ? .matches : .differs
    }
}
