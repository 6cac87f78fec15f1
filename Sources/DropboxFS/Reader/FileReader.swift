// The file reader behind open, read and release: it only orchestrates. A handle
// (ReadHandles, ReaderState.swift) is pinned to the revision seen at open and every download names it
// ("rev:<rev>"), so one open file never mixes two versions. A read is answered from, in order: a
// checked disk cache entry, buffers downloaded earlier, the disk entry being written, and new ranged
// downloads; ReadPolicy decides what else to fetch ahead. Each concern of a content has its file:
// the buffers and their downloads (ContentBuffers.swift), the disk cache entry (DiskEntry.swift),
// the content_hash check (ContentCheck.swift); ContentState (ReaderState.swift) joins them, and exports of
// export-only documents are apart (Exports.swift).
//
// An interrupted read stops waiting at once (`.interrupted`); a download it waited for goes on
// while another read waits for it, and is cancelled when the last read waiting for it was
// interrupted (SharedWork.swift). Downloads still running when the last handle on their content
// is released are cancelled too: no handle waits for them any more; and its disk entry, unless
// every byte of it arrived, is given up, since no read would finish it.
//
// Locking: `state` (one Mutex) guards ReaderState. It is never held across an await, a download,
// disk I/O or hashing; disk cache files given up inside it are deleted, and entries found ready
// committed, after it is released (withState).
// Writes to the disk cache run on `diskQueue` (one thread outside Swift's small cooperative pool),
// so readers get a part as soon as it arrives; so do the opens of disk cache entries, their
// touches and deletions, and the creation of a new entry, which may wait on a disk that stopped
// answering (DiskCache.swift): an open that must open an entry is answered from a task (`openNow`
// says so by answering nil), and the FUSE thread never waits for the disk. A task waits for the
// disk queue at most `diskWait`, then goes without the cache; while such work is overdue the
// queue counts as stalled and nobody waits for it (Reader/DiskWork.swift).

import Dispatch
import DropboxAPI
import Log
import Synchronization

final class FileReader: Sendable {
    let client: any DropboxClient
    let options: ReaderOptions
    let diskCache: DiskCache?
    /// Where the pages the kernel cached of a content found damaged are dropped (the FUSE session).
    let invalidations: InvalidationPublisher?
    let state = Mutex(ReaderState())
    let diskQueue: DispatchQueue
    /// Folders fetched as one zip for the read-ahead across files (FolderZips.swift); nil: none.
    let zips: FolderZips?
    /// Whether work on `diskQueue` is overdue (DiskWork.swift).
    let diskStall = DiskStall()
    /// How long an open or a read waits for the disk queue before it goes without the cache.
    static let diskWait = 0.5
    /// Runs between two pieces of a disk entry's check: a yield, which tests replace to hold a
    /// check in progress (wrapped: StoredClosure.swift).
    let diskCheckPause = Mutex(StoredClosure<@Sendable () async -> Void>({ await Task.yield() }))

    /// `pinnedKeys`: disk cache entries of pinned files, kept by the trim at open.
    init(
        client: any DropboxClient, options: ReaderOptions, invalidations: InvalidationPublisher? = nil,
        pinnedKeys: Set<String> = [], zips: FolderZips? = nil
    ) {
        self.client = client
        self.zips = zips
        self.options = options
        self.invalidations = invalidations
        let queue = DispatchQueue(label: "dropboxfs.disk-cache")
        diskQueue = queue
        diskCache = options.diskCache.flatMap { DiskCache.open($0, pinned: pinnedKeys, queue: queue) }
    }

    /// Runs `body` under the lock, then deletes the disk downloads it gave up and commits the disk
    /// entries it found ready (DiskEntry.swift).
    func withState<T: Sendable, E: Error>(_ body: (inout ReaderState) throws(E) -> T) throws(E) -> T {
        let (result, abandoned, committing) = try state.withLock {
            (s: inout ReaderState) throws(E) -> (T, [DiskCache.Partial], [(key: ContentKey, partial: DiskCache.Partial)]) in
            let result = try body(&s)
            defer {
                s.abandoned = []
                s.committing = []
            }
            return (result, s.abandoned, s.committing)
        }
        for partial in abandoned { diskCache?.abandon(partial) }
        if !committing.isEmpty { commit(committing) }
        return result
    }

