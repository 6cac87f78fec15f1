// Thumbnails without downloads (docs/SEMANTICS.md, "Thumbnails"). A file manager showing a folder
// of photos reads every image whole to make its thumbnails; Dropbox already has them. When a file
// manager lists a folder, the adapter tells the core, and this writer puts Dropbox's thumbnails of
// the folder's images (files/get_thumbnail_batch, 25 a request) where file managers look first: the
// freedesktop thumbnail cache, `$XDG_CACHE_HOME/thumbnails/{normal,large}/<md5 of the URI>.png`
// (128 and 256 pixels: file managers use `large` for big icons, Thunar from 200 % zoom on),
// carrying the Thumb::URI and Thumb::MTime the standard asks for. A file manager that finds a
// current one there shows it and reads nothing. It looks as soon as it has the listing, so the
// listing waits for the folder's thumbnails of the first size (`normal`, what the default views
// use; `listingWait`, 2 s at most; the adapter answers it from a task): PCManFM, shown its first
// folder of 60 photos while the thumbnails were still on their way, read every photo anyway. The
// `large` ones are fetched alongside, never ahead of them: a view that needs only `normal` does
// not wait for them, and a big-icon view finds them too (Thunar at 200 % looks for `large` as soon
// as it has the listing: fetched only after the normal ones, those of the second screenful came
// too late, and tumblerd downloaded the photos).
//
// Work is a queue of folders, the most recently shown first (a folder shown again moves to the
// front), worked through in batches of one size by one worker task per size (a lane): one batch
// in flight per size, so thumbnails never compete with reads for more than two request slots, and
// after each batch a lane turns to the folder shown last. A folder is checked on disk once, by the
// first lane to reach it; the other lane waits for that (it never skips ahead to an older folder).
// Images whose cache file is already current are skipped;
// a file Dropbox cannot thumbnail is skipped silently (the file manager's own thumbnailer then does
// what it always did). The thumbnails dropboxfs keeps in the cache are capped (`capacity`), across
// the mounts of a profile (ThumbnailLedger.swift): past the cap the least recently written go
// first, never those written for the folder being worked on; a folder whose thumbnails alone
// exceed the cap gets those that fit, and the file manager makes the rest.
//
// Locking: `state` (a Mutex) guards the queue (with each folder's completion signal, fired once
// its smallest thumbnails are written or it leaves the queue, and what of it is being checked or
// fetched), the running lanes' tasks, and the bytes written. It is never held across an await, a
// request or disk I/O. Disk work (checking and writing cache files) runs on `disk`, a serial
// queue outside Swift's cooperative pool, shared by the lanes.

import Dispatch
import DropboxAPI
import Log
import Synchronization

/// A size of the freedesktop thumbnail cache that dropboxfs writes: the folder's name, and the
/// Dropbox thumbnail that fits it.
public enum ThumbnailSize: String, Sendable, Equatable, Comparable, CaseIterable {
    /// 128 pixels at most a side, `thumbnails/normal`.
    case normal
    /// 256 pixels at most a side, `thumbnails/large`.
    case large
    /// 512 pixels at most a side, `thumbnails/x-large` (HiDPI views).
    case xLarge = "x-large"
    /// 1024 pixels at most a side, `thumbnails/xx-large` (HiDPI big icons).
    case xxLarge = "xx-large"

    /// The Dropbox size asked for (strict mode: within the box, aspect kept). Dropbox has no
    /// 512-pixel box: x-large gets its largest that fits, 480 x 320 (the standard allows smaller
    /// thumbnails than the folder's size; only larger ones are wrong).
    var dropboxSize: ThumbnailArg.Size {
        switch self {
        case .normal: .w128h128
        case .large: .w256h256
        case .xLarge: .w480h320
        case .xxLarge: .w1024h768
        }
    }

    /// The longest side the standard allows in this folder.
    public var pixels: Int {
        switch self {
        case .normal: 128
        case .large: 256
        case .xLarge: 512
        case .xxLarge: 1024
        }
    }

    /// What is written when no sizes are chosen: normal and large, which every file manager uses.
    public static let defaults: [ThumbnailSize] = [.normal, .large]

    public static func < (a: Self, b: Self) -> Bool { a.pixels < b.pixels }
}

