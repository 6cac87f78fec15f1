// A content's content_hash check. Dropbox publishes one hash per file (a hash of its 4 MiB block
// hashes) and no per-block hashes, so only a whole file can be checked. As parts arrive, the bytes
// from the start are fed to the content's verifier in file order (from buffers, or from the disk
// entry being written when a buffer was evicted); when the last byte is fed the file is verified or
// failed. Bytes damaged on the way are not the file's fault: the first mismatch makes the whole file
// be downloaded once more (ContentState.startOver, one warning); a second mismatch fails it, and it
// answers EIO to every read and logs one error. A verified file's disk entry is committed
// (DiskEntry.swift). Reads that must not be answered before the check (ContentState.mustVerify)
// wait for it here.
//
// Locking: ContentCheck is part of ReaderState, behind FileReader's one Mutex (`FileReader.state`).
// Hashing runs outside it, by one task at a time (the `hashing` flag); the others wait in
// `waiters`, resumed once the lock is released. ContentVerifier (the running hash, fed in file
// order as bytes arrive) has a lock of its own, `hasher`: only the task holding the `hashing` flag
// feeds it, so that lock is never contended; it is there to make the non-Sendable hasher shareable.

import DropboxAPI
import Log
import Synchronization

enum Verification: Equatable {
    /// No content_hash: nothing to check.
    case unverifiable
    case pending
    case verified
    case failed
}

/// The content_hash check of one content.
struct ContentCheck {
    let expected: ContentHash?
    var verification: Verification
    var verifier: ContentVerifier?
    /// Bumped when a mismatch made the whole file be downloaded again (once: startOver); a read
    /// planned under an older attempt holds bytes of the damaged download.
    var attempt = 0
    /// Bytes from the start already fed to the verifier.
    var hashedUpTo: UInt64 = 0
    /// A task is feeding the verifier; others wait in `waiters`.
    var hashing = false
    var waiters: [CheckedContinuation<Void, Never>] = []

    /// `trusted`: the bytes come from a disk entry already checked in this process.
    init(expected: ContentHash?, trusted: Bool) {
        self.expected = expected
        verifier = expected.map { ContentVerifier(expected: $0) }
        verification = expected == nil ? .unverifiable : trusted ? .verified : .pending
    }

    /// Starts the check again from the first byte, for a new download of the whole file.
    mutating func restart() {
        hashedUpTo = 0
        verifier = expected.map { ContentVerifier(expected: $0) }
        verification = verifier == nil ? .unverifiable : .pending
        attempt += 1
    }

    /// Whether the content's bytes may be trusted as Dropbox's (checked, or nothing to check).
    var isTrusted: Bool { verification == .verified || verification == .unverifiable }

    /// The error of a pass's read reaching the end after the pass served bytes of a download since
    /// found damaged (ContentState.passServedDamagedBytes).
    static func damagedPass(_ label: String) -> FilesystemError {
        .integrity(.damagedPass(file: label))
    }
}

extension FileReader {
    private enum HashStep: Sendable {
        case feed(Piece)
        case stop([CheckedContinuation<Void, Never>])
        case finish
    }

    /// Feeds the verifier every byte available from where it stopped; returns when the bytes run
    /// out, or another task is already feeding it.
    func pumpVerification(_ key: ContentKey) {
        let claim = withState { s -> (verifier: ContentVerifier, position: UInt64)? in
            guard let check = s.contents[key]?.check, check.verification == .pending, !check.hashing,
                let verifier = check.verifier
            else { return nil }
            s.contents[key]?.check.hashing = true
            return (verifier, check.hashedUpTo)
        }
        guard let claim else { return }
        var position = claim.position
        while true {
            let step = withState { s -> HashStep in
                // The content may have been dropped (closed, its buffers evicted) while a part
                // was read from disk, and opened again as a new one with a verifier of its own:
                // this hasher must not touch that one.
                guard let content = s.contents[key], content.check.verifier === claim.verifier else { return .stop([]) }
                s.contents[key]?.check.hashedUpTo = position
                if position == content.size { return .finish }
                if let source = content.hashSource(at: position, maxLength: options.partSize) { return .feed(source) }
                return .stop(s.releaseHashing(key))
            }
            switch step {
            case .feed(.memory(let bytes)):
                claim.verifier.update(bytes)
                position += UInt64(bytes.count)
            case .feed(.disk(let file, let range)):
                switch file.read(range) {
                case .success(let bytes):
                    claim.verifier.update(bytes)
                    position = range.upperBound
                case .failure(let error):
                    Log.warning("disk cache: \(error)")
                    let waiters = withState { s -> [CheckedContinuation<Void, Never>] in
                        guard s.contents[key]?.check.verifier === claim.verifier else { return [] }
                        s.giveUpDisk(key)
                        return s.releaseHashing(key)
                    }
                    for waiter in waiters { waiter.resume() }
                    return
                }
            case .stop(let waiters):
                for waiter in waiters { waiter.resume() }
                return
            case .finish:
                finishVerification(key, verifier: claim.verifier)
                return
            }
        }
    }

