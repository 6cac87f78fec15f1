// The reader's bookkeeping, all behind FileReader's one Mutex: open handles, and per distinct
// content (a content_hash, or a revision without one) the downloaded buffers, which units arrived,
// the disk cache entry and the content_hash check. Methods here only move values around; the
// network, the disk and the hashing happen in FileReader outside the lock.

import DropboxAPI

/// The identity of a file's bytes: its content_hash when Dropbox gave one, else its revision.
enum ContentKey: Hashable, Sendable {
    case hash(ContentHash)
    case rev(String)
}

/// One revision of one file, as an open handle pins it.
struct PinnedFile: Sendable, Equatable {
    var inode: UInt64
    var path: String
    var rev: String
    var size: UInt64
    var contentHash: ContentHash?

    var key: ContentKey { contentHash.map(ContentKey.hash) ?? .rev(rev) }
    var label: String { "\(path) (rev \(rev))" }
}

/// One part's download, shared by every read that needs its bytes.
typealias FetchTask = SharedWork<Void>

/// A download a read waits for, and the revision it names: files with the same content share
/// downloads, so it may be another file's (FileReader.awaitDownload).
struct PendingFetch: Sendable {
    let task: FetchTask
    let rev: String
}

/// Downloaded (or downloading) bytes of whole units of a content.
struct Segment {
    let range: Range<UInt64>
    /// The revision its download names (that of the handle whose read started it).
    let rev: String
    /// Nil while the download runs.
    var bytes: [UInt8]?
    var fetch: FetchTask?
    var lastUsed: UInt64
    /// A sequential reader has read to its end.
    var consumed = false
    /// Its bytes are queued for the disk cache entry; it cannot be evicted until they are written.
    var writing = false
}

/// Where a content stands with the disk cache.
enum DiskState {
    case none
    /// Being written; `present` holds the units already in the file.
    case partial(DiskCache.Partial, present: UnitSet)
    /// A complete entry; `checked` once it matched its hash in this process.
    case complete(CacheFile, checked: Bool)
}

enum Verification: Equatable {
    /// No content_hash: nothing to check.
    case unverifiable
    case pending
    case verified
    case failed
}

/// A piece of a read's answer.
enum Piece {
    case memory(ArraySlice<UInt8>)
    case disk(CacheFile, Range<UInt64>)
}

struct ContentState {
    let size: UInt64
    let expectedHash: ContentHash?
    let unitSize: UInt64
    /// For log lines: the path and revision of the first opener.
    let label: String
    var handles = 0
    var segments: [UInt64: Segment] = [:]
    /// Unit index -> id of the segment holding or fetching it.
    var owners: [Int: UInt64] = [:]
    var disk: DiskState
    /// True once a disk cache entry was tried for this content (it is tried once).
    var diskTried = false
    /// Units downloaded at least once, and the number of leading units among them without a gap.
    var arrived: UnitSet
    var arrivedPrefix = 0
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
    /// The check of a disk cache entry this process did not write (FileReader.checkDiskEntry):
    /// reads join it, and it is cancelled when every read waiting for it was interrupted.
    var diskCheck: SharedWork<Void>?

    init(file: PinnedFile, unitSize: UInt64, disk: DiskState) {
        size = file.size
        expectedHash = file.contentHash
        self.unitSize = unitSize
        label = file.label
        self.disk = disk
        arrived = UnitSet(capacity: Int(file.size / unitSize + (file.size % unitSize == 0 ? 0 : 1)))
        if case .complete = disk { diskTried = true }
        if let hash = file.contentHash {
            if case .complete(_, checked: true) = disk {
                verification = .verified
            } else {
                verification = .pending
            }
            verifier = ContentVerifier(expected: hash)
        } else {
            verification = .unverifiable
            verifier = nil
        }
    }

    var isIdle: Bool { handles == 0 && segments.isEmpty }
    /// The inodes opened with this content, whose kernel page cache holds its bytes.
    var inodes: Set<UInt64> = []

    /// Whether a pass that began under download `attempt` has served bytes of a download since
    /// found damaged (startOver). Only a large file's pass can have: a small file is checked before
    /// any of its bytes is served.
    func passServedDamagedBytes(since attempt: Int, wholeFileLimit: UInt64) -> Bool {
        size > wholeFileLimit && self.attempt != attempt
    }

