// Read-ahead across files, as the filesystem runs it: every open by a program (not a file
// manager, a thumbnailer or a content sniffer: they look into files, and have thumbnails) is told
// to the policy (Reader/FolderReadAheadPolicy.swift) under the calling thread, as the kernel names
// it (fuse_req_ctx). When the policy reads ahead, the tree names the next files of the folder
// (Tree/LiveTree+ReadAhead.swift) and they are queued; at most `parallel` run at once
// (FileReader.readAhead: fetched whole and checked, like any small file's first read). When the
// window reaches the end of a folder without subfolders, the first files of the next folder in
// its parent's listing are read ahead too (once per folder visit): a walk enters it next, and its
// first open there would otherwise wait a round trip. When the policy stops a folder, that
// thread's queued files of other folders than the one it opened in are dropped and its downloads
// in flight there cancelled. Queued files beyond `queueLimit` are not queued. A folder worth it is
// asked for as one zip first (Reader/FolderZips.swift): its queued files then wait for the zip,
// and are downloaded by themselves only when it does not hold them.
//
// Locking: `state` (a Mutex) guards the threads' records, the queue, the running downloads and the
// counts; it is never held while the tree's or the reader's lock is taken, nor while a task is
// started or cancelled.

import Synchronization
import SystemCalls

final class FolderReadAhead: Sendable {
    /// Records beyond this many are pruned of the forgotten ones.
    static let pruneAbove = 1024

    private struct Job {
        var id: UInt64
        var thread: Int32
        var folder: UInt32
        var file: PinnedFile
    }

    private struct Running {
        var thread: Int32
        var folder: UInt32
        var task: Task<Void, Never>?
        var cancelled = false
    }

    private struct State {
        var records: [Int32: FolderReadAheadPolicy.Record] = [:]
        /// Per thread, the next folder whose first files were read ahead, and the positions of
        /// it that covered.
        var nextFolders: [Int32: (folder: UInt32, requestedUpTo: Int)] = [:]
        var queue: [Job] = []
        var running: [UInt64: Running] = [:]
        var nextId: UInt64 = 0
        /// Files queued for read-ahead; of those started, the ones read ahead (downloaded and
        /// checked), and the ones given up (held already, cancelled or failed).
        var queuedTotal: UInt64 = 0
        var fetched: UInt64 = 0
        var dropped: UInt64 = 0
    }

    let options: FolderReadAheadOptions
    private let reader: FileReader
    private let tree: LiveTree
    private let now: @Sendable () -> Double
    private let state = Mutex(State())

    init(
        options: FolderReadAheadOptions, reader: FileReader, tree: LiveTree,
        now: @escaping @Sendable () -> Double = SystemClock.monotonicSeconds
    ) {
        self.options = options
        self.reader = reader
        self.tree = tree
        self.now = now
    }

    /// Thread `thread` opened `file` (tree index) in `folder`.
    func opened(file: UInt32, in folder: UInt32, by thread: Int32) {
        let at = now()
        let step = state.withLock { s -> FolderReadAheadPolicy.Step in
            var step = FolderReadAheadPolicy.opened(s.records[thread], file: file, folder: folder, now: at, options: options)
            // A walk entering the folder whose first files were read ahead from the last one.
            if let ahead = s.nextFolders[thread], step.record.opens == 1 {
                if ahead.folder == folder {
                    step.record.requestedUpTo = max(step.record.requestedUpTo, ahead.requestedUpTo)
                }
                s.nextFolders[thread] = nil
            }
            s.records[thread] = step.record
            if s.records.count > Self.pruneAbove {
                s.records = s.records.filter { at - $0.value.at <= options.memory }
                s.nextFolders = s.nextFolders.filter { s.records[$0.key] != nil }
            }
            return step
        }
        // The pattern moved on (keep what was read ahead where it goes), or ended (keep nothing).
        if step.stop != nil { stop(thread: thread, keeping: step.readAhead ? folder : nil) }
        guard step.readAhead,
            let window = tree.readAheadFiles(
                in: folder, after: file, requestedUpTo: step.record.requestedUpTo,
                alsoNextFolder: !step.record.nextFolderRequested, options: options)
        else { return }
        if let zips = reader.zips {
            askZip(of: folder, zips, besides: file)
            if let next = window.next { askZip(of: next.folder, zips, besides: nil) }
        }
        let files = window.files.filter { !reader.holds($0) }
        let next = window.next.map { ($0.folder, $0.files.filter { !reader.holds($0) }, $0.requestedUpTo) }
        let starting = state.withLock { s -> [(id: UInt64, file: PinnedFile)] in
            // Another open of this thread may have moved on meanwhile: then this window is old.
            guard var record = s.records[thread], record.folder == folder, record.file == file else { return [] }
            record.requestedUpTo = max(record.requestedUpTo, window.requestedUpTo)
            var jobs = files.map { (folder, $0) }
            if let (nextFolder, nextFiles, upTo) = next {
                record.nextFolderRequested = true
                s.nextFolders[thread] = (nextFolder, upTo)
                jobs += nextFiles.map { (nextFolder, $0) }
            }
            s.records[thread] = record
            for (jobFolder, pinned) in jobs where s.queue.count < options.queueLimit {
                s.nextId += 1
                s.queue.append(Job(id: s.nextId, thread: thread, folder: jobFolder, file: pinned))
                s.queuedTotal += 1
            }
            return Self.takeStartable(&s, parallel: options.parallel)
        }
        start(starting)
    }

