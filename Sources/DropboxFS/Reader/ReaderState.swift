// The reader's bookkeeping, all behind FileReader's one Mutex (`FileReader.state`): the open
// handles (ReadHandles, ReaderState.swift), the memory cap's count, what the kernel's page cache of each inode
// may hold, and per distinct content (a content_hash, or a revision without one, shared by every
// handle on a file with those bytes) a ContentState. A content's three concerns are values of
// their own: its buffers (ContentBuffers.swift), its disk cache entry (DiskEntry.swift) and its
// content_hash check (ContentCheck.swift); ContentState here answers the questions that need more
// than one of them: where a read's bytes are, what it still has to fetch, whether it must wait for
// the check, which buffers may be dropped, and starting over after a mismatch. Methods here only
// move values around; the network, the disk and the hashing happen in FileReader outside the lock.
// Disk entries given up or ready to commit are collected here (`abandoned`, `committing`) and
// handled by FileReader.withState once the lock is released.
//
// Below it, the open file handles (ReadHandles), which live in the same state.

import DropboxAPI

/// The identity of a file's bytes: its content_hash when Dropbox gave one, else its revision.
enum ContentKey: Hashable, Sendable {
    case hash(ContentHash)
    case rev(String)
}

/// A piece of a read's answer.
enum Piece {
    case memory(ArraySlice<UInt8>)
    case disk(CacheFile, Range<UInt64>)
}

struct ContentState {
    let grid: UnitGrid
    /// For log lines: the path and revision of the first opener.
    let label: String
    var handles = 0
    /// The inodes opened with this content, whose kernel page cache holds its bytes.
    var inodes: Set<UInt64> = []
    var buffers: ContentBuffers
    var disk: DiskEntry
    var check: ContentCheck

    init(file: PinnedFile, unitSize: UInt64, disk: DiskEntry) {
        grid = UnitGrid(size: file.size, unitSize: unitSize)
        label = file.label
        buffers = ContentBuffers(grid: grid)
        self.disk = disk
        var trusted = false
        if case .complete(_, checked: true) = disk.state { trusted = true }
        check = ContentCheck(expected: file.contentHash, trusted: trusted)
    }

    var size: UInt64 { grid.size }

    var isIdle: Bool { handles == 0 && buffers.segments.isEmpty }

    /// Whether a pass that began under download `attempt` has served bytes of a download since
    /// found damaged (startOver). Only a large file's pass can have: a small file is checked before
    /// any of its bytes is served.
    func passServedDamagedBytes(since attempt: Int, wholeFileLimit: UInt64) -> Bool {
        size > wholeFileLimit && check.attempt != attempt
    }

    /// After a content_hash mismatch: forgets every byte and the hash state, so the file is
    /// downloaded again from the start (once; a second mismatch fails the file). Returns the bytes
    /// released: those of buffers and of fetches still in flight, whose reservations go with their
    /// segments. Those fetches find their segment gone and drop what they bring; the reads waiting
    /// for them look again and fetch what they miss (FileReader.gather).
    mutating func startOver() -> UInt64 {
        let released = buffers.removeAll()
        check.restart()
        return released
    }

    /// Should a read of `range` wait for the content_hash check before answering? Always for
    /// files fetched whole; for larger files, a read that reaches the end when every unit before
    /// it has arrived (a read completing a whole-file pass).
    func mustVerify(_ range: Range<UInt64>, wholeFileLimit: UInt64) -> Bool {
        guard check.verification == .pending else { return false }
        if size <= wholeFileLimit { return true }
        return range.upperBound == size && buffers.arrivedPrefix >= grid.unit(at: range.lowerBound)
    }

    /// Tasks of the segments fetching units of `range`, and the unit runs in it that nobody holds.
    func coverage(of range: Range<UInt64>) -> (pending: [PendingFetch], missing: [Range<UInt64>]) {
        var pending: [PendingFetch] = []
        var seen: Set<UInt64> = []
        var missing: [Range<UInt64>] = []
        var runStart: Int?
        let span = grid.units(range)
        for unit in span {
            let owner = buffers.owners[unit]
            if owner == nil, !disk.isOnDisk(unit) {
                if runStart == nil { runStart = unit }
                continue
            }
            if let start = runStart {
                missing.append(grid.unitRange(start..<unit))
                runStart = nil
            }
            if let owner, seen.insert(owner).inserted, let segment = buffers.segments[owner], let task = segment.fetch {
                pending.append(PendingFetch(task: task, rev: segment.rev))
            }
        }
        if let start = runStart { missing.append(grid.unitRange(start..<span.upperBound)) }
        return (pending, missing)
    }

    /// The bytes of `range` as pieces, or nil when some unit is neither buffered nor on disk.
    /// Marks the buffers used, and consumed when a sequential reader reached their end.
    mutating func pieces(of range: Range<UInt64>, tick: UInt64, sequential: Bool) -> [Piece]? {
        var pieces: [Piece] = []
        var position = range.lowerBound
        while position < range.upperBound {
            if let id = buffers.owners[grid.unit(at: position)], var segment = buffers.segments[id], let bytes = segment.bytes {
                let end = min(range.upperBound, segment.range.upperBound)
                let base = segment.range.lowerBound
                pieces.append(.memory(bytes[Int(position - base)..<Int(end - base)]))
                segment.lastUsed = tick
                if sequential, end == segment.range.upperBound { segment.consumed = true }
                buffers.segments[id] = segment
                position = end
            } else if let piece = disk.piece(at: position, upTo: range.upperBound, grid: grid), case .disk(_, let read) = piece {
                pieces.append(piece)
                position = read.upperBound
            } else {
                return nil
            }
        }
        return pieces
    }

