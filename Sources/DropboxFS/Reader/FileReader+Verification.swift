// The content_hash check of downloaded bytes. Dropbox publishes one hash per file (a hash of its
// 4 MiB block hashes) and no per-block hashes, so only a whole file can be checked. As parts arrive,
// the bytes from the start are fed to the content's verifier in file order (from buffers, or from
// the disk entry being written when a buffer was evicted); when the last byte is fed the file is
// verified or failed. Bytes damaged on the way are not the file's fault: the first mismatch makes
// the whole file be downloaded once more (ContentState.startOver, one warning); a second mismatch
// fails it, and it answers EIO to every read and logs one error. A verified file is committed to
// the disk cache. Reads that must not be answered before the check
// (ContentState.mustVerify) wait for it here.

import DropboxAPI
import Log

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
            guard let content = s.contents[key], content.verification == .pending, !content.hashing,
                let verifier = content.verifier
            else { return nil }
            s.contents[key]?.hashing = true
            return (verifier, content.hashedUpTo)
        }
        guard let claim else { return }
        var position = claim.position
        while true {
            let step = withState { s -> HashStep in
                // The content may have been dropped (closed, its buffers evicted) while a part
                // was read from disk, and opened again as a new one with a verifier of its own:
                // this hasher must not touch that one.
                guard let content = s.contents[key], content.verifier === claim.verifier else { return .stop([]) }
                s.contents[key]?.hashedUpTo = position
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
                        guard s.contents[key]?.verifier === claim.verifier else { return [] }
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

    /// Compares the finished hash, records the outcome and commits a complete disk entry.
    private func finishVerification(_ key: ContentKey, verifier: ContentVerifier) {
        let actual = verifier.finish()
        let matches = actual == verifier.expected
        let (waiters, commit, label, again, damagedInodes) = withState {
            s -> ([CheckedContinuation<Void, Never>], DiskCache.Partial?, String, Bool, Set<UInt64>) in
            guard let content = s.contents[key], content.verifier === verifier else { return ([], nil, "", false, []) }
            var commit: DiskCache.Partial?
            var again = false
            if matches {
                s.contents[key]?.verification = .verified
                commit = s.takeCommit(key)  // otherwise the last write commits it
            } else if content.attempt == 0 {
                s.giveUpDisk(key)
                s.memoryUsed -= s.contents[key]?.startOver() ?? 0
                // The kernel's page cache may hold damaged bytes: the next open must drop it.
                for inode in content.inodes { s.pageCacheNotes[inode] = nil }
                again = true
            } else {
                s.contents[key]?.verification = .failed
                for inode in content.inodes { s.pageCacheNotes[inode] = nil }
                s.giveUpDisk(key)
                for (id, segment) in content.segments where segment.bytes != nil {
                    s.memoryUsed -= s.contents[key]?.removeSegment(id) ?? 0
                }
            }
            return (s.releaseHashing(key), commit, content.label, again, matches ? [] : content.inodes)
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
        if let commit { self.commit(commit, key: key) }
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
                switch content.verification {
                case .verified, .unverifiable: return .done
                case .failed: return .failed
                case .pending: return content.hashing ? .busy : .idle(content.hashedUpTo)
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
                    guard let content = s.contents[key], content.verification == .pending, !content.hashing else { return [] }
                    let start = ReadPolicy.alignDown(content.hashedUpTo, options.unitSize)
                    let end = min(content.size, start + options.partSize)
                    return startFetches(&s, file: file, range: start..<end, demand: true).tasks
                }
                for task in tasks { try await awaitDownload(task, for: file) }
            }
        }
    }

    /// Waits until the task feeding the verifier of `key` (or checking its disk entry) lets go.
    func waitForHashing(_ key: ContentKey) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let registered = state.withLock { s -> Bool in
                guard s.contents[key]?.hashing == true else { return false }
                s.contents[key]?.waiters.append(continuation)
                return true
            }
            if !registered { continuation.resume() }
        }
    }
}

extension ReaderState {
    /// Clears the hashing flag of `key` and hands back the tasks waiting for it.
    mutating func releaseHashing(_ key: ContentKey) -> [CheckedContinuation<Void, Never>] {
        guard let waiters = contents[key]?.waiters else { return [] }
        contents[key]?.hashing = false
        contents[key]?.waiters = []
        dropIfIdle(key)  // a content closed while it was being checked
        return waiters
    }
}