/// Where thumbnails go and how much of them one mount may write.
public struct ThumbnailOptions: Sendable, Equatable {
    /// The mount point, absolute: a file's URI is `file://` + mount point + its path in the mount.
    public var mountpoint: String
    /// The thumbnail cache, `$XDG_CACHE_HOME/thumbnails`; only the folders of `sizes` are written.
    public var folder: String
    /// The most bytes of thumbnails kept in the cache, every size and every mount of the profile
    /// counted (the ledger's), least recently written first out.
    public var capacity: UInt64
    /// The ledger of the thumbnails written, kept across mounts (`CACHE_DIR/thumbnails.ledger`);
    /// nil counts this mount's only.
    public var ledger: String?
    /// How long a file manager's listing waits for the folder's thumbnails of the smallest size
    /// (seconds): it looks for them as soon as it has the listing, and reads the images whose
    /// thumbnail is not there yet.
    public var listingWait: Double
    /// The sizes written, smallest first (never empty).
    public var sizes: [ThumbnailSize]

    public init(
        mountpoint: String, folder: String, capacity: UInt64 = 200 << 20, ledger: String? = nil, listingWait: Double = 2,
        sizes: [ThumbnailSize] = ThumbnailSize.defaults
    ) {
        self.mountpoint = mountpoint
        self.folder = folder
        self.capacity = capacity
        self.ledger = ledger
        self.listingWait = listingWait
        let chosen = Set(sizes).sorted()
        self.sizes = chosen.isEmpty ? [.normal] : chosen
    }
}

/// An image file of a folder, as the tree knows it.
struct ThumbnailSource: Sendable, Equatable {
    /// The file's path in the mount ("/Camera Uploads/IMG_0001.jpg").
    var path: String
    var rev: String
    /// What stat shows as st_mtime.
    var mtime: Int64
    var size: UInt64
}

final class ThumbnailWriter: Sendable {
    /// One thumbnail of one image to be fetched.
    struct Pending: Sendable, Equatable {
        var source: ThumbnailSource
        var size: ThumbnailSize
        var uri: String
        var fileName: String
    }

    /// A folder waiting for thumbnails; `pending` is nil until its images were checked on disk,
    /// then the thumbnails to fetch, smallest size first. A job stays queued while its last batch
    /// is written; `done` fires once none of the smallest size is left to write (what a listing
    /// waits for), or when it leaves the queue (written, failed, dropped or stopped).
    private struct Job {
        var folder: UInt32
        var id: UInt64
        /// The folder's image files (from the tree, listing the folder when needed).
        let sources: @Sendable (UInt32) async -> [ThumbnailSource]?
        var pending: [Pending]?
        /// The ledger's sequence when the folder was checked: thumbnails written from then on are
        /// this folder's (or a newer one's), and are not removed to make room for it.
        var ledgerMark: UInt64 = .max
        /// A lane is checking the folder's cache files.
        var checking = false
        /// The sizes whose batch of this folder is in flight.
        var inFlight: Set<ThumbnailSize> = []
        let done = CompletionSignal()

        /// Nothing left to fetch or write: the job may leave the queue.
        var isFinished: Bool { pending?.isEmpty == true && !checking && inFlight.isEmpty }
    }

    private struct State {
        /// The most recently shown folder first.
        var queue: [Job] = []
        var nextID: UInt64 = 0
        /// The running lanes, for `stop`.
        var lanes: [ThumbnailSize: Task<Void, Never>] = [:]
        var written: UInt64 = 0
        /// Writing failed, or the writer stopped: nothing more is fetched or written.
        var finished = false
        /// A folder had more thumbnails than the cap holds (said once).
        var saidFull = false
    }

    private enum Step {
        case check(folder: UInt32, job: UInt64)
        case fetch([Pending], job: UInt64, ledgerMark: UInt64)
    }

    /// What a fetched batch came to.
    private enum Fetched {
        case written
        /// The request failed: the rest of the folder is left to the file manager.
        case failed
        /// The cap cannot hold more of this folder: its rest is left to the file manager.
        case full
    }

    /// Folders waiting beyond this many are forgotten, the oldest first: the user moved on.
    static let queueLimit = 32

