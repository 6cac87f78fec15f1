// What dropboxfs wrote into the desktop's thumbnail cache, kept across mounts, so that
// `--thumbnail-cache-size` bounds the thumbnails of every mount of a profile together rather than
// each mount anew (the cache folder is shared with every other program and is never cleaned by
// us otherwise). The ledger is a text file in the profile's cache folder, one line per write or
// removal ("BYTES SEQUENCE SIZE/NAME", BYTES 0 for a removal), appended as thumbnails are written;
// loading keeps the last line of each name whose file is still there, and rewrites the file
// compactly when it has grown to more than twice what it describes. Past the cap, the least
// recently written thumbnails go first, each only if its file still carries our `Software`
// chunk: a thumbnail a file manager wrote over ours is its own, and is left alone (and forgotten).
//
// Used on the thumbnail writer's disk queue only; `state` (a Mutex) guards the entries and the
// sequence anyway, so the type is Sendable. No lock is held across file I/O other than the
// ledger's own appends.

import Log
import Synchronization
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

final class ThumbnailLedger: Sendable {
    struct Entry: Equatable, Sendable {
        var bytes: UInt64
        /// Order of writing: a higher one was written later.
        var sequence: UInt64
    }

    fileprivate struct State {
        /// "normal/<md5>.png" -> entry.
        var entries: [String: Entry] = [:]
        var total: UInt64 = 0
        var nextSequence: UInt64 = 1
        /// Lines in the file now (to know when to compact it).
        var lines = 0
        /// The ledger could not be written: it keeps counting in memory only.
        var broken = false
    }

    /// The ledger file; nil keeps it in memory only (one mount's writes, as before a ledger).
    let path: String?
    /// The thumbnail cache folder the names are relative to.
    private let thumbnails: String
    fileprivate let state = Mutex(State())
    private let loaded = Atomic<Bool>(false)

    init(path: String?, thumbnails: String) {
        self.path = path
        self.thumbnails = thumbnails
    }

    /// Reads the ledger (once, at its first use, on the disk queue: never while mounting, since
    /// the cache folder may be slow), dropping the names whose file is no longer there (the
    /// desktop cleaned them), and compacts it when worth it.
    fileprivate func load() {
        guard !loaded.exchange(true, ordering: .acquiringAndReleasing), let path else { return }
        var s = State()
        var lines = 0
        _ = forEachLine(ofFile: path) { text in
            lines += 1
            let line = text.hasSuffix("\n") ? text.dropLast() : Substring(text)
            let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, let bytes = UInt64(fields[0]), let sequence = UInt64(fields[1]),
                Self.isName(fields[2])
            else { return true }
            let name = String(fields[2])
            if let old = s.entries.removeValue(forKey: name) { s.total -= old.bytes }
            if bytes > 0 {
                s.entries[name] = Entry(bytes: bytes, sequence: sequence)
                s.total += bytes
            }
            s.nextSequence = max(s.nextSequence, sequence + 1)
            return true
        }
        for (name, entry) in s.entries where !Self.exists(thumbnails + "/" + name) {
            s.entries.removeValue(forKey: name)
            s.total -= entry.bytes
        }
        s.lines = lines
        let kept = s.entries.count
        state.withLock { $0 = s }
        if lines > 2 * kept + 64 { compact() }
    }

    /// A name the ledger may hold: a size folder and a file name, no other slash, no dots alone.
    static func isName(_ text: Substring) -> Bool {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, ThumbnailSize(rawValue: String(parts[0])) != nil else { return false }
        let file = parts[1]
        return !file.isEmpty && file != "." && file != ".." && !file.utf8.contains(0)
    }

    /// Bytes the ledger counts, as far as it is read (0 before its first use): for status lines,
    /// which must not wait for the disk.
    var loadedTotal: UInt64 { state.withLock { $0.total } }

    /// Bytes of thumbnails the ledger counts (every mount of the profile).
    var total: UInt64 {
        load()
        return state.withLock { $0.total }
    }

    var count: Int {
        load()
        return state.withLock { $0.entries.count }
    }

    /// The sequence the next write gets: entries from it on are newer than anything written yet.
    var nextSequence: UInt64 {
        load()
        return state.withLock { $0.nextSequence }
    }