    /// Compares the finished hash and records the outcome (a complete disk entry is then committed:
    /// ReaderState.commitIfReady).
    private func finishVerification(_ key: ContentKey, verifier: ContentVerifier) {
        let actual = verifier.finish()
        let matches = actual == verifier.expected
        let (waiters, label, again, damagedInodes) = withState {
            s -> ([CheckedContinuation<Void, Never>], String, Bool, Set<UInt64>) in
            guard let content = s.contents[key], content.check.verifier === verifier else { return ([], "", false, []) }
            var again = false
            if matches {
                s.contents[key]?.check.verification = .verified
                s.commitIfReady(key)  // otherwise the last write commits it
            } else if content.check.attempt == 0 {
                s.giveUpDisk(key)
                s.memoryUsed -= s.contents[key]?.startOver() ?? 0
                // The kernel's page cache may hold damaged bytes: the next open must drop it.
                for inode in content.inodes { s.pageCacheNotes[inode] = nil }
                again = true
            } else {
                s.contents[key]?.check.verification = .failed
                for inode in content.inodes { s.pageCacheNotes[inode] = nil }
                s.giveUpDisk(key)
                for (id, segment) in content.buffers.segments where segment.bytes != nil {
                    s.removeSegment(id, of: key)
                }
            }
            return (s.releaseHashing(key), content.label, again, matches ? [] : content.inodes)
        }
        // Pages the kernel cached from the damaged download are dropped now, not only at the next
        // open: a handle opened before would read them from the page cache, and a pass of it
        // would reach the check only at its end, under the new download.
        if !damagedInodes.isEmpty { invalidations?.publish(damagedInodes.sorted().map { .inode($0) }) }
        if again {
            Log.warning(
                "\(label): the downloaded bytes do not match Dropbox's content_hash (expected \(verifier.expected), got \(actual)); downloading the whole file once more"
            )
        } else if !matches {
            Log.error(
                "\(label): the downloaded bytes do not match Dropbox's content_hash again (expected \(verifier.expected), got \(actual)); reads of this file fail with EIO"
            )
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the content of `file` is verified (or has no content_hash); throws EIO when it
    /// failed. Feeds the verifier itself when nobody else does, and downloads again the bytes it
    /// needs if they were evicted before being hashed, one part at a time. A read of a large file planned under an
    /// older `attempt` fails at once: its pass already served bytes of the damaged download (the
    /// next pass reads the new one); a small file's reads served nothing yet, so they wait for it.
    func awaitVerification(_ file: PinnedFile, attempt: Int) async throws(FilesystemError) {
        let key = file.key
        var lastPosition: UInt64?
        var stalls = 0
        while true {
            enum Status: Sendable {
                case done, failed, busy
                case idle(UInt64)
            }
            let status = withState { s -> Status in
                guard let content = s.contents[key] else { return .failed }
                if content.passServedDamagedBytes(since: attempt, wholeFileLimit: options.wholeFileLimit) { return .failed }
                switch content.check.verification {
                case .verified, .unverifiable: return .done
                case .failed: return .failed
                case .pending: return content.check.hashing ? .busy : .idle(content.check.hashedUpTo)
                }
            }
            switch status {
            case .done:
                return
            case .failed:
                throw .integrity(.contentHashMismatch(file: file.label))
            case .busy:
                await waitForHashing(key)
            case .idle(let position):
                if position == lastPosition {
                    stalls += 1
                    guard stalls < 4 else {
                        Log.warning("\(file.label): the content_hash check could not get the bytes it needs")
                        throw .integrity(.checkIncomplete(file: file.label))
                    }
                } else {
                    stalls = 0  // a long check takes many turns: only turns in a row without progress count
                }
                lastPosition = position
                pumpVerification(key)
                // One part at a time from where the hash stopped, as demand: a demand reservation
                // goes over the memory cap, so fetching the whole rest at once would exceed the cap
                // by (almost) the whole file. Each part is hashed as it arrives (download), and the
                // next turn fetches the next one.
                let tasks = withState { s -> [PendingFetch] in
                    guard let content = s.contents[key], content.check.verification == .pending, !content.check.hashing else { return [] }
                    let start = ReadPolicy.alignDown(content.check.hashedUpTo, options.unitSize)
                    let end = min(content.size, start + options.partSize)
                    return startFetches(&s, file: file, range: start..<end, demand: true).tasks
                }
                try await awaitDownloads(tasks, for: file)
            }
        }
    }

    /// Waits until the task feeding the verifier of `key` (or checking its disk entry) lets go.
    func waitForHashing(_ key: ContentKey) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let registered = state.withLock { s -> Bool in
                guard s.contents[key]?.check.hashing == true else { return false }
                s.contents[key]?.check.waiters.append(continuation)
                return true
            }
            if !registered { continuation.resume() }
        }
    }
}

extension ReaderState {
    /// Clears the hashing flag of `key` and hands back the tasks waiting for it.
    mutating func releaseHashing(_ key: ContentKey) -> [CheckedContinuation<Void, Never>] {
        guard let waiters = contents[key]?.check.waiters else { return [] }
        contents[key]?.check.hashing = false
        contents[key]?.check.waiters = []
        dropIfIdle(key)  // a content closed while it was being checked
        return waiters
    }
}

/// The running content_hash of one content's bytes.
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