    let options: ThumbnailOptions
    private let client: any DropboxClient
    /// The cache folder of each size written.
    private let caches: [ThumbnailSize: ThumbnailCache]
    private let state = Mutex(State())
    private let disk = DispatchQueue(label: "dropboxfs.thumbnails")
    /// What dropboxfs keeps in the cache, across mounts; used on `disk` only.
    let ledger: ThumbnailLedger

    init(options: ThumbnailOptions, client: any DropboxClient) {
        self.options = options
        self.client = client
        var caches: [ThumbnailSize: ThumbnailCache] = [:]
        for size in ThumbnailSize.allCases { caches[size] = ThumbnailCache(folder: options.folder + "/" + size.rawValue) }
        self.caches = caches
        let ledger = ThumbnailLedger(path: options.ledger, thumbnails: options.folder)
        self.ledger = ledger
        // Read now, off the mount's path (the cache folder may be slow), so status has its total.
        disk.async { _ = ledger.count }
    }

    /// The size a listing waits for: the smallest written.
    private var waitedSize: ThumbnailSize { options.sizes[0] }

    /// False once writing failed or the writer stopped: listings need not be reported any more.
    var isActive: Bool { state.withLock { !$0.finished } }

    /// Bytes of thumbnails this mount wrote.
    var bytesWritten: UInt64 { state.withLock { $0.written } }

    /// Bytes of thumbnails dropboxfs keeps in the cache (every mount of the profile), as far as
    /// the ledger is read yet.
    var bytesKept: UInt64 { ledger.loadedTotal }

    /// Nothing queued and no lane running (tests wait for it).
    var isIdle: Bool { state.withLock { $0.lanes.isEmpty && $0.queue.isEmpty } }

    /// A file manager showed `folder`: queue it first. `sources` gives the folder's image files
    /// (listing it when needed), nil when it is gone. Returns the signal fired once the folder's
    /// thumbnails of the smallest size are written (or given up; the larger ones follow), nil when
    /// nothing is written any more.
    @discardableResult
    func wanted(folder: UInt32, sources: @escaping @Sendable (UInt32) async -> [ThumbnailSource]?)
        -> CompletionSignal?
    {
        let (done, dropped) = state.withLock { s -> (CompletionSignal?, [Job]) in
            guard !s.finished else { return (nil, []) }
            var dropped: [Job] = []
            if let index = s.queue.firstIndex(where: { $0.folder == folder }) {
                s.queue.insert(s.queue.remove(at: index), at: 0)
            } else {
                s.nextID += 1
                s.queue.insert(Job(folder: folder, id: s.nextID, sources: sources, pending: nil), at: 0)
                if s.queue.count > Self.queueLimit {
                    dropped = Array(s.queue[Self.queueLimit...])
                    s.queue.removeLast(s.queue.count - Self.queueLimit)
                }
            }
            startLanes(&s)
            return (s.queue[0].done, dropped)
        }
        for job in dropped { job.done.fire() }
        return done
    }

    /// Stops the lanes (at unmount); nothing is queued or written afterwards.
    func stop() {
        let (lanes, dropped) = state.withLock { s -> ([Task<Void, Never>], [Job]) in
            s.finished = true
            defer { s.queue = [] }
            return (Array(s.lanes.values), s.queue)
        }
        for lane in lanes { lane.cancel() }
        for job in dropped { job.done.fire() }
    }

    /// Starts the lanes that are not running, while there is work (under the lock, so `lanes`
    /// always holds the running ones: a lane's first step waits for the lock).
    private func startLanes(_ s: inout State) {
        guard !s.finished, !s.queue.isEmpty else { return }
        for size in options.sizes where s.lanes[size] == nil {
            s.lanes[size] = Task { await self.work(size) }
        }
    }

    /// One lane: the batches of one size, the folder shown last first.
    private func work(_ size: ThumbnailSize) async {
        while let step = nextStep(size) {
            switch step {
            case .check(let folder, let id):
                let sources = state.withLock { s in s.queue.first(where: { $0.id == id })?.sources }
                let (pending, mark) = await check(await sources?(folder) ?? [])
                state.withLock { s in
                    guard let index = s.queue.firstIndex(where: { $0.id == id }) else { return }
                    s.queue[index].pending = pending
                    s.queue[index].ledgerMark = mark
                    s.queue[index].checking = false
                    // The other lanes stopped at this folder: there may be work for them now.
                    startLanes(&s)
                }
                finishIfDone(id)
            case .fetch(let batch, let id, let mark):
                let fetched = await fetch(batch, ledgerMark: mark)
                state.withLock { s in
                    guard let index = s.queue.firstIndex(where: { $0.id == id }) else { return }
                    s.queue[index].inFlight.remove(size)
                    // A failed request, or a folder the cap cannot hold, leaves the rest of the
                    // folder, every size, to the file manager.
                    if fetched != .written { s.queue[index].pending = [] }
                }
                finishIfDone(id)
            }
        }
    }