    /// The error of such a pass's read reaching the end.
    static func damagedPass(_ label: String) -> FilesystemError {
        .integrity(.damagedPass(file: label))
    }

    /// After a content_hash mismatch: forgets every byte and the hash state, so the file is
    /// downloaded again from the start (once; a second mismatch fails the file). Returns the bytes
    /// released: those of buffers and of fetches still in flight, whose reservations go with their
    /// segments. Those fetches find their segment gone and drop what they bring; the reads waiting
    /// for them look again and fetch what they miss (FileReader.download).
    mutating func startOver() -> UInt64 {
        var released: UInt64 = 0
        for id in Array(segments.keys) {
            released += removeSegment(id)
        }
        owners = [:]
        arrived = UnitSet(capacity: arrived.capacity)
        arrivedPrefix = 0
        hashedUpTo = 0
        verifier = expectedHash.map { ContentVerifier(expected: $0) }
        verification = verifier == nil ? .unverifiable : .pending
        attempt += 1
        return released
    }

    func units(_ range: Range<UInt64>) -> Range<Int> {
        Int(range.lowerBound / unitSize)..<Int((range.upperBound + unitSize - 1) / unitSize)
    }

    func unitRange(_ units: Range<Int>) -> Range<UInt64> {
        UInt64(units.lowerBound) * unitSize..<min(UInt64(units.upperBound) * unitSize, size)
    }

    func isOnDisk(_ unit: Int) -> Bool {
        if case .partial(_, let present) = disk { return present.contains(unit) }
        return false
    }

    /// Should a read of `range` wait for the content_hash check before answering? Always for
    /// files fetched whole; for larger files, a read that reaches the end when every unit before
    /// it has arrived (a read completing a whole-file pass).
    func mustVerify(_ range: Range<UInt64>, wholeFileLimit: UInt64) -> Bool {
        guard verification == .pending else { return false }
        if size <= wholeFileLimit { return true }
        return range.upperBound == size && arrivedPrefix >= Int(range.lowerBound / unitSize)
    }

    /// Tasks of the segments fetching units of `range`, and the unit runs in it that nobody holds.
    func coverage(of range: Range<UInt64>) -> (pending: [PendingFetch], missing: [Range<UInt64>]) {
        var pending: [PendingFetch] = []
        var seen: Set<UInt64> = []
        var missing: [Range<UInt64>] = []
        var runStart: Int?
        let span = units(range)
        for unit in span {
            let owner = owners[unit]
            if owner == nil, !isOnDisk(unit) {
                if runStart == nil { runStart = unit }
                continue
            }
            if let start = runStart {
                missing.append(unitRange(start..<unit))
                runStart = nil
            }
            if let owner, seen.insert(owner).inserted, let segment = segments[owner], let task = segment.fetch {
                pending.append(PendingFetch(task: task, rev: segment.rev))
            }
        }
        if let start = runStart { missing.append(unitRange(start..<span.upperBound)) }
        return (pending, missing)
    }

    /// The bytes of `range` as pieces, or nil when some unit is neither buffered nor on disk.
    /// Marks the buffers used, and consumed when a sequential reader reached their end.
    mutating func pieces(of range: Range<UInt64>, tick: UInt64, sequential: Bool) -> [Piece]? {
        var pieces: [Piece] = []
        var position = range.lowerBound
        while position < range.upperBound {
            let unit = Int(position / unitSize)
            if let id = owners[unit], var segment = segments[id], let bytes = segment.bytes {
                let end = min(range.upperBound, segment.range.upperBound)
                let base = segment.range.lowerBound
                pieces.append(.memory(bytes[Int(position - base)..<Int(end - base)]))
                segment.lastUsed = tick
                if sequential, end == segment.range.upperBound { segment.consumed = true }
                segments[id] = segment
                position = end
            } else if case .partial(let partial, let present) = disk, present.contains(unit) {
                let stop = present.firstMissing(from: unit)
                let end = min(range.upperBound, UInt64(stop) * unitSize)
                pieces.append(.disk(partial.file, position..<end))
                position = end
            } else {
                return nil
            }
        }
        return pieces
    }

    /// Where the verifier finds the bytes at `offset`: a buffer, or the disk entry being written.
    func hashSource(at offset: UInt64, maxLength: UInt64) -> Piece? {
        let unit = Int(offset / unitSize)
        if let id = owners[unit], let segment = segments[id], let bytes = segment.bytes {
            let base = segment.range.lowerBound
            return .memory(bytes[Int(offset - base)...])
        }
        if case .partial(let partial, let present) = disk, present.contains(unit) {
            let end = min(UInt64(present.firstMissing(from: unit)) * unitSize, size, offset + maxLength)
            return .disk(partial.file, offset..<end)
        }
        return nil
    }

