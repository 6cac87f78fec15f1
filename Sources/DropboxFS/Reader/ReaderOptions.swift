// The knobs of the file reader: prefetch window, request sizes, the global cap on buffer memory,
// which files are verified before any byte is served, and the optional on-disk content cache.
// docs/READS.md explains each default.

public struct ReaderOptions: Sendable, Equatable {
    /// The grid every fetched range is aligned to, and the size of a random read's fetch.
    public var unitSize: UInt64
    /// The first prefetch window of a sequential reader; it doubles at each top-up.
    public var initialWindow: UInt64
    /// The largest prefetch window (bytes requested ahead of the reader).
    public var maxWindow: UInt64
    /// The largest single ranged request; a window is split into parts of this size fetched in parallel.
    public var partSize: UInt64
    /// A read this close behind or ahead of where the last one ended still counts as sequential.
    public var sequentialSlack: UInt64
    /// Files up to this size are fetched whole on the first read and checked against content_hash
    /// before any byte is served.
    public var wholeFileLimit: UInt64
    /// A whole-file fetch is split into at most this many parallel requests.
    public var wholeFileParts: UInt64
    /// Cap on bytes held in read buffers (downloaded or in flight) across all open files. A read
    /// that needs bytes still fetches them when the cap is reached; only prefetch stops.
    public var memoryLimit: UInt64
    /// The on-disk content cache; nil keeps downloaded bytes in memory only.
    public var diskCache: DiskCacheOptions?

    public init(
        unitSize: UInt64 = 256 << 10,
        initialWindow: UInt64 = 1 << 20,
        maxWindow: UInt64 = 64 << 20,
        partSize: UInt64 = 8 << 20,
        sequentialSlack: UInt64 = 1 << 20,
        wholeFileLimit: UInt64 = 8 << 20,
        wholeFileParts: UInt64 = 4,
        memoryLimit: UInt64 = 256 << 20,
        diskCache: DiskCacheOptions? = nil
    ) {
        precondition(unitSize > 0 && partSize >= unitSize && partSize % unitSize == 0, "parts are whole units")
        precondition(initialWindow > 0 && maxWindow >= initialWindow && wholeFileParts > 0)
        self.unitSize = unitSize
        self.initialWindow = initialWindow
        self.maxWindow = maxWindow
        self.partSize = partSize
        self.sequentialSlack = sequentialSlack
        self.wholeFileLimit = wholeFileLimit
        self.wholeFileParts = wholeFileParts
        self.memoryLimit = memoryLimit
        self.diskCache = diskCache
    }
}

/// Where the on-disk content cache lives and how much it may hold.
public struct DiskCacheOptions: Sendable, Equatable {
    /// The folder of cache entries (created 0700 with missing parents).
    public var directory: String
    /// Bytes of complete entries plus downloads in progress; least recently used entries go first.
    public var capacity: UInt64

    public init(directory: String, capacity: UInt64) {
        self.directory = directory
        self.capacity = capacity
    }
}
