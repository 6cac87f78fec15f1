// The file reader behind open, read and release. A handle is pinned to the revision seen at open
// and every download names it ("rev:<rev>"), so one open file never mixes two versions. A read is
// answered from, in order: a checked disk cache entry, buffers downloaded earlier, the disk entry
// being written, and new ranged downloads; ReadPolicy decides what else to fetch ahead. Downloads
// run in their own Tasks and are shared by every handle on the same content (same content_hash),
// also of other files: such a download names the revision of the handle that started it, and when
// that revision is gone, reads of the other files fetch the bytes again under their own.
// Whole-file reads are checked against content_hash (FileReader+Verification.swift).
//
// An interrupted read stops waiting at once (`.interrupted`); a download it waited for goes on
// while another read waits for it, and is cancelled when the last read waiting for it was
// interrupted (SharedWork.swift). Downloads still running when the last handle on their content
// is released are cancelled too: no handle waits for them any more; and its disk entry, unless
// every byte of it arrived, is given up, since no read would finish it.
//
// Locking: `state` (one Mutex) guards ReaderState. It is never held across an await, a download,
// disk I/O or hashing; disk cache files given up inside it are deleted after it is released.
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
    /// Whether work on `diskQueue` is overdue (DiskWork.swift).
    let diskStall = DiskStall()
    /// How long an open or a read waits for the disk queue before it goes without the cache.
    static let diskWait = 0.5
    /// Runs between two pieces of a disk entry's check: a yield, which tests replace to hold a
    /// check in progress (wrapped: StoredClosure.swift).
    let diskCheckPause = Mutex(StoredClosure<@Sendable () async -> Void>({ await Task.yield() }))

    init(client: any DropboxClient, options: ReaderOptions, invalidations: InvalidationPublisher? = nil) {
        self.client = client
        self.options = options
        self.invalidations = invalidations
        let queue = DispatchQueue(label: "dropboxfs.disk-cache")
        diskQueue = queue
        diskCache = options.diskCache.flatMap { DiskCache.open($0, queue: queue) }
    }

    /// Runs `body` under the lock, then deletes the disk downloads it gave up.
    func withState<T: Sendable, E: Error>(_ body: (inout ReaderState) throws(E) -> T) throws(E) -> T {
        let (result, abandoned) = try state.withLock { (s: inout ReaderState) throws(E) -> (T, [DiskCache.Partial]) in
            let result = try body(&s)
            defer { s.abandoned = [] }
            return (result, s.abandoned)
        }
        for partial in abandoned { diskCache?.abandon(partial) }
        return result
    }

    // MARK: open and release

    /// Opens a handle without waiting for the disk: nil when the content's disk cache entry must be
    /// opened first (`open`, from a task). An entry already open is marked used on the disk queue.
    func openNow(_ file: PinnedFile) -> OpenedFile? {
        if let diskCache, case .hash(let hash) = file.key, file.size > 0 {
            let known = state.withLock { s -> (exists: Bool, entry: CacheFile?) in
                guard let content = s.contents[file.key] else { return (false, nil) }
                guard case .complete(let entry, _) = content.disk else { return (true, nil) }
                return (true, entry)
            }
            if let entry = known.entry {
                diskCache.markUsed(key: hash.hex, file: entry)
            } else if !known.exists && diskCache.knows(key: hash.hex) {
                // A disk that stopped answering is not waited for again: Dropbox serves this open.
                guard diskStall.isStalled else { return nil }
                Log.debug("disk cache: the disk is not answering; reading \(file.label) from Dropbox this time")
                return install(file, disk: .none, entryUnavailable: true)
            }
        }
        return install(file, disk: .none, entryUnavailable: false)
    }

    /// Opens a handle, opening the content's disk cache entry on the disk queue when one is known.
    /// An interrupted open stops waiting at once (`.interrupted`); the entry's open goes on and
    /// its file is dropped. A disk that does not answer within `diskWait` is not waited for: the
    /// handle reads from Dropbox.
    func open(_ file: PinnedFile) async throws(FilesystemError) -> OpenedFile {
        if let opened = openNow(file) { return opened }
        guard let diskCache, case .hash(let hash) = file.key else { return install(file, disk: .none, entryUnavailable: false) }
        let found = try await DiskWork.run(on: diskQueue, stall: diskStall, waitingAtMost: Self.diskWait) {
            diskCache.entry(key: hash.hex, size: file.size)
        }
        guard let lookup = found else {
            Log.warning("disk cache: the disk did not answer within \(Self.diskWait) s; reading \(file.label) from Dropbox this time")
            return install(file, disk: .none, entryUnavailable: true)
        }
        switch lookup {
        case .hit(let entry, let checked):
            return install(file, disk: .complete(entry, checked: checked), entryUnavailable: false)
        case .miss:
            return install(file, disk: .none, entryUnavailable: false)
        case .unavailable(let error):
            Log.warning("disk cache: \(error); reading \(file.label) from Dropbox this time")
            // The entry exists but cannot be opened now: no second one is written over it.
            return install(file, disk: .none, entryUnavailable: true)
        }
    }

    /// Registers a handle on `file`; `disk` is used only when no other handle holds the content.
    private func install(_ file: PinnedFile, disk: DiskState, entryUnavailable: Bool) -> OpenedFile {
        let key = file.key
        return withState { s in
            if s.contents[key] == nil {
                var content = ContentState(file: file, unitSize: options.unitSize, disk: disk)
                if entryUnavailable { content.diskTried = true }
                s.contents[key] = content
            }
            s.contents[key]?.handles += 1
            s.contents[key]?.inodes.insert(file.inode)
            let policy = s.pageCachePolicy(for: file, wholeFileLimit: options.wholeFileLimit)
            let handle = s.nextHandle
            s.nextHandle += 1
            s.handles[handle] = HandleState(file: file, stream: ReadStream(window: options.initialWindow))
            return OpenedFile(handle: handle, pageCache: policy)
        }
    }

    func release(_ handle: UInt64) {
        let unwanted = withState { s -> [FetchTask] in
            guard let closed = s.handles.removeValue(forKey: handle) else { return [] }
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

    /// How much the reader keeps: open handles, contents it remembers, and notes per inode (page
    /// cache revisions, warnings), for the status line.
    /// Counts `bytes` held outside the read buffers (an export kept in memory, Exports.swift) in
    /// the memory cap, dropping buffers to make room. Without `demand` it fails when the room
    /// cannot be made; with it, it counts the bytes even above the cap.
    func reserveOutsideBuffers(_ bytes: UInt64, demand: Bool) -> Bool {
        state.withLock { $0.reserve(bytes, limit: options.memoryLimit, demand: demand) }
    }

    /// Gives back what `reserveOutsideBuffers` counted.
    func releaseOutsideBuffers(_ bytes: UInt64) {
        state.withLock { $0.memoryUsed -= bytes }
    }

    /// Bytes counted in the memory cap now (buffers and what is held outside them).
    var memoryUsed: UInt64 { state.withLock { $0.memoryUsed } }

    func keptCounts() -> (handles: Int, contents: Int, inodeNotes: Int) {
        state.withLock { ($0.handles.count, $0.contents.count, $0.pageCacheNotes.count + $0.warnedNotDownloadable.count) }
    }

    /// Logs once per inode (while the kernel holds it) that an export-only document cannot be read.
    /// Logs, once per inode while the kernel holds it, that an export-only document could not be
    /// exported (Exports.swift).
    func warnNotExported(inode: UInt64, path: String, because error: DropboxError) {
        guard state.withLock({ $0.warnedNotDownloadable.insert(inode).inserted }) else { return }
        Log.warning("\(path): Dropbox could not export this document (\(error)); opening it fails")
    }

    // MARK: read

    /// What a read does after its first look at the state.
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
        /// The content's attempt when the read was planned (ContentState.attempt).
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

    /// `ranged`: the reader is a thumbnailer or content sniffer (ReadPolicy.swift).
    func read(_ handle: UInt64, offset: UInt64, size: Int, ranged: Bool = false) async throws(FilesystemError) -> [UInt8] {
        guard size > 0 else { return [] }
        for _ in 0..<3 {
            if Task.isCancelled { throw .interrupted }
            try await startDiskEntryIfWanted(handle, offset: offset)
            switch try withState({ (s: inout ReaderState) throws(FilesystemError) -> Start in
                try begin(&s, handle: handle, offset: offset, length: UInt64(size), ranged: ranged)
            }) {
            case .empty: return []
            case .fromDisk(let file, let range): return try Self.bytes(of: [.disk(file, range)])
            case .checkDisk: try await checkDiskEntry(handle)
            case .fetch(let plan): return try await finish(plan)
            }
        }
        throw .local(.diskCacheUnchecked)
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
            if content.verification == .failed { throw .integrity(.contentHashMismatch(file: file.label)) }
            switch content.disk {
            case .complete(let cacheFile, checked: true): return (.fromDisk(cacheFile, offset..<end), false)
            case .complete(_, checked: false): return (.checkDisk, false)
            case .none, .partial: return (nil, content.mustVerify(offset..<end, wholeFileLimit: wholeFileLimit))
            }
        }
        guard let (early, verify) = look else { throw .badHandle }
        if let early { return early }
        let attemptNow = s.contents[file.key]?.attempt ?? 0
        if offset == 0 || open.passAttempt == nil { open.passAttempt = attemptNow }
        let pass = open.passAttempt ?? attemptNow
        // Every read reaching the end fails until the handle starts a new pass (at offset 0): the
        // kernel ignores a failed read-ahead and asks again, and that retry must fail too.
        if end == file.size,
            s.contents[file.key]?.passServedDamagedBytes(since: pass, wholeFileLimit: wholeFileLimit) == true
        {
            s.handles[handle] = open
            throw ContentState.damagedPass(file.label)
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
    private func finish(_ plan: ReadPlan) async throws(FilesystemError) -> [UInt8] {
        let key = plan.file.key
        var waits = plan.waits
        var attempt = plan.attempt
        for _ in 0..<5 {
            // A download abandoned by interrupted reads (nil) is missing below and fetched again.
            for wait in waits { try await awaitDownload(wait, for: plan.file) }
            let collected = try withState { (s: inout ReaderState) throws(FilesystemError) -> Collected in
                guard let content = s.contents[key] else { throw .badHandle }
                if content.verification == .failed { throw .integrity(.contentHashMismatch(file: plan.file.label)) }
                // The read completing a pass over a large file whose download was found damaged
                // (and started over) while the pass ran: the pass served damaged bytes.
                if plan.range.upperBound == plan.file.size,
                    content.passServedDamagedBytes(since: attempt, wholeFileLimit: plan.wholeFileLimit)
                {
                    throw ContentState.damagedPass(plan.file.label)
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
                let now = withState { $0.contents[key]?.attempt ?? attempt }
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

    // MARK: downloads

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
        let unit = options.unitSize
        for run in coverage.missing {
            for part in ReadPolicy.parts(of: run, maxPart: partSize) {
                guard s.reserve(part.upperBound - part.lowerBound, limit: options.memoryLimit, demand: demand) else {
                    return (tasks, part.lowerBound)
                }
                let id = s.nextSegment
                s.nextSegment += 1
                let task = FetchTask { _ in await self.download(file, segment: id, range: part) }
                let tick = s.nextTick()
                s.contents[key]?.segments[id] = Segment(range: part, rev: file.rev, fetch: task, lastUsed: tick)
                for index in Int(part.lowerBound / unit)..<Int((part.upperBound + unit - 1) / unit) {
                    s.contents[key]?.owners[index] = id
                }
                tasks.append(PendingFetch(task: task, rev: file.rev))
            }
        }
        return (tasks, nil)
    }

    /// Waits for a download a read of `file` needs. One named another file with the same content,
    /// whose revision is gone (ESTALE), says nothing of `file`'s revision: it ends without bytes,
    /// and the read finds them missing and fetches them again under its own revision.
    func awaitDownload(_ wait: PendingFetch, for file: PinnedFile) async throws(FilesystemError) {
        do throws(FilesystemError) {
            _ = try await wait.task.value()
        } catch {
            guard error == .stale, wait.rev != file.rev else { throw error }
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
                s.memoryUsed -= s.contents[key]?.removeSegment(id) ?? 0
                s.dropIfIdle(key)
            }
            return .failure(error)
        }
        let (published, writeTo, failed) = withState { s -> (Bool, DiskCache.Partial?, Bool) in
            let tick = s.nextTick()
            let outcome = s.contents[key]?.publish(id, bytes: bytes, tick: tick) ?? (published: false, writeTo: nil)
            let failed = s.contents[key]?.verification == .failed
            if !outcome.published {
                s.memoryUsed -= s.contents[key]?.removeSegment(id) ?? 0
                s.dropIfIdle(key)
            }
            return (outcome.published, outcome.writeTo, failed)
        }
        guard published else {
            // A content that failed its check answers EIO. Otherwise the segment was dropped while
            // it was fetched (the content started over after a first mismatch): these bytes are of
            // no use, but nothing is wrong with them, and the reads waiting for them look again
            // and fetch what they miss (finish).
            return failed ? .failure(.integrity(.contentHashMismatch(file: file.label))) : .success(())
        }
        if let writeTo {
            diskQueue.async { self.write(bytes, range: range, segment: id, of: file, to: writeTo) }
        }
        pumpVerification(key)
        return .success(())
    }

    /// On `diskQueue`: writes a part into the disk entry being filled, then commits the entry if
    /// that was its last missing part and the content is verified.
    private func write(_ bytes: [UInt8], range: Range<UInt64>, segment id: UInt64, of file: PinnedFile, to partial: DiskCache.Partial) {
        let key = file.key
        let error = partial.file.write(bytes, at: range.lowerBound)
        if let error, diskCache?.refusesWrites(error) != true { Log.warning("disk cache: \(error); \(file.label) stays uncached") }
        let commit = withState { s -> DiskCache.Partial? in
            s.contents[key]?.segments[id]?.writing = false
            if error != nil {
                if case .partial(let current, _) = s.contents[key]?.disk, current.path == partial.path { s.giveUpDisk(key) }
                return nil
            }
            s.contents[key]?.markWritten(range, to: partial)
            let commit = s.takeCommit(key)
            s.dropIfIdle(key)  // a content closed while its last part was being written
            return commit
        }
        if let commit { self.commit(commit, key: key) }
    }

    /// Gives a verified, completely written disk entry its final name.
    func commit(_ partial: DiskCache.Partial, key: ContentKey) {
        guard let diskCache, !diskCache.commit(partial) else { return }
        withState { s in
            guard case .complete(let file, _) = s.contents[key]?.disk, file === partial.file else { return }
            s.contents[key]?.disk = .none
        }
    }

    /// The bytes of `range` of the pinned revision, exactly; a short reply is retried twice.
    private func fetchBytes(_ file: PinnedFile, range: Range<UInt64>) async -> Result<[UInt8], FilesystemError> {
        let length = range.upperBound - range.lowerBound
        // A download again after a content_hash mismatch avoids the connection the damage came over.
        let fresh = withState { ($0.contents[file.key]?.attempt ?? 0) > 0 }
        var shortReplies = 0
        while true {
            let result: DownloadResult
            do {
                result = try await client.download(
                    path: "rev:" + file.rev, range: ByteRange(offset: range.lowerBound, length: length),
                    freshConnection: fresh)
            } catch {
                return .failure(Self.failure(error, file: file))
            }
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
        case .stale: Log.warning("\(file.label): this revision is no longer on Dropbox (\(error)); the open file is stale")
        default: Log.warning("\(file.label): download failed: \(error)")
        }
        return failure
    }

    // MARK: disk cache

    /// Starts a disk cache entry for the content when a read begins at its start (or the file is
    /// small enough to be fetched whole): reads elsewhere in big files do not fill the cache.
    /// The entry's file is created on the disk queue, waited for at most `diskWait` (and not at all
    /// while the queue is stalled): without it the content is simply not cached this time.
    private func startDiskEntryIfWanted(_ handle: UInt64, offset: UInt64) async throws(FilesystemError) {
        guard let diskCache, !diskStall.isStalled else { return }
        let wanted = withState { s -> (key: ContentKey, name: String, size: UInt64)? in
            guard let file = s.handles[handle]?.file, case .hash(let hash) = file.key,
                let content = s.contents[file.key], !content.diskTried, content.verification == .pending,
                offset < options.unitSize || content.size <= options.wholeFileLimit
            else { return nil }
            s.contents[file.key]?.diskTried = true
            return (file.key, hash.hex, content.size)
        }
        guard let wanted else { return }
        let created = try await DiskWork.run(
            on: diskQueue, stall: diskStall, waitingAtMost: Self.diskWait, unclaimed: { if let late = $0 { diskCache.abandon(late) } }
        ) { diskCache.begin(key: wanted.name, size: wanted.size) }
        guard let partial = created ?? nil else { return }
        let installed = withState { s -> Bool in
            // Bytes that arrived before the entry existed would never be written: no entry then.
            guard let content = s.contents[wanted.key], case .none = content.disk, content.arrived.count == 0 else {
                return false
            }
            s.contents[wanted.key]?.disk = .partial(partial, present: UnitSet(capacity: content.arrived.capacity))
            return true
        }
        if !installed { diskCache.abandon(partial) }
    }

    /// Checks a disk cache entry this process did not write against its content_hash before its
    /// first use; a damaged entry is deleted and the content downloaded again. The check runs once
    /// for all the reads that need it (SharedWork): an interrupted read stops waiting at once, and
    /// the check stops when no read waits for it any more (the entry stays unchecked, and the next
    /// read checks it again).
    private func checkDiskEntry(_ handle: UInt64) async throws(FilesystemError) {
        let work = withState { s -> SharedWork<Void>? in
            guard let key = s.handles[handle]?.file.key, let content = s.contents[key],
                case .complete(let file, checked: false) = content.disk, let expected = content.expectedHash
            else { return nil }
            if let running = content.diskCheck, !running.isAbandoned { return running }
            let check = DiskCheck(key: key, file: file, size: content.size, expected: expected, label: content.label)
            let work = SharedWork<Void> { work in await self.runDiskCheck(check, as: work) }
            s.contents[key]?.diskCheck = work
            return work
        }
        // nil: checked meanwhile, or the content is gone; the read looks again.
        guard let work else { return }
        _ = try await work.value()
    }

    private struct DiskCheck: Sendable {
        let key: ContentKey
        let file: CacheFile
        let size: UInt64
        let expected: ContentHash
        let label: String
    }

    /// The check itself, in its own task; its outcome is recorded only while the content still
    /// counts on this check (`diskCheck === work`).
    private func runDiskCheck(_ check: DiskCheck, as work: SharedWork<Void>) async -> Result<Void, FilesystemError> {
        let name = check.expected.hex
        let pause = diskCheckPause.withLock { $0.call }
        // nil: cancelled, and the entry stays unchecked for the next read.
        let sound: Bool?
        switch await ContentVerifier.check(check.file, size: check.size, expected: check.expected, chunk: options.partSize, pause: pause) {
        case .matches:
            sound = true
            diskCache?.markChecked(key: name)
        case .differs:
            sound = false
            Log.warning("disk cache: the entry of \(check.label) does not match its content_hash; downloading it again")
            diskCache?.discard(key: name)
        case .unreadable(let error):
            sound = false
            Log.warning("disk cache: \(error); downloading \(check.label) again")
            diskCache?.discard(key: name)
        case .cancelled:
            sound = nil
        }
        withState { s in
            guard s.contents[check.key]?.diskCheck === work else { return }
            s.contents[check.key]?.diskCheck = nil
            if let sound {
                s.contents[check.key]?.disk = sound ? .complete(check.file, checked: true) : .none
                if sound {
                    s.contents[check.key]?.verification = .verified
                } else {
                    s.contents[check.key]?.diskTried = false  // the download may write a new entry
                }
            }
            s.dropIfIdle(check.key)
        }
        return sound == nil ? .failure(.interrupted) : .success(())
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

extension ReaderState {
    /// The disk entry of `key` when it is ready to be committed (verified and completely written);
    /// the content then reads from it as a complete entry.
    mutating func takeCommit(_ key: ContentKey) -> DiskCache.Partial? {
        guard let content = contents[key], content.verification == .verified,
            case .partial(let partial, let present) = content.disk, present.isFull
        else { return nil }
        contents[key]?.disk = .complete(partial.file, checked: true)
        return partial
    }

    /// Gives up the disk entry of `key`, closed by its last handle, when some of its bytes never
    /// arrived (the file was read in part, or its downloads in flight were just dropped): no read
    /// will fill it, and it would keep its descriptor open and its whole size reserved in the cap.
    /// An entry whose every unit arrived is kept: its last writes are queued, and it is committed
    /// once they and the check are done.
    mutating func giveUpUnfinishedDisk(_ key: ContentKey) {
        guard let content = contents[key], case .partial = content.disk, !content.arrived.isFull else { return }
        giveUpDisk(key)
    }

    /// Stops writing a content to the disk cache (a write failed or its bytes cannot be committed).
    mutating func giveUpDisk(_ key: ContentKey) {
        guard case .partial(let partial, _) = contents[key]?.disk else { return }
        contents[key]?.disk = .none
        abandoned.append(partial)
    }
}
