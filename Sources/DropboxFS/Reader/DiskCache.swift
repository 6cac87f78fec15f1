// The on-disk content cache: complete files named by their content_hash (64 hex digits) in one
// folder (mode 0700, files 0600), with a size cap and least-recently-used eviction that survives a
// remount, because "last used" is the file's mtime, set at each use.
//
// A download writes into a private temporary file (".partial-<pid>-<n>") that is renamed to its
// final name only after its bytes matched the content_hash, so a crash never leaves a truncated
// file under a final name; temporary files of dead processes are deleted at start. An entry this
// process did not write is checked against its hash again before its first use (FileReader does
// that, then calls markChecked or discard), since a power loss may leave a renamed file whose data
// never reached the disk. Files without a content_hash are never cached: nothing could check them.
//
// An entry is deleted only on evidence that it is bad: it is missing, is not a file, has another
// size, or failed its check. An open that fails for a reason that says nothing of the entry (too
// many open files, no memory, no permission) leaves it in place: that use goes without it.
//
// A cache folder on a disk that stops answering (NFS whose server is gone, a stuck USB disk) must
// not stop the mount: opening an entry (`entry`) is called on the disk queue only (FileReader
// answers such an open later), and touching an entry (its "last used" mtime) and deleting an entry
// or a temporary file are queued there (`queue`), whatever thread asks; the index is updated at
// once. The queue is serial, so an entry's deletion and a later commit under the same name keep
// their order.
//
// Entries of pinned files ("available offline", Offline/OfflineKeeper.swift) are never evicted:
// their bytes count against the cap like downloads in progress, and only other entries make room.
//
// Locking: `state` guards the index of entries, the bytes reserved by downloads in progress, the
// set of checked keys and the set of pinned keys. No file I/O happens while it is held. `openEntry` has its own lock, held
// only to read or replace the function.

import Dispatch
import DropboxAPI
import Log
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

final class DiskCache: Sendable {
    /// A download in progress into a temporary file.
    struct Partial: Sendable {
        let key: String
        let size: UInt64
        let path: String
        let file: CacheFile
    }

    private struct Entry {
        var size: UInt64
        var lastUsed: Int64
    }

    private struct State {
        var entries: [String: Entry]
        /// Bytes promised to downloads in progress.
        var reserved: UInt64 = 0
        var nextTemporary: UInt64 = 0
        /// Keys whose file matched its content_hash, or was written from checked bytes, in this process.
        var checked: Set<String> = []
        /// The folder's disk refused a write (read-only, full, over quota): no new entry is started.
        var writesOff = false
        /// Keys of pinned contents: never evicted.
        var pinned: Set<String> = []

        /// The entries eviction may choose from, and the bytes of pinned entries, which count
        /// like reservations.
        func evictable() -> (entries: [EvictionOrder.CacheEntry], pinnedBytes: UInt64) {
            var pinnedBytes: UInt64 = 0
            var entries: [EvictionOrder.CacheEntry] = []
            for (key, entry) in self.entries {
                if pinned.contains(key) {
                    pinnedBytes += entry.size
                } else {
                    entries.append(EvictionOrder.CacheEntry(key: key, size: entry.size, lastUsed: entry.lastUsed))
                }
            }
            return (entries, pinnedBytes)
        }
    }

    static let temporaryPrefix = ".partial-"

    let directory: String
    let capacity: UInt64
    /// The disk queue (FileReader.diskQueue): where the file system calls that may wait run.
    let queue: DispatchQueue
    private let state: Mutex<State>
    /// How an entry is opened for reading: CacheFolder.openForReading, which tests replace to make
    /// the open fail as a busy system does (too many open files, no memory). Wrapped: a bare closure
    /// in a Mutex grows a thunk at every read (StoredClosure.swift).
    let openEntry = Mutex(StoredClosure<@Sendable (String) -> Result<CacheFile, CacheIOError>>(CacheFolder.openForReading))

    private init(directory: String, capacity: UInt64, entries: [String: Entry], pinned: Set<String>, queue: DispatchQueue) {
        self.directory = directory
        self.capacity = capacity
        self.queue = queue
        self.state = Mutex(State(entries: entries, pinned: pinned))
    }

