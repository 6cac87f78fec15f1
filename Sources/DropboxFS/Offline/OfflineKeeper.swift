// "Available offline": folders (or files) the user pinned have their files' contents kept in the disk
// cache, downloaded in the background, never evicted, and downloaded again when Dropbox changes
// them, so they read offline like any cached file (docs/SEMANTICS.md, "Available offline").
//
// The keeper owns the list of pins (stored with the tree, Store/TreeStore+Pins.swift) and works in
// passes: a pass reads what the pins cover in the tree as it stands (PinPlan), tells the disk cache
// which keys are pinned (DiskCache.setPinned), and downloads each wanted content that has no entry
// yet, in ranged pieces of `pieceSize` bytes of the revision the tree names (at most `concurrency`
// files at a time, of which at most `bigConcurrency` larger than `smallFile`: many small files need
// many requests at once to hide the latency, big ones fill the link with few, and the bytes in
// flight stay under 4 pieces and 12 small files, 28 MiB), hashing as it writes into a disk cache temporary file that is committed only when the
// whole file matched its content_hash (as every disk cache entry). A pass runs when the pins change
// and after the tree changed (the change feed applies Dropbox's changes to the tree, whose change
// count the loop watches); a content that failed waits `retryAfter` before it is tried again. No
// download is started while the mount is offline. The downloads go through the pacer's
// read-ahead lane, so a program's own reads never queue behind a pin filling in the background.
//
// The keeper never takes the reader's lock: it only adds complete entries to the disk cache, which
// the reader finds at the next open. A file read while its pin's download runs is simply
// downloaded by the reader too (the disk cache keeps the first complete entry).
//
// Locking: `pinRequests` serialises pin requests (taken first, by `pin` only). `state` guards the
// pins, the last walk's coverage and what it was made for, the failures and the downloads in flight. It is never held
// across an await, a download, disk I/O or the tree's lock (the tree is read first, then `state`
// taken).

import Dispatch
import DropboxAPI
import Log
import Synchronization

final class OfflineKeeper: Sendable {
    struct Failure: Sendable {
        var message: String
        var at: Double
    }

    struct State {
        var pins: [String]
        /// The Dropbox id of the entry each pin named when it was made ("" or absent: not known),
        /// so the pin follows the entry when Dropbox moves it (`followMoves`).
        var ids: [String: String] = [:]
        /// What each pin covered when it was last worked out, and the tree's change count and
        /// the pins then (`currentCoverage`): while neither moved, it is still what they cover.
        var coverage: [PinCoverage] = []
        var coverageStamp: (changes: UInt64, pins: [String])?
        /// Walks of the pinned subtrees so far (for tests: a status read of a tree that did not
        /// change makes none).
        var coverageWalks = 0
        /// Contents whose last download failed, by key.
        var failures: [String: Failure] = [:]
        /// Keys being downloaded now.
        var downloading: Set<String> = []
        /// The pins changed since the last pass.
        var dirty = true
        /// The tree's change count at the last pass.
        var seenChanges: UInt64 = .max
        /// When the last pass started (monotonic seconds).
        var lastPass: Double = -.infinity
        var running: Task<Void, Never>?
        var stopped = false

        /// Adds a pin of `path` (the entry `id`), which takes in the pins inside it; the pins stay
        /// sorted.
        mutating func addPin(_ path: String, id: String) {
            for inner in pins where PinPlan.covers(path, inner) { ids[inner] = nil }
            pins.removeAll { PinPlan.covers(path, $0) }
            pins.append(path)
            pins.sort()
            ids[path] = id
        }
    }

