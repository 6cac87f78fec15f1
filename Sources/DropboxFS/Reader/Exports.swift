// Export-only documents (Dropbox Paper, Google Docs/Sheets/Slides stored in Dropbox): Dropbox lists
// them with `is_downloadable` false and can only convert them (files/export). Opening one exports
// it whole, in the format Dropbox names for it (`export_info.export_as`: Markdown or HTML for Paper,
// docx/xlsx/pptx for Google documents), and the handle reads those bytes. The name stays the one
// Dropbox shows. The size Dropbox lists is not the export's, so the handle bypasses the page cache
// (direct_io: the kernel never cuts a read at the listed size), and once an export's size is known
// the tree reports it for that revision and the kernel's attributes are invalidated.
// docs/SEMANTICS.md, "Export-only documents".
//
// One export per (document, revision), shared: opens of a document while its export is under way
// wait for that one request, and every handle on a revision reads the same bytes. Bytes held in
// memory count in the read-buffer cap (`--read-buffer-memory`) through the reader's reservation,
// so exports and read buffers share one bound; an export that does not fit (or is larger than
// `spillSize`) is written to an unlinked file in the disk cache folder and read from there, and
// lives only while a handle is open. Closed exports held in memory stay, least recently used
// first out, up to `keepClosed` bytes, so a document opened again (a file manager's preview, a
// script that opens it a thousand times) costs no request. Without a disk cache, an export that
// does not fit is held anyway, counted over the cap as a read's demanded bytes are.
//
// Locking: `state` guards the exports, their claims and the handles; `graveyard` the spill files
// waiting to be closed off the caller's thread. Neither is held across an await,
// nor while the reader's lock is taken (reservations are made and returned outside it). A
// `SharedWork` is created under it (its own lock is a leaf). What the exports use of the reader
// (its memory cap, its warnings per inode) is at the end, under the reader's lock.

import Dispatch
import DropboxAPI
import Log
import Synchronization

final class ExportedDocuments: Sendable {
    /// Export handles are numbered from here, apart from the file reader's.
    static let firstHandle: UInt64 = 1 << 62

    /// A document at one revision: one export serves every open of it.
    struct Key: Hashable, Sendable {
        /// The document's id (its path when Dropbox gave no id).
        let source: String
        let rev: String
    }

    /// Where an export's bytes are.
    enum Bytes: Sendable {
        case memory([UInt8])
        case file(ExportSpillFile)

        var count: UInt64 {
            switch self {
            case .memory(let bytes): UInt64(bytes.count)
            case .file(let file): file.size
            }
        }
    }

    private struct Entry {
        /// The export under way (nil once its bytes are here).
        var work: SharedWork<Bytes>?
        var bytes: Bytes?
        /// Bytes reserved in the reader's cap for `bytes` (0 for a spilled export).
        var reserved: UInt64 = 0
        /// Open handles plus opens waiting for the export: an export with claims is never dropped.
        var claims = 0
        var lastUse: UInt64 = 0
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var handles: [UInt64: Key] = [:]
        var next = ExportedDocuments.firstHandle
        var tick: UInt64 = 0
        /// Exports started (files/export requests made), for tests and the status line.
        var started = 0

        mutating func nextTick() -> UInt64 {
            tick += 1
            return tick
        }

