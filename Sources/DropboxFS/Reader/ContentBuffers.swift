// A content's bytes in memory: the downloads of its parts (segments), which segment holds or
// fetches each unit, and which units arrived at least once. Downloads run in their own Tasks and
// are shared by every read that needs their bytes, also reads of other files with the same
// content: such a download names the revision of the handle that started it, and when that
// revision is gone, reads of the other files fetch the bytes again under their own
// (FileReader.awaitDownloads). Every byte held or in flight counts in one memory cap
// (ReaderState.reserve); a read's demanded bytes go over it, a prefetch stops at it, and buffers are
// dropped in EvictionOrder to make room.
//
// Locking: ContentBuffers and the cap are part of ReaderState, behind FileReader's one Mutex
// (`FileReader.state`); a download fetches outside it and takes it to publish its bytes.
//
// Below it, UnitGrid and UnitSet: how a file's bytes are cut into units, and which have arrived.

import DropboxAPI
import Log

/// One part's download, shared by every read that needs its bytes.
typealias FetchTask = SharedWork<Void>

/// A download a read waits for, and the revision it names: files with the same content share
/// downloads, so it may be another file's (FileReader.awaitDownloads).
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

/// The buffers of one content.
struct ContentBuffers {
    let grid: UnitGrid
    var segments: [UInt64: Segment] = [:]
    /// Unit index -> id of the segment holding or fetching it.
    var owners: [Int: UInt64] = [:]
    /// Units downloaded at least once, and the number of leading units among them without a gap.
    var arrived: UnitSet
    var arrivedPrefix = 0

    init(grid: UnitGrid) {
        self.grid = grid
        arrived = UnitSet(capacity: grid.count)
    }

    /// The bytes of the unit holding `offset` onwards, when a buffer holds them.
    func bytes(at offset: UInt64) -> ArraySlice<UInt8>? {
        guard let id = owners[grid.unit(at: offset)], let segment = segments[id], let bytes = segment.bytes else { return nil }
        return bytes[Int(offset - segment.range.lowerBound)...]
    }

    /// Adds the download of `segment` as `id`, owner of its units.
    mutating func add(_ segment: Segment, id: UInt64) {
        segments[id] = segment
        for unit in grid.units(segment.range) { owners[unit] = id }
    }

    /// Stores a finished download's bytes; false when the segment is gone (the content started
    /// over, or its last handle was closed).
    mutating func arrive(_ id: UInt64, bytes: [UInt8], tick: UInt64, writing: Bool) -> Bool {
        guard var segment = segments[id] else { return false }
        segment.bytes = bytes
        segment.fetch = nil
        segment.lastUsed = tick
        segment.writing = writing
        segments[id] = segment
        arrived.insert(grid.units(segment.range))
        arrivedPrefix = arrived.firstMissing(from: arrivedPrefix)
        return true
    }

    /// Removes a segment; returns the bytes it accounted for (0 when it was not there).
    mutating func removeSegment(_ id: UInt64) -> UInt64 {
        guard let segment = segments.removeValue(forKey: id) else { return 0 }
        for unit in grid.units(segment.range) where owners[unit] == id {
            owners[unit] = nil
        }
        return segment.range.upperBound - segment.range.lowerBound
    }

    /// Forgets every buffer and which units arrived (ContentState.startOver); returns the bytes
    /// released: those of buffers and of fetches still in flight, whose reservations go with their
    /// segments.
    mutating func removeAll() -> UInt64 {
        var released: UInt64 = 0
        for id in Array(segments.keys) {
            released += removeSegment(id)
        }
        owners = [:]
        arrived = UnitSet(capacity: arrived.capacity)
        arrivedPrefix = 0
        return released
    }

    /// Bytes held by segments, downloaded or in flight.
    var heldBytes: UInt64 {
        segments.values.reduce(0) { $0 + ($1.range.upperBound - $1.range.lowerBound) }
    }
}