    func entry(_ name: String) -> Entry? {
        load()
        return state.withLock { $0.entries[name] }
    }

    /// The entries to remove, oldest first, so that `bytes` more fit under `capacity` (the entry of
    /// `name` itself, which the write replaces, counted as gone); nil when that would need an entry
    /// of sequence `protectedFrom` or later (written for the folder being worked on), or when
    /// `bytes` alone exceed the capacity.
    func room(for bytes: UInt64, as name: String, capacity: UInt64, protectedFrom: UInt64) -> [String]? {
        load()
        return state.withLock { s in
            guard bytes <= capacity else { return nil }
            var used = s.total - (s.entries[name]?.bytes ?? 0)
            guard used + bytes > capacity else { return [] }
            let oldest = s.entries.filter { $0.key != name }.sorted { $0.value.sequence < $1.value.sequence }
            var chosen: [String] = []
            for (candidate, entry) in oldest {
                guard entry.sequence < protectedFrom else { return nil }
                chosen.append(candidate)
                used -= entry.bytes
                if used + bytes <= capacity { return chosen }
            }
            return nil
        }
    }

    /// Records that `name` now holds `bytes` of our thumbnail (0: it was removed or is not ours).
    func record(_ name: String, bytes: UInt64) {
        load()
        let line = state.withLock { s -> String? in
            let old = s.entries.removeValue(forKey: name)
            if let old { s.total -= old.bytes }
            guard bytes > 0 || old != nil else { return nil }
            let sequence = s.nextSequence
            s.nextSequence += 1
            if bytes > 0 {
                s.entries[name] = Entry(bytes: bytes, sequence: sequence)
                s.total += bytes
            }
            s.lines += 1
            return s.broken ? nil : "\(bytes) \(sequence) \(name)\n"
        }
        if let line { append(line) }
    }

    private func append(_ line: String) {
        guard let path else { return }
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return fail("open \(path)", errno) }
        defer { close(fd) }
        let bytes = Array(line.utf8)
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
        if n != bytes.count { fail("write \(path)", n < 0 ? errno : EIO) }
    }

    /// Rewrites the ledger with one line per entry (a new file renamed over the old one).
    private func compact() {
        guard let path else { return }
        let (text, count) = state.withLock { s -> (String, Int) in
            let lines = s.entries.sorted { $0.value.sequence < $1.value.sequence }
                .map { "\($0.value.bytes) \($0.value.sequence) \($0.key)\n" }
            return (lines.joined(), lines.count)
        }
        let temporary = path + ".new-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return fail("create \(temporary)", errno) }
        let bytes = Array(text.utf8)
        let n = bytes.isEmpty ? 0 : bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
        close(fd)
        guard n == bytes.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            return fail("rewrite \(path)", errno)
        }
        state.withLock { $0.lines = count }
    }

    private func fail(_ operation: String, _ code: Int32) {
        let first = state.withLock { s -> Bool in
            defer { s.broken = true }
            return !s.broken
        }
        if first {
            Log.warning("thumbnails: \(operation): \(String(cString: strerror(code))); the cap now counts this mount's thumbnails only")
        }
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }
}

/// The thumbnails a profile's mounts wrote, for `dropboxfs auth --sign-out --purge`.
public enum WrittenThumbnails {
    /// Removes every thumbnail the ledger at `path` records that still carries dropboxfs's
    /// `Software` chunk (in the thumbnail cache `thumbnails`), then the ledger itself; returns
    /// how many files and bytes went (`dropboxfs auth --sign-out --purge`).
    public static func purge(path: String, thumbnails: String) -> (files: Int, bytes: UInt64) {
        let ledger = ThumbnailLedger(path: path, thumbnails: thumbnails)
        ledger.load()
        let entries = ledger.state.withLock { $0.entries }
        var removed = (files: 0, bytes: UInt64(0))
        for (name, entry) in entries {
            let parts = name.split(separator: "/")
            let cache = ThumbnailCache(folder: thumbnails + "/" + parts[0])
            if cache.removeIfOurs(String(parts[1])) {
                removed.files += 1
                removed.bytes += entry.bytes
            }
        }
        unlink(path)
        return removed
    }
}
