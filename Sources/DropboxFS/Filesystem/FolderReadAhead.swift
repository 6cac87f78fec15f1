// Read-ahead across files, as the filesystem runs it: every open by a program (not a file
// manager, a thumbnailer or a content sniffer: they look into files, and have thumbnails) is told
// to the policy (Reader/FolderReadAheadPolicy.swift) under the calling thread, as the kernel names
// it (fuse_req_ctx). When the policy reads ahead, the tree names the next files of the folder
// (Tree/LiveTree+ReadAhead.swift) and they are queued; at most `parallel` run at once
// (FileReader.readAhead: fetched whole and checked, like any small file's first read). When the
// policy stops a folder, that thread's queued files of it are dropped and its downloads in flight
// cancelled. Queued files beyond `queueLimit` are not queued.
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
            let step = FolderReadAheadPolicy.opened(s.records[thread], file: file, folder: folder, now: at, options: options)
            s.records[thread] = step.record
            if s.records.count > Self.pruneAbove {
                s.records = s.records.filter { at - $0.value.at <= options.memory }
            }
            return step
        }
        if let stopped = step.stop { stop(thread: thread, folder: stopped) }
        guard step.readAhead,
            let window = tree.readAheadFiles(
                in: folder, after: file, requestedUpTo: step.record.requestedUpTo, options: options)
        else { return }
        let files = window.files.filter { !reader.holds($0) }
        let starting = state.withLock { s -> [(id: UInt64, file: PinnedFile)] in
            // Another open of this thread may have moved on meanwhile: then this window is old.
            guard var record = s.records[thread], record.folder == folder, record.file == file else { return [] }
            record.requestedUpTo = max(record.requestedUpTo, window.requestedUpTo)
            s.records[thread] = record
            for pinned in files where s.queue.count < options.queueLimit {
                s.nextId += 1
                s.queue.append(Job(id: s.nextId, thread: thread, folder: folder, file: pinned))
                s.queuedTotal += 1
            }
            return Self.takeStartable(&s, parallel: options.parallel)
        }
        start(starting)
    }

    /// Drops the queued files of `thread` in `folder` and cancels its downloads in flight there.
    private func stop(thread: Int32, folder: UInt32) {
        let cancelled = state.withLock { s -> [Task<Void, Never>] in
            s.queue.removeAll { $0.thread == thread && $0.folder == folder }
            var tasks: [Task<Void, Never>] = []
            for (id, running) in s.running where running.thread == thread && running.folder == folder {
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