    /// Records a finished download and returns the disk entry its bytes must be written to; false
    /// in `published` when the segment is gone (the content started over, or its last handle was
    /// closed) or the content failed its check.
    mutating func publish(_ id: UInt64, bytes: [UInt8], tick: UInt64) -> (published: Bool, writeTo: DiskCache.Partial?) {
        guard var segment = segments[id], verification != .failed else { return (false, nil) }
        var writeTo: DiskCache.Partial?
        if case .partial(let partial, _) = disk { writeTo = partial }
        segment.bytes = bytes
        segment.fetch = nil
        segment.lastUsed = tick
        segment.writing = writeTo != nil
        segments[id] = segment
        arrived.insert(units(segment.range))
        arrivedPrefix = arrived.firstMissing(from: arrivedPrefix)
        return (true, writeTo)
    }

    /// Records that `range` is in the disk entry `partial` (if it is still the one being written).
    mutating func markWritten(_ range: Range<UInt64>, to partial: DiskCache.Partial) {
        guard case .partial(let current, var present) = disk, current.path == partial.path else { return }
        present.insert(units(range))
        disk = .partial(current, present: present)
    }

    /// Removes a segment; returns the bytes it accounted for (0 when it was not there).
    mutating func removeSegment(_ id: UInt64) -> UInt64 {
        guard let segment = segments.removeValue(forKey: id) else { return 0 }
        for unit in units(segment.range) where owners[unit] == id {
            owners[unit] = nil
        }
        return segment.range.upperBound - segment.range.lowerBound
    }

    /// The buffers that could be dropped, as the eviction policy sees them.
    func evictionCandidates() -> [EvictionOrder.Buffer] {
        var onDisk = false
        if case .complete = disk { onDisk = true }
        return segments.compactMap { id, segment in
            guard segment.bytes != nil, !segment.writing else { return nil }
            let span = units(segment.range)
            let written = onDisk || span.allSatisfy { isOnDisk($0) }
            return EvictionOrder.Buffer(
                id: id, bytes: segment.range.upperBound - segment.range.lowerBound,
                consumed: segment.consumed || written,
                unhashed: verification == .pending && segment.range.upperBound > hashedUpTo && !written,
                lastUsed: segment.lastUsed)
        }
    }
}

struct HandleState {
    var file: PinnedFile
    var stream: ReadStream
    /// The content attempt (ContentState.attempt) of the first read of the handle's current pass
    /// over a large file: a pass that began on a download later found damaged has served some of its
    /// bytes, so its read reaching the end fails (FileReader.begin).
    var passAttempt: Int?
}

struct ReaderState {
    var handles: [UInt64: HandleState] = [:]
    var contents: [ContentKey: ContentState] = [:]
    var nextHandle: UInt64 = 1
    var nextSegment: UInt64 = 1
    /// Bytes held by segments, downloaded or in flight.
    var memoryUsed: UInt64 = 0
    /// The use clock for buffers.
    var tick: UInt64 = 0
    /// Inode -> what the kernel's page cache of that inode may hold (pageCachePolicy).
    var pageCacheNotes: [UInt64: PageCacheNote] = [:]
    /// Inodes already reported as not downloadable.
    var warnedNotDownloadable: Set<UInt64> = []
    /// Disk downloads given up under the lock, deleted by FileReader once it is released.
    var abandoned: [DiskCache.Partial] = []

    mutating func nextTick() -> UInt64 {
        tick += 1
        return tick
    }