    // MARK: open and release

    /// Opens a handle without waiting for the disk: nil when the content's disk cache entry must be
    /// opened first (`open`, from a task).
    func openNow(_ file: PinnedFile) -> OpenedFile? {
        guard let disk = diskEntryNow(file) else { return nil }
        return install(file, disk: disk)
    }

    /// Opens a handle, opening the content's disk cache entry on the disk queue when one is known
    /// (openDiskEntry). An interrupted open stops waiting at once (`.interrupted`).
    func open(_ file: PinnedFile) async throws(FilesystemError) -> OpenedFile {
        if let opened = openNow(file) { return opened }
        return install(file, disk: try await openDiskEntry(file))
    }

    /// Registers a handle on `file`; `disk` is used only when no other handle holds the content.
    /// `forKernel: false` (a read-ahead's handle, FileReader+ReadAhead.swift) leaves the notes on
    /// the kernel's page cache alone: the kernel never sees that handle.
    func install(_ file: PinnedFile, disk: DiskEntry, forKernel: Bool = true) -> OpenedFile {
        let key = file.key
        return withState { s in
            if s.contents[key] == nil {
                s.contents[key] = ContentState(file: file, unitSize: options.unitSize, disk: disk)
            }
            s.contents[key]?.handles += 1
            s.contents[key]?.inodes.insert(file.inode)
            let policy = forKernel ? s.pageCachePolicy(for: file, wholeFileLimit: options.wholeFileLimit) : .bypass
            let handle = s.handles.add(ReadHandle(file: file, stream: ReadStream(window: options.initialWindow)))
            return OpenedFile(handle: handle, pageCache: policy)
        }
    }

    func release(_ handle: UInt64) {
        let unwanted = withState { s -> [FetchTask] in
            guard let closed = s.handles.remove(handle) else { return [] }
            let key = closed.file.key
            s.contents[key]?.handles -= 1
            var unwanted: [FetchTask] = []
            if s.contents[key]?.handles == 0 {
                unwanted = s.dropDownloadsInFlight(key)
                s.giveUpUnfinishedDisk(key)
            }
            s.dropIfIdle(key)
            return unwanted
        }
        for download in unwanted { download.cancel() }
    }

    /// The kernel evicted `inode` (it holds no reference to it any more): its page cache is gone,
    /// so nothing is kept about it (the maps keyed by inode would otherwise grow with every
    /// revision ever opened, each being a new inode).
    func forgetInode(_ inode: UInt64) {
        state.withLock { s in
            s.pageCacheNotes[inode] = nil
            s.warnedNotDownloadable.remove(inode)
        }
    }

    /// Bytes counted in the memory cap now (buffers and what is held outside them).
    var memoryUsed: UInt64 { state.withLock { $0.memoryUsed } }

    /// How much the reader keeps: open handles, contents it remembers, and notes per inode (page
    /// cache revisions, warnings), for the status line.
    func keptCounts() -> (handles: Int, contents: Int, inodeNotes: Int) {
        state.withLock { ($0.handles.count, $0.contents.count, $0.pageCacheNotes.count + $0.warnedNotDownloadable.count) }
    }

    // MARK: read

    /// What a read does after a look at the state.
    private enum Start: Sendable {
        case empty
        case fromDisk(CacheFile, Range<UInt64>)
        case checkDisk
        case fetch(ReadPlan)
    }

    struct ReadPlan: Sendable {
        var file: PinnedFile
        var range: Range<UInt64>
        var sequential: Bool
        var verify: Bool
        var waits: [PendingFetch]
        /// The content's attempt when the read was planned (ContentCheck.attempt).
        var attempt: Int
        /// ReadPolicy.wholeFileLimit of the reading handle.
        var wholeFileLimit: UInt64
    }

    private enum Collected: Sendable {
        /// The read's bytes, and whether it must wait for the content_hash check: decided again now
        /// that its bytes are here (a read that began while the last part was still on its way did
        /// not count as completing a pass then).
        case pieces([Piece], verify: Bool)
        case refetch([PendingFetch])
    }

