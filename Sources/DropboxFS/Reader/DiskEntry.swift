// A content's entry in the disk cache (DiskCache.swift), keyed by its content_hash. An entry is
// started when a read begins at the start of the file (or the file is small enough to be fetched
// whole): reads elsewhere in big files do not fill the cache. Downloaded parts are written into it
// on the disk queue as they arrive, and it is committed (given its final name) when every unit is
// written and the content passed its content_hash check: this file is the only place that decides
// that and does it (ReaderState.commitIfReady, then FileReader.withState commits after unlock). An
// open looks the entry up on the disk queue (openDiskEntry), and an entry this process did not
// write is checked against its content_hash before its first use.
//
// Locking: DiskEntry is part of ReaderState, behind FileReader's one Mutex (`FileReader.state`).
// The disk work (creating, writing, committing, checking an entry) runs outside it: writes and
// creations on the disk queue, checks in their own task; entries given up and entries to commit
// are collected under the lock and handled by FileReader.withState once it is released.

import DropboxAPI
import Log

/// Where a content stands with the disk cache.
enum DiskState {
    case none
    /// Being written; `present` holds the units already in the file.
    case partial(DiskCache.Partial, present: UnitSet)
    /// A complete entry; `checked` once it matched its hash in this process.
    case complete(CacheFile, checked: Bool)
}

/// The disk cache entry of one content.
struct DiskEntry {
    var state: DiskState
    /// True once a disk cache entry was tried for this content (it is tried once).
    var tried = false
    /// True once an entry was wanted while the disk was stalled (counted once, DiskStall.bypassCount).
    var bypassed = false
    /// The check of a disk cache entry this process did not write (FileReader.checkDiskEntry):
    /// reads join it, and it is cancelled when every read waiting for it was interrupted.
    var check: SharedWork<Void>?

    init(_ state: DiskState) {
        self.state = state
        if case .complete = state { tried = true }
    }

    /// An entry that exists but cannot be used now (it cannot be opened, or the disk does not
    /// answer): no second one is written over it.
    static var unavailable: DiskEntry {
        var entry = DiskEntry(.none)
        entry.tried = true
        return entry
    }

    var isComplete: Bool {
        if case .complete = state { return true }
        return false
    }

    /// The entry being written, if any.
    var partial: DiskCache.Partial? {
        if case .partial(let partial, _) = state { return partial }
        return nil
    }

    func isOnDisk(_ unit: Int) -> Bool {
        if case .partial(_, let present) = state { return present.contains(unit) }
        return false
    }

    /// The bytes from `offset` (in unit `unit`) that the entry being written holds, up to `end`.
    func piece(at offset: UInt64, upTo end: UInt64, grid: UnitGrid) -> Piece? {
        let unit = grid.unit(at: offset)
        guard case .partial(let partial, let present) = state, present.contains(unit) else { return nil }
        let stop = UInt64(present.firstMissing(from: unit)) * grid.unitSize
        return .disk(partial.file, offset..<min(end, stop))
    }

    /// Records that `units` are in the entry `partial` (if it is still the one being written).
    mutating func markWritten(_ units: Range<Int>, to partial: DiskCache.Partial) {
        guard case .partial(let current, var present) = state, current.path == partial.path else { return }
        present.insert(units)
        state = .partial(current, present: present)
    }

    /// The entry being written, when it is ready to be committed (`verified`, and every unit
    /// written); the content then reads from it as a complete entry.
    mutating func takeCommit(verified: Bool) -> DiskCache.Partial? {
        guard verified, case .partial(let partial, let present) = state, present.isFull else { return nil }
        state = .complete(partial.file, checked: true)
        return partial
    }

    /// Stops writing the entry; returns it, for deletion once the lock is released.
    mutating func giveUp() -> DiskCache.Partial? {
        guard let partial else { return nil }
        state = .none
        return partial
    }
}

extension ReaderState {
    /// Commits the disk entry of `key` if it is ready (verified and completely written), once the
    /// lock is released (FileReader.withState). Called when either becomes true: the last write
    /// landed, or the content_hash check passed.
    mutating func commitIfReady(_ key: ContentKey) {
        guard let verified = contents[key].map({ $0.check.verification == .verified }),
            let partial = contents[key]?.disk.takeCommit(verified: verified)
        else { return }
        committing.append((key: key, partial: partial))
    }