    let tree: LiveTree
    let diskCache: DiskCache?
    let client: any DropboxClient
    let connectivity: Connectivity
    let store: TreeStore?
    /// Where the disk cache's writes run (FileReader.diskQueue): never on Swift's small pool.
    let diskQueue: DispatchQueue
    let state: Mutex<State>
    /// Held for the whole of one pin request (its space check and its insertion), so two pins
    /// made at once cannot both pass the check; taken before any other lock, by `pin` only.
    let pinRequests = Mutex(0)
    /// Files downloaded at once, and of those, files larger than `smallFile`.
    let concurrency = 16
    let bigConcurrency = 4
    let smallFile: UInt64 = 1 << 20
    let pieceSize: UInt64 = 4 << 20
    let retryAfter = 30.0
    /// A pass runs at least this often, also with nothing changed: it finds a pinned entry the
    /// reader found damaged and deleted, or one deleted by hand, and downloads it again.
    let passEvery = 60.0
    let monotonicNow: @Sendable () -> Double
    /// Lists one folder (SyncEngine.ensureListed): folders below a pin that no listing filled yet
    /// (the whole-account listing is off or not done) are listed by the keeper.
    let listFolder: @Sendable (UInt32) async -> Void
    /// Folders listed per pass at most.
    let listingsPerPass = 16

    init(
        pins: [String], ids: [String: String] = [:], tree: LiveTree, diskCache: DiskCache?, client: any DropboxClient, connectivity: Connectivity,
        store: TreeStore?, diskQueue: DispatchQueue, monotonicNow: @escaping @Sendable () -> Double,
        listFolder: @escaping @Sendable (UInt32) async -> Void = { _ in }
    ) {
        self.listFolder = listFolder
        self.tree = tree
        self.diskCache = diskCache
        self.client = client
        self.connectivity = connectivity
        self.store = store
        self.diskQueue = diskQueue
        self.monotonicNow = monotonicNow
        self.state = Mutex(State(pins: pins, ids: ids))
    }

    /// The keys of the contents `pins` cover in `tree`, for the disk cache's trim at open.
    static func pinnedKeys(_ pins: [String], in tree: MetadataTree) -> Set<String> {
        Set(pins.flatMap { PinPlan.coverage(of: $0, in: tree).files.map(\.key) })
    }

    var pins: [String] { state.withLock { $0.pins } }

    /// Moves each pin whose entry Dropbox moved or renamed (its path shows another entry or none,
    /// and its id is found elsewhere in the tree) to the entry's new path, stores the pins and logs
    /// it. A pin whose entry is gone stays (shown as missing) until the user unpins it. A pin that
    /// lands inside another pin is absorbed by it; pins inside the new path are absorbed by it. A
    /// pin stored without an id (by a dropboxfs that kept none), or whose entry is gone while
    /// another took its path, learns the id of the entry at its path.
    func followMoves() {
        let (pins, ids) = state.withLock { ($0.pins, $0.ids) }
        typealias Found = (moves: [(from: String, to: String, id: String)], learned: [String: String])
        let found = tree.read { t -> Found in
            var result: Found = ([], [:])
            for path in pins {
                let at = PinPlan.index(of: path, in: t.tree)
                let atID = at.flatMap { t.tree.node($0)?.id } ?? ""
                guard let id = ids[path], !id.isEmpty else {
                    if !atID.isEmpty { result.learned[path] = atID }
                    continue
                }
                if atID == id { continue }
                guard let moved = t.tree.index(ofID: id) else {
                    // Its entry is gone; another one took its path: the pin keeps the path, and
                    // knows the new entry (so later passes need not look for the old one).
                    if !atID.isEmpty { result.learned[path] = atID }
                    continue
                }
                let now = t.tree.path(of: moved)
                result.moves.append((path, now.isEmpty ? "/" : now, id))
            }
            return result
        }
        guard !found.moves.isEmpty || !found.learned.isEmpty else { return }
        let stored = state.withLock { s -> (pins: [String], ids: [String: String]) in
            for (path, id) in found.learned where s.pins.contains(path) && s.ids[path] == ids[path] { s.ids[path] = id }
            for move in found.moves {
                guard let at = s.pins.firstIndex(of: move.from) else { continue }
                s.pins.remove(at: at)
                s.ids[move.from] = nil
                if s.pins.contains(where: { PinPlan.covers($0, move.to) }) { continue }
                s.addPin(move.to, id: move.id)
            }
            if !found.moves.isEmpty { s.dirty = true }
            return (s.pins, s.ids)
        }
        store?.storePins(stored.pins, ids: stored.ids)
        for move in found.moves {
            Log.info("available offline: \(Log.quoted(move.from)) was moved on Dropbox to \(Log.quoted(move.to)); its pin follows it")
        }
    }