    /// Where the verifier finds the bytes at `offset`: a buffer, or the disk entry being written.
    func hashSource(at offset: UInt64, maxLength: UInt64) -> Piece? {
        if let bytes = buffers.bytes(at: offset) { return .memory(bytes) }
        return disk.piece(at: offset, upTo: min(size, offset + maxLength), grid: grid)
    }

    /// Records a finished download and returns the disk entry its bytes must be written to; false
    /// in `published` when the segment is gone (the content started over, or its last handle was
    /// closed) or the content failed its check.
    mutating func publish(_ id: UInt64, bytes: [UInt8], tick: UInt64) -> (published: Bool, writeTo: DiskCache.Partial?) {
        guard check.verification != .failed else { return (false, nil) }
        let writeTo = disk.partial
        guard buffers.arrive(id, bytes: bytes, tick: tick, writing: writeTo != nil) else { return (false, nil) }
        return (true, writeTo)
    }

    /// The buffers that could be dropped, as the eviction policy sees them.
    func evictionCandidates() -> [EvictionOrder.Buffer] {
        let onDisk = disk.isComplete
        return buffers.segments.compactMap { id, segment in
            guard segment.bytes != nil, !segment.writing else { return nil }
            let span = grid.units(segment.range)
            let written = onDisk || span.allSatisfy { disk.isOnDisk($0) }
            return EvictionOrder.Buffer(
                id: id, bytes: segment.range.upperBound - segment.range.lowerBound,
                consumed: segment.consumed || written,
                unhashed: check.verification == .pending && segment.range.upperBound > check.hashedUpTo && !written,
                lastUsed: segment.lastUsed)
        }
    }
}

struct ReaderState {
    var handles = ReadHandles()
    var contents: [ContentKey: ContentState] = [:]
    var nextSegment: UInt64 = 1
    /// Bytes held by segments, downloaded or in flight, and by exports kept in memory.
    var memoryUsed: UInt64 = 0
    /// The use clock for buffers.
    var tick: UInt64 = 0
    /// Inode -> what the kernel's page cache of that inode may hold (pageCachePolicy).
    var pageCacheNotes: [UInt64: PageCacheNote] = [:]
    /// Inodes already reported as not downloadable.
    var warnedNotDownloadable: Set<UInt64> = []
    /// Revisions Dropbox refused to send (`restricted_content`): opened and read no more, and
    /// reported once (FileReader.refuseRestricted). A few entries at most; kept for the mount.
    var restricted: Set<ContentKey> = []
    /// Disk downloads given up under the lock, deleted by FileReader once it is released.
    var abandoned: [DiskCache.Partial] = []
    /// Disk entries ready to be committed (commitIfReady), committed once the lock is released.
    var committing: [(key: ContentKey, partial: DiskCache.Partial)] = []

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
        if handles.holdOtherRevision(of: file) { return .bypass }
        let trusted: Bool
        if file.size <= wholeFileLimit || file.contentHash == nil {
            trusted = true
        } else if let content = contents[file.key] {
            trusted = content.check.isTrusted
        } else {
            trusted = false
        }
        let note = pageCacheNotes[file.inode]
        pageCacheNotes[file.inode] = PageCacheNote(rev: file.rev, trusted: trusted)
        if let note, note.rev == file.rev, note.trusted, trusted { return .keep }
        return .drop
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
            guard content.handles == 0, content.disk.isComplete, !content.check.hashing, content.check.waiters.isEmpty,
                content.buffers.segments.values.allSatisfy({ $0.bytes != nil && !$0.writing })
            else { return }
            memoryUsed -= content.buffers.heldBytes
        }
        contents[key] = nil
        if let partial = content.disk.partial { abandoned.append(partial) }
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

// MARK: -
// The reader's open file handles: each pins one revision of one file (PinnedFile) and carries its
// read stream (ReadPolicy.swift) and the download attempt its current pass began under. Handles
// are numbered from 1 here; export handles are numbered apart (ExportedDocuments.firstHandle).
//
// Locking: `ReadHandles` is part of ReaderState, behind FileReader's one Mutex (`FileReader.state`).

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

/// One open handle of the reader.
struct ReadHandle {
    var file: PinnedFile
    var stream: ReadStream
    /// The content attempt (ContentCheck.attempt) of the first read of the handle's current pass
    /// over a large file: a pass that began on a download later found damaged has served some of its
    /// bytes, so its read reaching the end fails (FileReader.begin).
    var passAttempt: Int?
}

/// The open handles, by number.
struct ReadHandles {
    private var handles: [UInt64: ReadHandle] = [:]
    private var next: UInt64 = 1

    var count: Int { handles.count }

    subscript(_ handle: UInt64) -> ReadHandle? {
        get { handles[handle] }
        set { handles[handle] = newValue }
    }

    /// Registers a new handle and returns its number.
    mutating func add(_ handle: ReadHandle) -> UInt64 {
        let number = next
        next += 1
        handles[number] = handle
        return number
    }

    mutating func remove(_ handle: UInt64) -> ReadHandle? {
        handles.removeValue(forKey: handle)
    }

    /// Whether a handle holds another revision of the file at `inode` open.
    func holdOtherRevision(of file: PinnedFile) -> Bool {
        handles.values.contains { $0.file.inode == file.inode && $0.file.rev != file.rev }
    }
}

/// An open file handle and how the kernel's page cache should treat it.
public struct OpenedFile: Sendable, Equatable {
    public var handle: UInt64
    public var pageCache: PageCachePolicy

    public init(handle: UInt64, pageCache: PageCachePolicy) {
        self.handle = handle
        self.pageCache = pageCache
    }
}