    /// Asks for `folder` as one zip when that is worth it (Reader/FolderZips.swift); the files
    /// queued then wait for it, and so do the program's own reads of them. The file being opened
    /// (`besides`) is not taken from it: its read is under way, and one download of it answers
    /// sooner than a zip of its folder.
    private func askZip(of folder: UInt32, _ zips: FolderZips, besides opened: UInt32?) {
        guard zips.consider(folder), let plan = tree.zipPlan(of: folder),
            let wanted = zips.wanted(plan, held: { $0.inode == opened.map(UInt64.init) || reader.holds($0) })
        else { return }
        zips.fetch(plan, wanted: wanted)
    }

    /// The thread's pattern moved to `folder`, or ended (nil): drops its queued files of other
    /// folders and cancels its downloads in flight there.
    private func stop(thread: Int32, keeping folder: UInt32?) {
        let cancelled = state.withLock { s -> [Task<Void, Never>] in
            s.queue.removeAll { $0.thread == thread && $0.folder != folder }
            var tasks: [Task<Void, Never>] = []
            for (id, running) in s.running where running.thread == thread && running.folder != folder {
                s.running[id]?.cancelled = true
                if let task = running.task { tasks.append(task) }
            }
            return tasks
        }
        for task in cancelled { task.cancel() }
    }

    /// Moves queued jobs to running while fewer than `parallel` run; returns them, for `start`.
    private static func takeStartable(_ s: inout State, parallel: Int) -> [(id: UInt64, file: PinnedFile)] {
        var jobs: [(id: UInt64, file: PinnedFile)] = []
        while s.running.count < parallel, !s.queue.isEmpty {
            let job = s.queue.removeFirst()
            s.running[job.id] = Running(thread: job.thread, folder: job.folder)
            jobs.append((job.id, job.file))
        }
        return jobs
    }

    private func start(_ jobs: [(id: UInt64, file: PinnedFile)]) {
        for (id, file) in jobs {
            let task = Task { [self] in
                let done = await reader.readAhead(file)
                finished(id, fetched: done)
            }
            let cancelNow = state.withLock { s -> Bool in
                guard s.running[id] != nil else { return false }
                s.running[id]?.task = task
                return s.running[id]?.cancelled == true
            }
            if cancelNow { task.cancel() }
        }
    }

    private func finished(_ id: UInt64, fetched: Bool) {
        let next = state.withLock { s -> [(id: UInt64, file: PinnedFile)] in
            s.running[id] = nil
            if fetched { s.fetched += 1 } else { s.dropped += 1 }
            return Self.takeStartable(&s, parallel: options.parallel)
        }
        start(next)
    }

    /// For the root's status attribute: files queued for read-ahead, read ahead, and given up
    /// (held already, cancelled or failed). Queuing happens inside the open that decided it.
    var statusFields: String {
        state.withLock { "read_ahead_queued=\($0.queuedTotal) read_ahead_files=\($0.fetched) read_ahead_dropped=\($0.dropped)" }
    }
}