    /// Tells job `id`'s waiters once nothing of the waited size is left to fetch or write for it,
    /// and takes it out of the queue once nothing at all is.
    private func finishIfDone(_ id: UInt64) {
        let waited = waitedSize
        let done = state.withLock { s -> CompletionSignal? in
            guard let index = s.queue.firstIndex(where: { $0.id == id }), let pending = s.queue[index].pending else {
                return nil
            }
            if s.queue[index].isFinished { return s.queue.remove(at: index).done }
            let waiting = s.queue[index].inFlight.contains(waited) || pending.contains(where: { $0.size == waited })
            return waiting ? nil : s.queue[index].done
        }
        // Firing twice is harmless.
        done?.fire()
    }

    /// The next thing lane `size` does: check the folder shown last that is not checked yet, or
    /// fetch a batch of the first folder with thumbnails of this size left; nil when there is
    /// none, or that folder is being checked by another lane (which starts this one again): the
    /// lane then ends.
    private func nextStep(_ size: ThumbnailSize) -> Step? {
        state.withLock { s -> Step? in
            if !s.finished, !Task.isCancelled {
                for index in s.queue.indices {
                    guard let pending = s.queue[index].pending else {
                        if s.queue[index].checking { break }
                        s.queue[index].checking = true
                        return .check(folder: s.queue[index].folder, job: s.queue[index].id)
                    }
                    let batch = Array(pending.lazy.filter { $0.size == size }.prefix(ThumbnailArg.batchLimit))
                    guard !batch.isEmpty else { continue }
                    var taken = 0
                    s.queue[index].pending = pending.filter { item in
                        guard item.size == size, taken < batch.count else { return true }
                        taken += 1
                        return false
                    }
                    s.queue[index].inFlight.insert(size)
                    return .fetch(batch, job: s.queue[index].id, ledgerMark: s.queue[index].ledgerMark)
                }
            }
            s.lanes[size] = nil
            return nil
        }
    }

    /// The thumbnails whose cache file is missing or not current: every one of the smallest size,
    /// then every one of the next; and the ledger's sequence when they were checked.
    private func check(_ sources: [ThumbnailSource]) async -> ([Pending], UInt64) {
        let mountpoint = options.mountpoint == "/" ? "" : options.mountpoint
        let images = sources.map { source in
            let uri = ThumbnailNames.fileURI(mountpoint + source.path)
            return (source: source, uri: uri, fileName: ThumbnailNames.cacheFileName(uri: uri))
        }
        let ledger = self.ledger
        // Nothing to write: no mark is needed (nothing of the folder will make room).
        guard !images.isEmpty else { return ([], .max) }
        let candidates = options.sizes.flatMap { size in
            images.map { Pending(source: $0.source, size: size, uri: $0.uri, fileName: $0.fileName) }
        }
        let caches = self.caches
        let (pending, mark) = await onDisk {
            let pending = candidates.filter {
                !caches[$0.size]!.isCurrent($0.fileName, uri: $0.uri, mtime: $0.source.mtime, size: $0.source.size)
            }
            return (pending, ledger.nextSequence)
        }
        let counts = options.sizes.map { size in "\(pending.count(where: { $0.size == size })) \(size.rawValue)" }
        let folder = Self.folder(of: candidates[0])
        Log.debug("thumbnails: \(counts.joined(separator: " and ")) of the \(images.count) images in \(folder) "
            + "to fetch")
        return (pending, mark)
    }