    /// How the kernel's page cache should treat a new handle on `file`: keep it when it holds this
    /// revision and its bytes can be trusted, drop it when it may hold another, and bypass it while
    /// another revision is open (the page cache is per inode, so two revisions cannot share it).
    /// Bytes of a large file are trusted only once its content_hash check passed: pages cached by
    /// random reads were never checked, and a later whole pass served from them would never be.
    /// The page cache is per inode but the check per content, so the trust is noted per inode at
    /// each open: pages are kept only when this inode was last opened (and so filled) while its
    /// content was already trusted. A copy of the content under another name (another inode)
    /// verified meanwhile says nothing of the pages this inode got from unchecked reads.
    mutating func pageCachePolicy(for file: PinnedFile, wholeFileLimit: UInt64) -> PageCachePolicy {
        if handles.values.contains(where: { $0.file.inode == file.inode && $0.file.rev != file.rev }) {
            return .bypass
        }
        let trusted: Bool
        if file.size <= wholeFileLimit || file.contentHash == nil {
            trusted = true
        } else if let content = contents[file.key] {
            trusted = content.verification == .verified || content.verification == .unverifiable
        } else {
            trusted = false
        }
        let note = pageCacheNotes[file.inode]
        pageCacheNotes[file.inode] = PageCacheNote(rev: file.rev, trusted: trusted)
        if let note, note.rev == file.rev, note.trusted, trusted { return .keep }
        return .drop
    }

    /// Makes room for `bytes` more by dropping buffers in eviction order. A demand reservation
    /// (bytes a read is waiting for) always succeeds, even above the limit; a prefetch one fails
    /// when the room cannot be made.
    mutating func reserve(_ bytes: UInt64, limit: UInt64, demand: Bool) -> Bool {
        if memoryUsed + bytes > limit {
            var candidates: [EvictionOrder.Buffer] = []
            var owner: [UInt64: ContentKey] = [:]
            for (key, content) in contents {
                for candidate in content.evictionCandidates() {
                    candidates.append(candidate)
                    owner[candidate.id] = key
                }
            }
            for id in EvictionOrder.buffersToEvict(candidates, needed: memoryUsed + bytes - limit) {
                guard let key = owner[id] else { continue }
                memoryUsed -= contents[key]?.removeSegment(id) ?? 0
                dropIfIdle(key)
            }
        }
        guard demand || memoryUsed + bytes <= limit else { return false }
        memoryUsed += bytes
        return true
    }

    /// Forgets the downloads of units of `range` that were cancelled because every read waiting
    /// for them was interrupted, so those units are fetched again.
    mutating func dropAbandonedDownloads(_ key: ContentKey, in range: Range<UInt64>) {
        guard let content = contents[key] else { return }
        var abandoned: Set<UInt64> = []
        for unit in content.units(range) {
            if let id = content.owners[unit], content.segments[id]?.fetch?.isAbandoned == true { abandoned.insert(id) }
        }
        for id in abandoned { memoryUsed -= contents[key]?.removeSegment(id) ?? 0 }
    }

    /// Forgets the downloads of `key` still in flight and returns them, for the caller to cancel
    /// once the lock is released (the last handle on the content was closed).
    mutating func dropDownloadsInFlight(_ key: ContentKey) -> [FetchTask] {
        guard let segments = contents[key]?.segments else { return [] }
        var dropped: [FetchTask] = []
        for (id, segment) in segments {
            guard let fetch = segment.fetch, segment.bytes == nil else { continue }
            memoryUsed -= contents[key]?.removeSegment(id) ?? 0
            dropped.append(fetch)
        }
        return dropped
    }

    /// Forgets a content nobody has open and nothing is buffered for; its unfinished disk download
    /// goes to `abandoned`.
    ///
    /// A content nobody has open whose bytes are all in a complete disk cache entry is dropped too,
    /// buffers and all: they only repeat the disk, and keeping the content would keep its cache
    /// file open, one descriptor for every file ever read (the soak found thousands). Not while a
    /// buffer is still being fetched or written, or the hash is being checked.
    mutating func dropIfIdle(_ key: ContentKey) {
        guard let content = contents[key] else { return }
        if !content.isIdle {
            guard content.handles == 0, case .complete = content.disk, !content.hashing, content.waiters.isEmpty,
                content.segments.values.allSatisfy({ $0.bytes != nil && !$0.writing })
            else { return }
            for segment in content.segments.values {
                memoryUsed -= segment.range.upperBound - segment.range.lowerBound
            }
        }
        contents[key] = nil
        if case .partial(let partial, _) = content.disk { abandoned.append(partial) }
    }
}

/// What the kernel's page cache of an inode may hold: bytes of revision `rev`, all served while
/// its content was trusted (`trusted`), or maybe some that were never checked.
struct PageCacheNote: Equatable {
    var rev: String
    var trusted: Bool
}

/// How the kernel's page cache treats an open handle (see ReaderState.pageCachePolicy).
public enum PageCachePolicy: Sendable, Equatable {
    case keep
    case drop
    case bypass
}