    /// A read in two steps, one after the other: its plan (`plan`: after checking a disk entry first
    /// if it must), then its bytes (`gather`). Each step repeats on its own, never inside the other.
    /// `ranged`: the reader is a thumbnailer or content sniffer (ReadPolicy.swift).
    func read(_ handle: UInt64, offset: UInt64, size: Int, ranged: Bool = false) async throws(FilesystemError) -> [UInt8] {
        guard size > 0 else { return [] }
        // One look under the lock, and none at all while no revision was ever refused.
        let refused = withState { s in
            !s.restricted.isEmpty && s.handles[handle].map { s.restricted.contains($0.file.key) } == true
        }
        if refused { throw .restricted(.restrictedContent) }
        do throws(FilesystemError) {
            switch try await plan(handle, offset: offset, length: UInt64(size), ranged: ranged) {
            case .empty: return []
            case .fromDisk(let file, let range): return try Self.bytes(of: [.disk(file, range)])
            case .checkDisk: throw .local(.diskCacheUnchecked)
            case .fetch(let plan): return try await gather(plan)
            }
        } catch .restricted(let why) {
            noteRestricted(handle)
            throw .restricted(why)
        }
    }

    /// EACCES at once for a revision Dropbox refused to send (`restricted_content`): it is never
    /// asked for again during this mount (docs/SEMANTICS.md, "Access levels").
    func refuseRestricted(_ file: PinnedFile) throws(FilesystemError) {
        if state.withLock({ $0.restricted.contains(file.key) }) { throw .restricted(.restrictedContent) }
    }

    /// Remembers the revision of `handle` as restricted; the first time, one warning line.
    private func noteRestricted(_ handle: UInt64) {
        let first = state.withLock { s -> PinnedFile? in
            guard let file = s.handles[handle]?.file, s.restricted.insert(file.key).inserted else { return nil }
            return file
        }
        if let first {
            Log.warning("\(first.label): Dropbox blocks this file's content (restricted_content); opening it answers EACCES")
        }
    }

    /// The read's plan. A disk entry that must be checked first is checked, and the read looks
    /// again; after three checks it answers `.checkDisk` (the entry is still unchecked).
    private func plan(_ handle: UInt64, offset: UInt64, length: UInt64, ranged: Bool) async throws(FilesystemError) -> Start {
        for _ in 0..<3 {
            if Task.isCancelled { throw .interrupted }
            try await startDiskEntryIfWanted(handle, offset: offset)
            let start = try withState { (s: inout ReaderState) throws(FilesystemError) -> Start in
                try begin(&s, handle: handle, offset: offset, length: length, ranged: ranged)
            }
            guard case .checkDisk = start else { return start }
            try await checkDiskEntry(handle)
        }
        return .checkDisk
    }

    /// Applies the read policy and starts the downloads the read needs or should prefetch.
    private func begin(
        _ s: inout ReaderState, handle: UInt64, offset: UInt64, length: UInt64, ranged: Bool
    ) throws(FilesystemError) -> Start {
        guard var open = s.handles[handle] else { throw .badHandle }
        let file = open.file
        if ranged {
            open.stream = ReadPolicy.ranged(open.stream, options: options)
            // Pages it reads are not checked first: the next open must not keep them.
            if file.size <= options.wholeFileLimit { s.pageCacheNotes[file.inode]?.trusted = false }
        }
        let wholeFileLimit = ReadPolicy.wholeFileLimit(open.stream, options: options)
        guard offset < file.size else { return .empty }
        let end = file.size - offset < length ? file.size : offset + length
        // Only values are taken out of the content: a copy alive while its buffers are changed
        // below would copy them.
        let look = try s.contents[file.key].map { (content: ContentState) throws(FilesystemError) -> (Start?, Bool) in
            if content.check.verification == .failed { throw .integrity(.contentHashMismatch(file: file.label)) }
            switch content.disk.state {
            case .complete(let cacheFile, checked: true): return (.fromDisk(cacheFile, offset..<end), false)
            case .complete(_, checked: false): return (.checkDisk, false)
            case .none, .partial: return (nil, content.mustVerify(offset..<end, wholeFileLimit: wholeFileLimit))
            }
        }
        guard let (early, verify) = look else { throw .badHandle }
        if let early { return early }
        let attemptNow = s.contents[file.key]?.check.attempt ?? 0
        if offset == 0 || open.passAttempt == nil { open.passAttempt = attemptNow }
        let pass = open.passAttempt ?? attemptNow
        // Every read reaching the end fails until the handle starts a new pass (at offset 0): the
        // kernel ignores a failed read-ahead and asks again, and that retry must fail too.
        if end == file.size,
            s.contents[file.key]?.passServedDamagedBytes(since: pass, wholeFileLimit: wholeFileLimit) == true
        {
            s.handles[handle] = open
            throw ContentCheck.damagedPass(file.label)
        }
        let decision = ReadPolicy.decide(open.stream, offset: offset, length: length, fileSize: file.size, options: options)
        open.stream = decision.stream
        let waits = startFetches(&s, file: file, range: decision.demand, demand: true).tasks
        if let prefetch = decision.prefetch,
            let stopped = startFetches(&s, file: file, range: prefetch, demand: false).stoppedAt
        {
            open.stream.requestedUpTo = stopped
        }
        s.handles[handle] = open
        let attempt = file.size > wholeFileLimit ? pass : attemptNow
        return .fetch(
            ReadPlan(
                file: file, range: offset..<end, sequential: decision.sequential, verify: verify, waits: waits,
                attempt: attempt, wholeFileLimit: wholeFileLimit))
    }