    /// Opens the cache folder (creating it), forgets temporary files of dead processes and trims
    /// the entries to the capacity, keeping the `pinned` keys. Nil, with a warning, when the folder
    /// cannot be used.
    static func open(_ options: DiskCacheOptions, pinned: Set<String> = [], queue: DispatchQueue) -> DiskCache? {
        if let error = CacheFolder.makeDirectories(options.directory) {
            Log.warning("disk cache disabled: \(error)")
            return nil
        }
        let items: [CacheFolder.Item]
        switch CacheFolder.items(in: options.directory) {
        case .success(let found): items = found
        case .failure(let error):
            Log.warning("disk cache disabled: \(error)")
            return nil
        }
        var entries: [String: Entry] = [:]
        for item in items {
            if let pid = temporaryOwner(item.name) {
                if !CacheFolder.processExists(pid) { CacheFolder.remove(options.directory + "/" + item.name) }
            } else if isKey(item.name) {
                entries[item.name] = Entry(size: item.size, lastUsed: item.modified)
            }
        }
        let cache = DiskCache(
            directory: options.directory, capacity: options.capacity, entries: entries, pinned: pinned, queue: queue)
        cache.trim()
        return cache
    }

    /// What `entry` found.
    enum Lookup {
        /// The entry, open, and whether it was checked in this process.
        case hit(CacheFile, checked: Bool)
        /// No entry: none is known, or the one known was missing or not of the size asked for,
        /// and is forgotten (and deleted).
        case miss
        /// The entry could not be opened now, for a reason that says nothing of it: it is kept.
        case unavailable(CacheIOError)
    }

    /// Whether an entry for `key` is known: opening it is disk work (`entry`, on the disk queue).
    func knows(key: String) -> Bool {
        state.withLock { $0.entries[key] != nil }
    }

    /// The complete entry for `key` when one of exactly `size` bytes exists, and whether it was
    /// checked in this process. Marks it used. Called on the disk queue only: the open may wait.
    func entry(key: String, size: UInt64) -> Lookup {
        dispatchPrecondition(condition: .onQueue(queue))
        guard state.withLock({ $0.entries[key] != nil }) else { return .miss }
        let open = openEntry.withLock { $0.call }
        let file: CacheFile
        switch open(path(of: key)) {
        case .success(let opened):
            file = opened
        case .failure(let error):
            guard Self.showsEntryIsBad(error.code) else { return .unavailable(error) }
            discard(key: key)
            return .miss
        }
        switch file.size {
        case .success(size):
            break
        case .success:
            discard(key: key)  // cut short, or not this content
            return .miss
        case .failure(let error):
            return .unavailable(error)
        }
        file.touch()
        let now = CacheFolder.now()
        return state.withLock { s in
            s.entries[key]?.lastUsed = now
            return .hit(file, checked: s.checked.contains(key))
        }
    }

    /// Whether an open of an entry that failed with `code` shows the entry itself is bad: nothing
    /// is there, or no regular file. EMFILE, ENFILE, ENOMEM, EACCES, EIO and the like say
    /// something of the process or the system, not of the entry, and may be gone at the next open.
    static func showsEntryIsBad(_ code: Int32) -> Bool {
        code == ENOENT || code == EISDIR || code == ELOOP || code == ENXIO
    }

    /// Marks an entry in use used again (it moves to the back of the eviction order); its mtime is
    /// set on the disk queue.
    func markUsed(key: String, file: CacheFile) {
        queue.async { file.touch() }
        let now = CacheFolder.now()
        state.withLock { $0.entries[key]?.lastUsed = now }
    }

    /// Records that the entry for `key` matched its content_hash.
    func markChecked(key: String) {
        _ = state.withLock { $0.checked.insert(key) }
    }

    /// Deletes the entry for `key` (it was unreadable or did not match its hash): forgotten now,
    /// deleted on the disk queue.
    func discard(key: String) {
        state.withLock { s in
            s.entries[key] = nil
            s.checked.remove(key)
        }
        removeLater(path(of: key))
    }