    // MARK: the loop

    /// Starts the background passes (at mount, with the sync engine).
    func start() {
        guard diskCache != nil else { return }
        let task = Task.detached(priority: .utility) { [self] in
            while !Task.isCancelled {
                // While offline nothing is marked done: the pass runs once Dropbox is back.
                if !connectivity.isOffline {
                    let changes = tree.changeCount.load(ordering: .relaxed)
                    let now = monotonicNow()
                    let due = state.withLock { s -> Bool in
                        let due = s.dirty || s.seenChanges != changes || !s.failures.isEmpty || now - s.lastPass >= passEvery
                        if due {
                            s.dirty = false
                            s.seenChanges = changes
                            s.lastPass = now
                        }
                        return due
                    }
                    if due, await !keepOnce() { state.withLock { $0.dirty = true } }
                }
                try? await Task.sleep(for: .milliseconds(300))
            }
        }
        state.withLock { s in
            if s.stopped { task.cancel() } else { s.running = task }
        }
    }

    func stop() {
        let task = state.withLock { s -> Task<Void, Never>? in
            s.stopped = true
            defer { s.running = nil }
            return s.running
        }
        task?.cancel()
    }

    /// One pass: plans from the tree, marks the pinned keys, and downloads what is missing. False
    /// when it stopped before trying every missing content (offline, or stopped).
    @discardableResult
    func keepOnce() async -> Bool {
        guard let diskCache else { return true }
        followMoves()
        let coverage = currentCoverage()
        var wanted: [String: PinnedContent] = [:]
        for pin in coverage { for file in pin.files where wanted[file.key] == nil { wanted[file.key] = file } }
        diskCache.setPinned(Set(wanted.keys))
        let present = diskCache.present(Set(wanted.keys))
        let now = monotonicNow()
        let todo = state.withLock { s -> [PinnedContent] in
            s.failures = s.failures.filter { wanted[$0.key] != nil }
            return wanted.values.filter { file in
                !present.contains(file.key) && !s.downloading.contains(file.key)
                    && (s.failures[file.key].map { now - $0.at >= retryAfter } ?? true)
            }.sorted { $0.path < $1.path }
        }
        let unlisted = coverage.flatMap(\.unlisted)
        if !unlisted.isEmpty && !connectivity.isOffline {
            for folder in unlisted.prefix(listingsPerPass) { await listFolder(folder) }
        }
        guard !todo.isEmpty else { return unlisted.isEmpty }
        guard !connectivity.isOffline else { return false }
        let done = await Pacer.$lane.withValue(.readAhead) { await fetchAll(todo, into: diskCache) }
        return done && unlisted.isEmpty
    }

    /// What each pin covers in the tree now. A walk of a pinned subtree takes the tree's lock
    /// for as long as the subtree is big (a pinned folder of 300,000 files holds up every lookup
    /// meanwhile), so the last walk is used again while the tree has not changed since and the
    /// pins are the same: the count is read before the walk, so a change during it makes the next
    /// call walk again.
    func currentCoverage() -> [PinCoverage] {
        let pins = self.pins
        let changes = tree.changeCount.load(ordering: .acquiring)
        let kept = state.withLock { s -> [PinCoverage]? in
            guard let stamp = s.coverageStamp, stamp.changes == changes, stamp.pins == pins else { return nil }
            return s.coverage
        }
        if let kept { return kept }
        let coverage = tree.read { t in pins.map { PinPlan.coverage(of: $0, in: t.tree) } }
        state.withLock { s in
            s.coverage = coverage
            s.coverageStamp = (changes, pins)
            s.coverageWalks += 1
        }
        return coverage
    }