        /// Drops closed exports held in memory, least recently used first, until those left hold
        /// at most `limit` bytes; returns the reservations to give back.
        mutating func trimClosed(to limit: UInt64) -> UInt64 {
            var closed = entries.filter { $0.value.claims == 0 && $0.value.bytes != nil }
            var held = closed.values.reduce(0) { $0 + ($1.bytes?.count ?? 0) }
            var freed: UInt64 = 0
            while held > limit, let oldest = closed.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                closed.removeValue(forKey: oldest.key)
                entries.removeValue(forKey: oldest.key)
                held -= oldest.value.bytes?.count ?? 0
                freed += oldest.value.reserved
            }
            return freed
        }
    }

    private let state = Mutex(State())
    /// Spill files let go of, until `closer` closes them (closeLater).
    private let graveyard = Mutex<[ExportSpillFile]>([])
    private let closer = DispatchQueue(label: "dropboxfs.export-files")
    private let reader: FileReader?
    private let spillDirectory: String?
    /// Exports larger than this go to a spill file whenever there is a disk cache.
    let spillSize: UInt64
    /// Bytes of closed exports kept in memory for the next open.
    let keepClosed: UInt64

    /// `reader`: whose memory cap the exports held in memory count in (nil: uncounted, for tests
    /// of the table alone). `spillDirectory`: the disk cache folder, nil without a disk cache.
    init(reader: FileReader?, spillDirectory: String?, spillSize: UInt64 = 16 << 20, keepClosed: UInt64 = 32 << 20) {
        self.reader = reader
        self.spillDirectory = spillDirectory
        self.spillSize = spillSize
        self.keepClosed = keepClosed
    }

    func owns(_ handle: UInt64) -> Bool { handle >= Self.firstHandle }

    private enum Step {
        case opened(UInt64)
        case wait(SharedWork<Bytes>)
    }

    /// A handle on the export of `key`: the one held or under way, or a new one made by `export`
    /// (which reports its own failures; it runs once for all the opens that wait for it).
    func open(
        _ key: Key, export: @escaping @Sendable () async throws(FilesystemError) -> [UInt8]
    ) async throws(FilesystemError) -> UInt64 {
        while true {
            let step = state.withLock { s -> Step in
                var entry = s.entries[key] ?? Entry()
                entry.claims += 1
                entry.lastUse = s.nextTick()
                defer { s.entries[key] = entry }
                if entry.bytes != nil {
                    let handle = s.next
                    s.next += 1
                    s.handles[handle] = key
                    return .opened(handle)
                }
                if let work = entry.work, !work.isAbandoned { return .wait(work) }
                let work = SharedWork<Bytes> { [self] work in await self.fetch(key, work: work, export: export) }
                entry.work = work
                s.started += 1
                return .wait(work)
            }
            let work: SharedWork<Bytes>
            switch step {
            case .opened(let handle): return handle
            case .wait(let waited): work = waited
            }
            let found: Bytes?
            do {
                found = try await work.value()
            } catch {
                unclaim(key)
                throw error
            }
            guard found != nil else {
                // Abandoned by opens that were interrupted before this one came: export again.
                unclaim(key)
                continue
            }
            // `fetch` stored the bytes before the work ended, and this open's claim kept them.
            let handle = state.withLock { s -> UInt64? in
                guard s.entries[key]?.bytes != nil else { return nil }
                let handle = s.next
                s.next += 1
                s.handles[handle] = key
                return handle
            }
            if let handle { return handle }
            unclaim(key)
        }
    }

    /// Runs the export and places its bytes (memory within the reader's cap, or a spill file),
    /// stores them for the waiting opens, and drops what the cap no longer allows.
    private func fetch(
        _ key: Key, work: SharedWork<Bytes>, export: @Sendable () async throws(FilesystemError) -> [UInt8]
    ) async -> Result<Bytes, FilesystemError> {
        let data: [UInt8]
        do {
            data = try await export()
        } catch {
            state.withLock { s in
                guard var entry = s.entries[key], entry.work === work else { return }
                entry.work = nil
                s.entries[key] = entry.claims == 0 ? nil : entry
            }
            return .failure(error)
        }
        let (bytes, reserved) = place(data)
        let stored = state.withLock { s -> Bool in
            guard var entry = s.entries[key], entry.work === work, entry.bytes == nil else { return false }
            entry.work = nil
            entry.bytes = bytes
            entry.reserved = reserved
            s.entries[key] = entry
            return true
        }
        // Nobody waits for these bytes any more (every open was interrupted): give them back.
        if !stored { reader?.releaseOutsideBuffers(reserved) }
        return .success(bytes)
    }

    /// Memory when the reader's cap makes room for the bytes; else a spill file; else memory
    /// counted over the cap. Returns the bytes and what was reserved for them.
    private func place(_ data: [UInt8]) -> (Bytes, UInt64) {
        let size = UInt64(data.count)
        if size <= spillSize || spillDirectory == nil {
            if reader?.reserveOutsideBuffers(size, demand: false) ?? true { return (.memory(data), reader == nil ? 0 : size) }
        }
        if let spillDirectory {
            switch ExportSpillFile.write(data, in: spillDirectory) {
            case .success(let file): return (.file(file), 0)
            case .failure(let error):
                Log.warning("an export of \(size) bytes could not be written to \(spillDirectory) (\(error)); holding it in memory")
            }
        }
        _ = reader?.reserveOutsideBuffers(size, demand: true)
        return (.memory(data), reader == nil ? 0 : size)
    }

    /// An open that got no handle lets go of its claim; an export nobody claims and that never
    /// arrived is forgotten (a later open exports again).
    private func unclaim(_ key: Key) {
        state.withLock { s in
            guard var entry = s.entries[key] else { return }
            entry.claims -= 1
            s.entries[key] = entry.claims == 0 && entry.bytes == nil ? nil : entry
        }
    }

    /// The size of the export a handle reads, or nil for an unknown handle.
    func size(_ handle: UInt64) -> UInt64? {
        state.withLock { s in s.handles[handle].flatMap { s.entries[$0]?.bytes?.count } }
    }

    /// Up to `size` bytes at `offset`; fewer only at the end of the export.
    func read(_ handle: UInt64, offset: UInt64, size: Int) throws(FilesystemError) -> [UInt8] {
        enum Found {
            case slice([UInt8])
            case file(ExportSpillFile)
        }
        let found = state.withLock { s -> Found? in
            guard let key = s.handles[handle], let bytes = s.entries[key]?.bytes else { return nil }
            switch bytes {
            case .memory(let all):
                guard offset < UInt64(all.count) else { return .slice([]) }
                let start = Int(offset)
                return .slice(Array(all[start..<min(all.count, start + max(0, size))]))
            case .file(let file):
                return .file(file)
            }
        }
        switch found {
        case nil: throw .badHandle
        case .slice(let bytes): return bytes
        case .file(let file):
            // The file is kept open by this reference even if its last handle closes meanwhile.
            switch file.read(offset: offset, size: size) {
            case .success(let bytes): return bytes
            case .failure(let error):
                Log.warning("a spilled export could not be read (\(error))")
                throw .local(.diskCache(operation: error.operation, errno: error.code))
            }
        }
    }

    func release(_ handle: UInt64) {
        let (freed, closed) = state.withLock { s -> (UInt64, ExportSpillFile?) in
            guard let key = s.handles.removeValue(forKey: handle), var entry = s.entries[key] else { return (0, nil) }
            entry.claims -= 1
            if entry.claims == 0, case .file(let file) = entry.bytes {
                // A spilled export lives while it is open; its file goes with its last reference.
                s.entries.removeValue(forKey: key)
                return (0, file)
            }
            s.entries[key] = entry
            return (s.trimClosed(to: keepClosed), nil)
        }
        if freed > 0 { reader?.releaseOutsideBuffers(freed) }
        if let closed { closeLater(closed) }
    }

    /// Lets the last reference to a spill file go on `closer`, not on the caller's thread (release
    /// runs on the FUSE thread, and closing a file on a disk that stopped answering can wait): the
    /// graveyard keeps a reference until the queue takes it, so the caller's is never the last.
    private func closeLater(_ file: ExportSpillFile) {
        graveyard.withLock { $0.append(file) }
        closer.async { [self] in
            let dead = graveyard.withLock { files -> [ExportSpillFile] in
                defer { files = [] }
                return files
            }
            _ = dead
        }
    }

    var openCount: Int { state.withLock { $0.handles.count } }

    /// Open handles and waiting opens on the export of `key`.
    func claimCount(_ key: Key) -> Int { state.withLock { $0.entries[key]?.claims ?? 0 } }

    /// Exports started so far (each one files/export request).
    var startedCount: Int { state.withLock { $0.started } }

    /// Exports held now: in memory (open or kept closed) and spilled to files.
    var heldCounts: (memory: Int, memoryBytes: UInt64, spilled: Int) {
        state.withLock { s in
            var counts = (memory: 0, memoryBytes: UInt64(0), spilled: 0)
            for entry in s.entries.values {
                switch entry.bytes {
                case .memory(let bytes)?:
                    counts.memory += 1
                    counts.memoryBytes += UInt64(bytes.count)
                case .file?: counts.spilled += 1
                case nil: break
                }
            }
            return counts
        }
    }
}

extension FileReader {
    /// Counts `bytes` held outside the read buffers (an export kept in memory) in the memory cap,
    /// dropping buffers to make room. Without `demand` it fails when the room cannot be made; with
    /// it, it counts the bytes even above the cap.
    func reserveOutsideBuffers(_ bytes: UInt64, demand: Bool) -> Bool {
        state.withLock { $0.reserve(bytes, limit: options.memoryLimit, demand: demand) }
    }

    /// Gives back what `reserveOutsideBuffers` counted.
    func releaseOutsideBuffers(_ bytes: UInt64) {
        state.withLock { $0.memoryUsed -= bytes }
    }

    /// Logs, once per inode while the kernel holds it, that an export-only document could not be
    /// exported.
    func warnNotExported(inode: UInt64, path: String, because error: DropboxError) {
        guard state.withLock({ $0.warnedNotDownloadable.insert(inode).inserted }) else { return }
        Log.warning("\(path): Dropbox could not export this document (\(error)); opening it fails")
    }
}