extension ReaderState {
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
                removeSegment(id, of: key)
                dropIfIdle(key)
            }
        }
        guard demand || memoryUsed + bytes <= limit else { return false }
        memoryUsed += bytes
        return true
    }

    /// Removes a segment of `key` and gives its bytes back to the cap.
    mutating func removeSegment(_ id: UInt64, of key: ContentKey) {
        memoryUsed -= contents[key]?.buffers.removeSegment(id) ?? 0
    }

    /// Forgets the downloads of units of `range` that were cancelled because every read waiting
    /// for them was interrupted, so those units are fetched again.
    mutating func dropAbandonedDownloads(_ key: ContentKey, in range: Range<UInt64>) {
        guard let buffers = contents[key]?.buffers else { return }
        var abandoned: Set<UInt64> = []
        for unit in buffers.grid.units(range) {
            if let id = buffers.owners[unit], buffers.segments[id]?.fetch?.isAbandoned == true { abandoned.insert(id) }
        }
        for id in abandoned { removeSegment(id, of: key) }
    }

    /// Forgets the downloads of `key` still in flight and returns them, for the caller to cancel
    /// once the lock is released (the last handle on the content was closed).
    mutating func dropDownloadsInFlight(_ key: ContentKey) -> [FetchTask] {
        guard let segments = contents[key]?.buffers.segments else { return [] }
        var dropped: [FetchTask] = []
        for (id, segment) in segments {
            guard let fetch = segment.fetch, segment.bytes == nil else { continue }
            removeSegment(id, of: key)
            dropped.append(fetch)
        }
        return dropped
    }
}

extension FileReader {
    /// Starts downloads for the units of `range` nobody holds, in parts, and returns the tasks of
    /// every download covering `range`. A prefetch stops where the memory cap refuses a part.
    func startFetches(
        _ s: inout ReaderState, file: PinnedFile, range: Range<UInt64>, demand: Bool
    ) -> (tasks: [PendingFetch], stoppedAt: UInt64?) {
        let key = file.key
        s.dropAbandonedDownloads(key, in: range)
        guard let coverage = s.contents[key]?.coverage(of: range) else { return ([], nil) }
        var tasks = coverage.pending
        let partSize = ReadPolicy.partSize(fileSize: file.size, options: options)
        for run in coverage.missing {
            for part in ReadPolicy.parts(of: run, maxPart: partSize) {
                guard s.reserve(part.upperBound - part.lowerBound, limit: options.memoryLimit, demand: demand) else {
                    return (tasks, part.lowerBound)
                }
                let id = s.nextSegment
                s.nextSegment += 1
                let task = FetchTask { _ in await self.download(file, segment: id, range: part) }
                let tick = s.nextTick()
                s.contents[key]?.buffers.add(Segment(range: part, rev: file.rev, fetch: task, lastUsed: tick), id: id)
                tasks.append(PendingFetch(task: task, rev: file.rev))
            }
        }
        return (tasks, nil)
    }

    /// Waits for the downloads a read of `file` needs, in turn. One named another file with the
    /// same content, whose revision is gone (ESTALE), says nothing of `file`'s revision: it ends
    /// without bytes, and the read finds them missing and fetches them again under its own revision.
    func awaitDownloads(_ waits: [PendingFetch], for file: PinnedFile) async throws(FilesystemError) {
        for wait in waits {
            do throws(FilesystemError) {
                _ = try await wait.task.value()
            } catch {
                guard error == .stale, wait.rev != file.rev else { throw error }
            }
        }
    }

    /// One part's download: fetch, publish, feed the verifier, queue the write to the disk entry.
    private func download(_ file: PinnedFile, segment id: UInt64, range: Range<UInt64>) async -> Result<Void, FilesystemError> {
        let key = file.key
        let bytes: [UInt8]
        switch await fetchBytes(file, range: range) {
        case .success(let fetched): bytes = fetched
        case .failure(let error):
            withState { s in
                s.removeSegment(id, of: key)
                s.dropIfIdle(key)
            }
            return .failure(error)
        }
        let (published, writeTo, failed) = withState { s -> (Bool, DiskCache.Partial?, Bool) in
            let tick = s.nextTick()
            let outcome = s.contents[key]?.publish(id, bytes: bytes, tick: tick) ?? (published: false, writeTo: nil)
            let failed = s.contents[key]?.check.verification == .failed
            if !outcome.published {
                s.removeSegment(id, of: key)
                s.dropIfIdle(key)
            }
            return (outcome.published, outcome.writeTo, failed)
        }
        guard published else {
            // A content that failed its check answers EIO. Otherwise the segment was dropped while
            // it was fetched (the content started over after a first mismatch): these bytes are of
            // no use, but nothing is wrong with them, and the reads waiting for them look again
            // and fetch what they miss (FileReader.gather).
            return failed ? .failure(.integrity(.contentHashMismatch(file: file.label))) : .success(())
        }
        if let writeTo {
            diskQueue.async { self.write(bytes, range: range, segment: id, of: file, to: writeTo) }
        }
        pumpVerification(key)
        return .success(())
    }