    /// Gives up the disk entry of `key`, closed by its last handle, when some of its bytes never
    /// arrived (the file was read in part, or its downloads in flight were just dropped): no read
    /// will fill it, and it would keep its descriptor open and its whole size reserved in the cap.
    /// An entry whose every unit arrived is kept: its last writes are queued, and it is committed
    /// once they and the check are done.
    mutating func giveUpUnfinishedDisk(_ key: ContentKey) {
        guard let content = contents[key], content.disk.partial != nil, !content.buffers.arrived.isFull else { return }
        giveUpDisk(key)
    }

    /// Stops writing a content to the disk cache (a write failed or its bytes cannot be committed).
    mutating func giveUpDisk(_ key: ContentKey) {
        if let partial = contents[key]?.disk.giveUp() { abandoned.append(partial) }
    }
}

extension FileReader {
    /// The content's disk entry as an open finds it without waiting for the disk; nil when the
    /// entry must be opened first (openDiskEntry, from a task). An entry already open is marked
    /// used on the disk queue.
    func diskEntryNow(_ file: PinnedFile) -> DiskEntry? {
        if let diskCache, case .hash(let hash) = file.key, file.size > 0 {
            let known = state.withLock { s -> (exists: Bool, entry: CacheFile?) in
                guard let content = s.contents[file.key] else { return (false, nil) }
                guard case .complete(let entry, _) = content.disk.state else { return (true, nil) }
                return (true, entry)
            }
            if let entry = known.entry {
                diskCache.markUsed(key: hash.hex, file: entry)
            } else if !known.exists && diskCache.knows(key: hash.hex) {
                // A disk that stopped answering is not waited for again: Dropbox serves this open.
                guard diskStall.isStalled else { return nil }
                Log.debug("disk cache: the disk is not answering; reading \(file.label) from Dropbox this time")
                diskStall.noteBypass()
                return .unavailable
            }
        }
        return DiskEntry(.none)
    }

    /// Opens the content's disk cache entry on the disk queue. An interrupted open stops waiting at
    /// once (`.interrupted`); the entry's open goes on and its file is dropped. A disk that does not
    /// answer within `diskWait` is not waited for: the handle reads from Dropbox.
    func openDiskEntry(_ file: PinnedFile) async throws(FilesystemError) -> DiskEntry {
        guard let diskCache, case .hash(let hash) = file.key else { return DiskEntry(.none) }
        let found = try await DiskWork.run(on: diskQueue, stall: diskStall, waitingAtMost: Self.diskWait) {
            diskCache.entry(key: hash.hex, size: file.size)
        }
        guard let lookup = found else {
            diskStall.noteBypass()
            Log.warning("disk cache: the disk did not answer within \(Self.diskWait) s; reading \(file.label) from Dropbox this time")
            return .unavailable
        }
        switch lookup {
        case .hit(let entry, let checked):
            return DiskEntry(.complete(entry, checked: checked))
        case .miss:
            return DiskEntry(.none)
        case .unavailable(let error):
            Log.warning("disk cache: \(error); reading \(file.label) from Dropbox this time")
            return .unavailable
        }
    }

    /// Gives verified, completely written disk entries their final name (ReaderState.commitIfReady).
    func commit(_ entries: [(key: ContentKey, partial: DiskCache.Partial)]) {
        for (key, partial) in entries {
            guard let diskCache, !diskCache.commit(partial) else { continue }
            withState { s in
                guard case .complete(let file, _) = s.contents[key]?.disk.state, file === partial.file else { return }
                s.contents[key]?.disk.state = .none
            }
        }
    }