    /// Starts a download of `size` bytes for `key`, evicting least recently used entries to make
    /// room; nil when it cannot fit or the temporary file cannot be created.
    func begin(key: String, size: UInt64) -> Partial? {
        guard !state.withLock({ $0.writesOff }) else { return nil }
        let plan = state.withLock { s -> (victims: [String], number: UInt64)? in
            let (entries, pinnedBytes) = s.evictable()
            guard
                let victims = EvictionOrder.cacheEntriesToEvict(
                    entries, reserved: s.reserved + pinnedBytes, incoming: size, capacity: capacity)
            else { return nil }
            for victim in victims {
                s.entries[victim] = nil
                s.checked.remove(victim)
            }
            s.reserved += size
            s.nextTemporary += 1
            return (victims, s.nextTemporary)
        }
        guard let plan else {
            Log.debug("disk cache: no room for \(size) bytes beside the downloads being written; not cached")
            return nil
        }
        for victim in plan.victims { removeLater(path(of: victim)) }
        let temporary = directory + "/" + Self.temporaryPrefix + "\(CacheFolder.processID)-\(plan.number)"
        switch CacheFolder.create(temporary) {
        case .success(let file):
            return Partial(key: key, size: size, path: temporary, file: file)
        case .failure(let error):
            state.withLock { $0.reserved -= size }
            if !refusesWrites(error) { Log.warning("disk cache: \(error)") }
            return nil
        }
    }

    /// Whether `error` says the folder's disk takes no writes (read-only, full, over quota): then,
    /// with one warning, no new entry is started in this mount (entries already there still serve).
    /// True for such an error, also when writes were off already.
    @discardableResult
    func refusesWrites(_ error: CacheIOError) -> Bool {
        guard error.code == EROFS || error.code == ENOSPC || error.code == EDQUOT else { return false }
        let first = state.withLock { s -> Bool in
            defer { s.writesOff = true }
            return !s.writesOff
        }
        if first { Log.warning("disk cache: \(error); no new contents are cached by this mount") }
        return true
    }

    /// Gives a finished download, whose bytes matched the content_hash, its final name.
    func commit(_ partial: Partial) -> Bool {
        if let error = CacheFolder.rename(partial.path, to: path(of: partial.key)) {
            Log.warning("disk cache: \(error)")
            abandon(partial)
            return false
        }
        partial.file.touch()
        let now = CacheFolder.now()
        state.withLock { s in
            s.reserved -= partial.size
            s.entries[partial.key] = Entry(size: partial.size, lastUsed: now)
            s.checked.insert(partial.key)
        }
        return true
    }

    /// Deletes an unfinished download (on the disk queue) and frees its reservation.
    func abandon(_ partial: Partial) {
        removeLater(partial.path)
        state.withLock { $0.reserved -= partial.size }
    }

    /// Deletes `path` on the disk queue: an unlink in a folder that stopped answering waits.
    private func removeLater(_ path: String) {
        queue.async { CacheFolder.remove(path) }
    }

    /// Bytes of complete entries and of downloads in progress.
    var usedBytes: UInt64 {
        state.withLock { s in s.reserved + s.entries.values.reduce(0) { $0 + $1.size } }
    }

    private func trim() {
        let victims = state.withLock { s -> [String] in
            let (entries, pinnedBytes) = s.evictable()
            let victims =
                EvictionOrder.cacheEntriesToEvict(entries, reserved: pinnedBytes, incoming: 0, capacity: capacity) ?? []
            for victim in victims { s.entries[victim] = nil }
            return victims
        }
        for victim in victims { CacheFolder.remove(path(of: victim)) }
    }

    private func path(of key: String) -> String { directory + "/" + key }

    // MARK: pinned entries

    /// Sets the keys that are never evicted (the contents of pinned files).
    func setPinned(_ keys: Set<String>) {
        state.withLock { $0.pinned = keys }
    }

    /// Of `keys`, those with a complete entry.
    func present(_ keys: Set<String>) -> Set<String> {
        state.withLock { s in keys.filter { s.entries[$0] != nil } }
    }

    /// Bytes free for this user on the disk of the cache folder; nil when it cannot be asked.
    func freeBytes() -> UInt64? {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }

    /// The process id in a temporary file's name, or nil for any other name.
    private static func temporaryOwner(_ name: String) -> Int32? {
        guard name.hasPrefix(temporaryPrefix) else { return nil }
        let rest = name.dropFirst(temporaryPrefix.count)
        guard let dash = rest.firstIndex(of: "-") else { return nil }
        return Int32(rest[..<dash])
    }

    private static func isKey(_ name: String) -> Bool {
        name.utf8.count == 64
            && name.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }
}