    /// The bytes of `range` of the pinned revision, exactly; a short reply is retried twice.
    private func fetchBytes(_ file: PinnedFile, range: Range<UInt64>) async -> Result<[UInt8], FilesystemError> {
        let length = range.upperBound - range.lowerBound
        // A download again after a content_hash mismatch avoids the connection the damage came over.
        let fresh = withState { ($0.contents[file.key]?.check.attempt ?? 0) > 0 }
        // A zip of the file's folder holds it (Reader/FolderZips.swift): not after a mismatch.
        if !fresh, let zips {
            do {
                if let bytes = try await zips.bytes(of: file, range: range) { return .success(bytes) }
            } catch {
                return .failure(error)
            }
        }
        var shortReplies = 0
        while true {
            let result: DownloadResult
            let started = zips?.now()
            do {
                result = try await client.download(
                    path: "rev:" + file.rev, range: ByteRange(offset: range.lowerBound, length: length),
                    freshConnection: fresh)
            } catch {
                return .failure(Self.failure(error, file: file))
            }
            // A small file's download is the yardstick of folder zips (FolderZips.slower).
            if let zips, let started, length <= zips.smallFileLimit { zips.noteDownload(seconds: zips.now() - started) }
            guard result.metadata.rev == file.rev else {
                Log.warning("\(file.label): Dropbox served revision \(result.metadata.rev) instead; the open file is stale")
                return .failure(.stale)
            }
            if UInt64(result.data.count) == length { return .success(result.data) }
            shortReplies += 1
            let action = shortReplies < 3 ? "retrying" : "giving up"
            Log.warning("\(file.label): got \(result.data.count) of \(length) bytes at \(range.lowerBound); \(action)")
            if shortReplies >= 3 { return .failure(.integrity(.shortDownload(file: file.label))) }
        }
    }

    /// How a failed download surfaces (ErrnoTable.swift: a revision Dropbox no longer has is a
    /// stale handle), logged once here.
    private static func failure(_ error: DropboxError, file: PinnedFile) -> FilesystemError {
        let failure = FilesystemError.download(error)
        switch failure {
        case .interrupted: break  // cancelled: no read waits for it any more
        case .restricted: break  // FileReader.noteRestricted says it, once per revision
        case .stale: Log.warning("\(file.label): this revision is no longer on Dropbox (\(error)); the open file is stale")
        default: Log.warning("\(file.label): download failed: \(error)")
        }
        return failure
    }
}

// MARK: -
// The units of one file (UnitGrid: how its bytes are cut), and a set of unit indexes as a bitmap
// (UnitSet): which units have arrived at least once, and which are written to a disk cache entry
// in progress. A 1 GiB file of 256 KiB units needs 512 bytes. The bitmap's words are kept in a
// dictionary, allocated as units arrive: a file's size is the server's word (up to
// ServerLimits.maxFileSize, 2^53 bytes), and a dense bitmap of such a file would take gigabytes at
// `open`. Plain values: they live in ContentState, behind FileReader's lock.

struct UnitSet: Sendable, Equatable {
    /// Number of units the set can hold (indexes 0..<capacity).
    let capacity: Int
    /// Word index -> 64 units; absent words are empty.
    private var words: [Int: UInt64] = [:]
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 0)
    }

    var isFull: Bool { count == capacity }

    func contains(_ unit: Int) -> Bool {
        guard unit >= 0, unit < capacity, let word = words[unit >> 6] else { return false }
        return word & (1 << UInt64(unit & 63)) != 0
    }

    mutating func insert(_ units: Range<Int>) {
        for unit in units.clamped(to: 0..<capacity) where !contains(unit) {
            words[unit >> 6, default: 0] |= 1 << UInt64(unit & 63)
            count += 1
        }
    }

    /// The first unit at or after `start` that is not in the set (`capacity` when there is none).
    func firstMissing(from start: Int) -> Int {
        var unit = max(0, start)
        while unit < capacity, contains(unit) { unit += 1 }
        return unit
    }
}

/// How a file of `size` bytes is cut into units of `unitSize` bytes (the last one may be shorter).
struct UnitGrid: Sendable, Equatable {
    let size: UInt64
    let unitSize: UInt64

    /// How many units the file has.
    var count: Int { Int(size / unitSize + (size % unitSize == 0 ? 0 : 1)) }

    /// The units that hold bytes of `range`.
    func units(_ range: Range<UInt64>) -> Range<Int> {
        Int(range.lowerBound / unitSize)..<Int((range.upperBound + unitSize - 1) / unitSize)
    }

    /// The bytes of `units`.
    func unitRange(_ units: Range<Int>) -> Range<UInt64> {
        UInt64(units.lowerBound) * unitSize..<min(UInt64(units.upperBound) * unitSize, size)
    }

    /// The unit holding the byte at `offset`.
    func unit(at offset: UInt64) -> Int { Int(offset / unitSize) }
}