    /// Downloads `todo` in order, at most `concurrency` files at once and `bigConcurrency` of them
    /// larger than `smallFile` (a big file waits for a big one to finish; small ones go on past it).
    /// False when it stopped early (offline, or cancelled).
    private func fetchAll(_ todo: [PinnedContent], into diskCache: DiskCache) async -> Bool {
        await withTaskGroup(of: Bool.self) { group -> Bool in
            var small = todo.filter { $0.size <= smallFile }[...]
            var big = todo.filter { $0.size > smallFile }[...]
            var (running, bigRunning) = (0, 0)
            func startMore() {
                while running < concurrency {
                    let file: PinnedContent
                    if bigRunning < bigConcurrency, let next = big.popFirst() {
                        file = next
                        bigRunning += 1
                    } else if let next = small.popFirst() {
                        file = next
                    } else {
                        return
                    }
                    running += 1
                    let isBig = file.size > smallFile
                    group.addTask {
                        await self.fetch(file, into: diskCache)
                        return isBig
                    }
                }
            }
            startMore()
            var stopped = false
            while let wasBig = await group.next() {
                running -= 1
                if wasBig { bigRunning -= 1 }
                if Task.isCancelled || connectivity.isOffline { stopped = true }
                if !stopped { startMore() }
            }
            return !stopped
        }
    }

    /// Downloads one content into the disk cache, checked against its content_hash.
    private func fetch(_ file: PinnedContent, into cache: DiskCache) async {
        let claimed = state.withLock { s in s.downloading.insert(file.key).inserted }
        guard claimed else { return }
        defer { _ = state.withLock { s in s.downloading.remove(file.key) } }
        guard !cache.knows(key: file.key) else { return }
        let failure = await download(file, into: cache)
        if failure != nil && connectivity.isOffline {
            // Not this file's fault: the pass after Dropbox is back tries it at once.
            Log.debug("available offline: \(Log.quoted(file.path)) waits for Dropbox")
            return
        }
        state.withLock { s in
            if let failure {
                s.failures[file.key] = Failure(message: failure, at: monotonicNow())
            } else {
                s.failures[file.key] = nil
            }
        }
        if let failure {
            Log.warning("available offline: \(Log.quoted(file.path)) was not kept: \(failure); tried again later")
        } else {
            Log.debug("available offline: \(Log.quoted(file.path)) kept (\(file.size) bytes)")
        }
    }

    /// Nil when the content was committed, else why not.
    private func download(_ file: PinnedContent, into cache: DiskCache) async -> String? {
        guard let partial = cache.begin(key: file.key, size: file.size) else {
            return "no room in the disk cache for \(file.size) bytes"
        }
        let hasher = ContentHasher()
        var offset: UInt64 = 0
        while offset < file.size {
            if Task.isCancelled {
                cache.abandon(partial)
                return "stopped"
            }
            let length = min(pieceSize, file.size - offset)
            let bytes: [UInt8]
            do throws(DropboxError) {
                bytes = try await client.download(
                    path: "rev:" + file.rev, range: ByteRange(offset: offset, length: length)
                ).data
            } catch {
                cache.abandon(partial)
                return "\(error)"
            }
            guard UInt64(bytes.count) == length else {
                cache.abandon(partial)
                return "Dropbox sent \(bytes.count) bytes where \(length) were asked"
            }
            hasher.update(bytes)
            let at = offset
            let written = await withCheckedContinuation { (done: CheckedContinuation<CacheIOError?, Never>) in
                diskQueue.async { done.resume(returning: partial.file.write(bytes, at: at)) }
            }
            if let written {
                cache.refusesWrites(written)
                cache.abandon(partial)
                return "disk cache: \(written)"
            }
            offset += length
        }
        guard hasher.finalize() == file.hash else {
            cache.abandon(partial)
            return "the downloaded bytes do not match the content_hash"
        }
        let committed = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            diskQueue.async { done.resume(returning: cache.commit(partial)) }
        }
        return committed ? nil : "the disk cache entry could not be committed"
    }
}
