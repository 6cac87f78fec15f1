// Read-ahead across files: the pure policy. A program that reads the files of a folder one after
// another (`grep -r`, `tar c`, `cp -r`, `rsync`, `git status`) pays one round trip per file: 2,000
// files of 10 KB at 30 ms took over a minute, where the bytes need well under a second. When a
// thread has opened `trigger` different files of one folder in a row, the folder's next small
// files (in listing order: by name, as readdir gives them) are fetched whole before they are
// opened. A thread that did so and goes on to another folder is a walk: its first open there
// starts that folder's read-ahead at once. An open in another folder by a thread that opened only
// one file where it was ends the pattern: the read-ahead of its previous folder stops (what is
// queued is dropped, downloads in flight are cancelled), and nothing starts until the pattern
// shows again. So a single read, or random reads in different folders, cost no extra request, and
// a walk that turns random costs at most one window.
//
// The window slides with the reader: at most `filesAhead` files and `bytesAhead` bytes after the
// position of the file just opened, each file requested once per folder visit (`requestedUpTo`).
// How downloads run (how many at once, verified like any whole-file read) is
// Filesystem/FolderReadAhead.swift's; this file only decides, from values, with no clock but the
// one passed in.

/// Bounds of the read-ahead across files (docs/READS.md, "Read-ahead across files").
public struct FolderReadAheadOptions: Sendable, Equatable {
    /// Files up to this size are read ahead (whole, like any small file's first read).
    public var smallFileLimit: UInt64
    /// Files requested after the position of the file just opened.
    public var filesAhead: Int
    /// Bytes of those files, at most.
    public var bytesAhead: UInt64
    /// Read-ahead downloads running at once, for all threads together (the pacer's read-ahead
    /// lane, RetryPolicy.maxReadAheadRequests, caps their requests too).
    public var parallel: Int
    /// Different files of one folder opened in a row before its read-ahead starts.
    public var trigger: Int
    /// Read-ahead downloads queued, for all threads together; more are not queued.
    public var queueLimit: Int
    /// A thread's record is forgotten after this many seconds without an open.
    public var memory: Double

    public init(
        smallFileLimit: UInt64 = 1 << 20, filesAhead: Int = 64, bytesAhead: UInt64 = 16 << 20, parallel: Int = 48,
        trigger: Int = 2, queueLimit: Int = 512, memory: Double = 10
    ) {
        self.smallFileLimit = smallFileLimit
        self.filesAhead = max(1, filesAhead)
        self.bytesAhead = bytesAhead
        self.parallel = max(1, parallel)
        self.trigger = max(1, trigger)
        self.queueLimit = max(1, queueLimit)
        self.memory = memory
    }
}

enum FolderReadAheadPolicy {
    /// What one thread is doing in its current folder.
    struct Record: Equatable, Sendable {
        /// The folder (tree index) of the thread's last open.
        var folder: UInt32
        /// The file (tree index) of its last open.
        var file: UInt32
        /// Different files opened in `folder` in a row.
        var opens: Int
        /// It reached `trigger` in the folder before this one: its first open here already reads
        /// ahead.
        var walking: Bool
        /// Positions in `folder`'s listing below this were already requested (or passed).
        var requestedUpTo: Int
        /// When it last opened a file.
        var at: Double
        /// The next folder's first files were read ahead from this folder (once per visit).
        var nextFolderRequested = false
    }

    /// The outcome of an open.
    struct Step: Equatable, Sendable {
        var record: Record
        /// Read ahead in `record.folder` now (its `window`).
        var readAhead: Bool
        /// The folder whose read-ahead for this thread stops: the pattern ended, or moved on.
        var stop: UInt32?
    }

    /// The thread with `record` (nil: none, or forgotten) opened `file` in `folder` at `now`.
    static func opened(_ record: Record?, file: UInt32, folder: UInt32, now: Double, options: FolderReadAheadOptions) -> Step {
        let started = { (record: Record) -> Bool in record.opens >= options.trigger || record.walking }
        guard let record, now - record.at <= options.memory else {
            let fresh = Record(folder: folder, file: file, opens: 1, walking: false, requestedUpTo: 0, at: now)
            return Step(record: fresh, readAhead: started(fresh), stop: nil)
        }
        if record.folder == folder {
            var next = record
            next.at = now
            if record.file != file {
                next.file = file
                next.opens += 1
            }
            return Step(record: next, readAhead: started(next), stop: nil)
        }
        let walking = record.opens >= options.trigger
        let fresh = Record(folder: folder, file: file, opens: 1, walking: walking, requestedUpTo: 0, at: now)
        return Step(record: fresh, readAhead: started(fresh), stop: started(record) ? record.folder : nil)
    }

    /// The positions to request after an open at `position` of a listing of `count` entries, and
    /// the new `requestedUpTo`. `size(i)`: the size of the entry at position i when it may be read
    /// ahead (a downloadable file), nil otherwise. Files over `smallFileLimit` are skipped but
    /// count towards `filesAhead`, so the window never runs far past a big file.
    static func window(
        after position: Int, requestedUpTo: Int, count: Int, options: FolderReadAheadOptions, size: (Int) -> UInt64?
    ) -> (positions: [Int], requestedUpTo: Int) {
        let first = max(position + 1, requestedUpTo)
        let last = min(count, position + 1 + options.filesAhead)
        var positions: [Int] = []
        var bytes: UInt64 = 0
        var reached = max(requestedUpTo, position + 1)
        // Bytes count from the opened file on, including files requested at earlier opens.
        var i = position + 1
        while i < last {
            let entry = size(i)
            if let entry, entry <= options.smallFileLimit {
                if bytes + entry > options.bytesAhead { break }
                bytes += entry
                if i >= first { positions.append(i) }
            }
            i += 1
            if i > reached { reached = i }
        }
        return (positions, max(reached, requestedUpTo))
    }
}