    /// Starts a disk cache entry for the content when a read begins at its start (or the file is
    /// small enough to be fetched whole): reads elsewhere in big files do not fill the cache.
    /// The entry's file is created on the disk queue, waited for at most `diskWait` (and not at all
    /// while the queue is stalled): without it the content is simply not cached this time.
    func startDiskEntryIfWanted(_ handle: UInt64, offset: UInt64) async throws(FilesystemError) {
        guard let diskCache else { return }
        let stalled = diskStall.isStalled
        let wanted = withState { s -> (key: ContentKey, name: String, size: UInt64)? in
            guard let file = s.handles[handle]?.file, case .hash(let hash) = file.key,
                let content = s.contents[file.key], !content.disk.tried, content.check.verification == .pending,
                offset < options.unitSize || content.size <= options.wholeFileLimit
            else { return nil }
            // A stalled disk is not tried: this content stays uncached (a later read that begins at
            // its start may try again), and is counted once.
            guard !stalled else {
                if !content.disk.bypassed { diskStall.noteBypass() }
                s.contents[file.key]?.disk.bypassed = true
                return nil
            }
            s.contents[file.key]?.disk.tried = true
            return (file.key, hash.hex, content.size)
        }
        guard let wanted else { return }
        let created = try await DiskWork.run(
            on: diskQueue, stall: diskStall, waitingAtMost: Self.diskWait, unclaimed: { if let late = $0 { diskCache.abandon(late) } }
        ) { diskCache.begin(key: wanted.name, size: wanted.size) }
        if created == nil { diskStall.noteBypass() }
        guard let partial = created ?? nil else { return }
        let installed = withState { s -> Bool in
            // Bytes that arrived before the entry existed would never be written: no entry then.
            guard let content = s.contents[wanted.key], case .none = content.disk.state, content.buffers.arrived.count == 0 else {
                return false
            }
            s.contents[wanted.key]?.disk.state = .partial(partial, present: UnitSet(capacity: content.buffers.arrived.capacity))
            return true
        }
        if !installed { diskCache.abandon(partial) }
    }

    /// On `diskQueue`: writes a part into the disk entry being filled, then commits the entry if
    /// that was its last missing part and the content is verified.
    func write(_ bytes: [UInt8], range: Range<UInt64>, segment id: UInt64, of file: PinnedFile, to partial: DiskCache.Partial) {
        let key = file.key
        let error = partial.file.write(bytes, at: range.lowerBound)
        if let error, diskCache?.refusesWrites(error) != true { Log.warning("disk cache: \(error); \(file.label) stays uncached") }
        withState { s in
            s.contents[key]?.buffers.segments[id]?.writing = false
            if error != nil {
                if s.contents[key]?.disk.partial?.path == partial.path { s.giveUpDisk(key) }
                return
            }
            if let grid = s.contents[key]?.grid { s.contents[key]?.disk.markWritten(grid.units(range), to: partial) }
            s.commitIfReady(key)
            s.dropIfIdle(key)  // a content closed while its last part was being written
        }
    }

    /// Checks a disk cache entry this process did not write against its content_hash before its
    /// first use; a damaged entry is deleted and the content downloaded again. The check runs once
    /// for all the reads that need it (SharedWork): an interrupted read stops waiting at once, and
    /// the check stops when no read waits for it any more (the entry stays unchecked, and the next
    /// read checks it again).
    func checkDiskEntry(_ handle: UInt64) async throws(FilesystemError) {
        let work = withState { s -> SharedWork<Void>? in
            guard let key = s.handles[handle]?.file.key, let content = s.contents[key],
                case .complete(let file, checked: false) = content.disk.state, let expected = content.check.expected
            else { return nil }
            if let running = content.disk.check, !running.isAbandoned { return running }
            let check = DiskCheck(key: key, file: file, size: content.size, expected: expected, label: content.label)
            let work = SharedWork<Void> { work in await self.runDiskCheck(check, as: work) }
            s.contents[key]?.disk.check = work
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
    /// counts on this check (`disk.check === work`).
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
            guard s.contents[check.key]?.disk.check === work else { return }
            s.contents[check.key]?.disk.check = nil
            if let sound {
                s.contents[check.key]?.disk.state = sound ? .complete(check.file, checked: true) : .none
                if sound {
                    s.contents[check.key]?.check.verification = .verified
                } else {
                    s.contents[check.key]?.disk.tried = false  // the download may write a new entry
                }
            }
            s.dropIfIdle(check.key)
        }
        return sound == nil ? .failure(.interrupted) : .success(())
    }
}