    /// Waits for the read's downloads, gathers its bytes (fetching again what was evicted in the
    /// meantime) and, when the read must be verified, waits for the content_hash check.
    private func gather(_ plan: ReadPlan) async throws(FilesystemError) -> [UInt8] {
        let key = plan.file.key
        var waits = plan.waits
        var attempt = plan.attempt
        for _ in 0..<5 {
            // A download abandoned by interrupted reads (nil) is missing below and fetched again.
            try await awaitDownloads(waits, for: plan.file)
            let collected = try withState { (s: inout ReaderState) throws(FilesystemError) -> Collected in
                guard let content = s.contents[key] else { throw .badHandle }
                if content.check.verification == .failed { throw .integrity(.contentHashMismatch(file: plan.file.label)) }
                // The read completing a pass over a large file whose download was found damaged
                // (and started over) while the pass ran: the pass served damaged bytes.
                if plan.range.upperBound == plan.file.size,
                    content.passServedDamagedBytes(since: attempt, wholeFileLimit: plan.wholeFileLimit)
                {
                    throw ContentCheck.damagedPass(plan.file.label)
                }
                let tick = s.nextTick()
                if let pieces = s.contents[key]?.pieces(of: plan.range, tick: tick, sequential: plan.sequential) {
                    let now = s.contents[key]?.mustVerify(plan.range, wholeFileLimit: plan.wholeFileLimit) ?? false
                    return .pieces(pieces, verify: plan.verify || now)
                }
                let unit = options.unitSize
                let aligned =
                    ReadPolicy.alignDown(plan.range.lowerBound, unit)..<min(
                        ReadPolicy.alignUp(plan.range.upperBound, unit), plan.file.size)
                return .refetch(startFetches(&s, file: plan.file, range: aligned, demand: true).tasks)
            }
            switch collected {
            case .pieces(let pieces, let verify):
                guard verify else { return try Self.bytes(of: pieces) }
                try await awaitVerification(plan.file, attempt: attempt)
                let now = withState { $0.contents[key]?.check.attempt ?? attempt }
                if now == attempt { return try Self.bytes(of: pieces) }
                // The pieces are of the damaged download, which was replaced: gather them again.
                attempt = now
                waits = []
            case .refetch(let tasks):
                waits = tasks
            }
        }
        throw .local(.evicted(file: plan.file.label))
    }

    /// The concatenated bytes of `pieces`.
    static func bytes(of pieces: [Piece]) throws(FilesystemError) -> [UInt8] {
        if pieces.count == 1, case .memory(let slice) = pieces[0] { return Array(slice) }
        var out: [UInt8] = []
        for piece in pieces {
            switch piece {
            case .memory(let slice):
                out.append(contentsOf: slice)
            case .disk(let file, let range):
                switch file.read(range) {
                case .success(let bytes): out.append(contentsOf: bytes)
                case .failure(let error):
                    let failure = LocalFailure.diskCache(operation: error.operation, errno: error.code)
                    Log.warning("\(failure)")
                    throw .local(failure)
                }
            }
        }
        return out
    }
}