    /// Fetches one batch (of one size) and writes what came back, making room under the cap by
    /// removing the least recently written thumbnails older than `ledgerMark`.
    private func fetch(_ batch: [Pending], ledgerMark: UInt64) async -> Fetched {
        let arguments = batch.map {
            ThumbnailArg(path: "rev:" + $0.source.rev, format: .png, size: $0.size.dropboxSize)
        }
        let results: [Result<[UInt8], ThumbnailFailure>]
        do {
            results = try await client.getThumbnailBatch(arguments)
        } catch {
            if !Task.isCancelled {
                Log.info("thumbnails: Dropbox did not send those of the images in \(Self.folder(of: batch[0])) (\(error)); the file manager makes its own")
            }
            return .failed
        }
        var files: [(Pending, [UInt8])] = []
        for (item, result) in zip(batch, results) {
            switch result {
            case .success(let image):
                let text: [(keyword: String, text: String)] = [
                    ("Thumb::URI", item.uri), ("Thumb::MTime", String(item.source.mtime)),
                    ("Thumb::Size", String(item.source.size)), ("Software", "dropboxfs"),
                ]
                guard let stamped = PNGText.adding(text, to: image) else {
                    Log.debug("thumbnails: Dropbox's thumbnail of \(Log.quoted(item.source.path)) is not a PNG")
                    continue
                }
                files.append((item, stamped))
            case .failure(let failure):
                Log.debug("thumbnails: none for \(Log.quoted(item.source.path)) (\(failure))")
            }
        }
        guard !files.isEmpty else { return .written }
        let cache = caches[batch[0].size]!
        let written = files
        let fetched = await onDisk { () -> Fetched in
            for (item, bytes) in written {
                guard self.isActive else { return .written }
                guard self.makeRoom(UInt64(bytes.count), for: item, ledgerMark: ledgerMark) else { return .full }
                if let failure = cache.write(bytes, as: item.fileName) {
                    self.finish(.warning, "thumbnails: cannot write in \(cache.folder) (\(failure)); no more thumbnails are written")
                    return .written
                }
                self.ledger.record(Self.ledgerName(item), bytes: UInt64(bytes.count))
                self.state.withLock { $0.written += UInt64(bytes.count) }
            }
            return .written
        }
        if fetched == .full { sayFull(batch[0]) }
        return fetched
    }

    /// "normal/<md5>.png": a thumbnail's name in the ledger.
    private static func ledgerName(_ item: Pending) -> String { item.size.rawValue + "/" + item.fileName }

    /// On `disk`: removes the least recently written thumbnails (older than `ledgerMark`) until
    /// `bytes` more fit under the cap; false when they cannot. A file that no longer carries our
    /// `Software` chunk is not removed (a file manager wrote its own there), only forgotten.
    private func makeRoom(_ bytes: UInt64, for item: Pending, ledgerMark: UInt64) -> Bool {
        guard
            let victims = ledger.room(
                for: bytes, as: Self.ledgerName(item), capacity: options.capacity, protectedFrom: ledgerMark)
        else { return false }
        for victim in victims {
            let parts = victim.split(separator: "/")
            if let size = ThumbnailSize(rawValue: String(parts[0])) { caches[size]?.removeIfOurs(String(parts[1])) }
            ledger.record(victim, bytes: 0)
        }
        return true
    }

    /// Says once that a folder had more thumbnails than the cap holds.
    private func sayFull(_ item: Pending) {
        let first = state.withLock { s -> Bool in
            defer { s.saidFull = true }
            return !s.saidFull
        }
        guard first else { return }
        Log.info("thumbnails: \(Self.folder(of: item)) has more thumbnails than --thumbnail-cache-size "
            + "(\(options.capacity) bytes, every mount counted) holds beside those written for it; the file manager makes the rest")
    }

    /// The quoted folder path of an image, for log lines.
    private static func folder(of item: Pending) -> String {
        let path = item.source.path
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return Log.quoted(path) }
        let folder = String(decoding: path.utf8[..<slash], as: UTF8.self)
        return Log.quoted(folder.isEmpty ? "/" : folder)
    }

    /// Stops fetching and writing, with one log line.
    private func finish(_ level: LogLevel, _ why: String) {
        let (first, dropped) = state.withLock { s -> (Bool, [Job]) in
            defer {
                s.finished = true
                s.queue = []
            }
            return (!s.finished, s.queue)
        }
        for job in dropped { job.done.fire() }
        guard first else { return }
        if level == .warning { Log.warning(why) } else { Log.info(why) }
    }

    private func onDisk<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            disk.async { continuation.resume(returning: body()) }
        }
    }
}
