// The read-ahead policy as pure functions: whether a read continues a sequential stream, which
// unit-aligned bytes it needs now, how far ahead to fetch, how the window grows, and how a range is
// cut into parallel requests. No clocks and no state beyond the values passed in: FileReader keeps
// one ReadStream per open handle and applies the decisions (ReaderPolicyTests has the tables).
//
// A ranged stream (a handle read by a thumbnailer or a content sniffer: FUSEAdapter's
// FileManagers) is never fetched whole: it gets the units it asks for, a first read no read-ahead
// at all, and a window that starts at one unit once it reads on sequentially (a file manager
// copying the file still speeds up). Its bytes are then checked against content_hash as a large
// file's are: when a pass over the whole file completes.
//
// Below it, the reader's knobs (ReaderOptions) and the eviction order of buffers and disk entries:
// the reader's other pure decisions.

/// What the policy remembers about one open handle.
public struct ReadStream: Sendable, Equatable {
    /// Where the next read of a sequential reader is expected to start.
    public var expected: UInt64
    /// How many bytes to keep requested ahead of the reader.
    public var window: UInt64
    /// The end of everything this stream has requested so far.
    public var requestedUpTo: UInt64
    /// True once a sequential prefetch was issued since the last reset: later top-ups double the window.
    public var growing: Bool
    /// Read by a thumbnailer or content sniffer: never fetched whole, little read-ahead.
    public var ranged: Bool

    public init(
        expected: UInt64 = 0, window: UInt64, requestedUpTo: UInt64 = 0, growing: Bool = false, ranged: Bool = false
    ) {
        self.expected = expected
        self.window = window
        self.requestedUpTo = requestedUpTo
        self.growing = growing
        self.ranged = ranged
    }
}

/// What one read should fetch, and the stream afterwards.
public struct ReadDecision: Sendable, Equatable {
    public var sequential: Bool
    /// The unit-aligned bytes the read itself needs (the whole file for small files).
    public var demand: Range<UInt64>
    /// Unit-aligned bytes to fetch ahead of the reader, if any.
    public var prefetch: Range<UInt64>?
    public var stream: ReadStream

    public init(sequential: Bool, demand: Range<UInt64>, prefetch: Range<UInt64>?, stream: ReadStream) {
        self.sequential = sequential
        self.demand = demand
        self.prefetch = prefetch
        self.stream = stream
    }
}

public enum ReadPolicy {
    /// The decision for a read of `length` bytes at `offset` (which lies inside the file).
    public static func decide(
        _ stream: ReadStream, offset: UInt64, length: UInt64, fileSize: UInt64, options: ReaderOptions
    ) -> ReadDecision {
        precondition(offset < fileSize && length > 0, "a read inside the file")
        let unit = options.unitSize
        let readEnd = fileSize - offset < length ? fileSize : offset + length
        if fileSize <= wholeFileLimit(stream, options: options) {
            var next = stream
            next.expected = readEnd
            next.requestedUpTo = fileSize
            return ReadDecision(sequential: true, demand: 0..<fileSize, prefetch: nil, stream: next)
        }
        let demand = alignDown(offset, unit)..<min(alignUp(readEnd, unit), fileSize)
        let slack = options.sequentialSlack
        let sequential =
            offset + slack >= stream.expected && offset <= max(stream.requestedUpTo, stream.expected + slack)
        guard sequential else {
            let reset = ReadStream(
                expected: readEnd, window: stream.ranged ? unit : options.initialWindow,
                requestedUpTo: demand.upperBound, growing: false, ranged: stream.ranged)
            return ReadDecision(sequential: false, demand: demand, prefetch: nil, stream: reset)
        }
        // A ranged stream's first read: what it asked for only (a sniffer reads a few KiB once).
        if stream.ranged && stream.requestedUpTo == 0 {
            var next = stream
            next.expected = readEnd
            next.requestedUpTo = demand.upperBound
            return ReadDecision(sequential: true, demand: demand, prefetch: nil, stream: next)
        }
        var next = stream
        next.expected = max(stream.expected, readEnd)
        next.requestedUpTo = max(stream.requestedUpTo, demand.upperBound)
        // Top up once a whole part (or half a small window) fits, so the window stays full.
        let ahead = stream.requestedUpTo > readEnd ? stream.requestedUpTo - readEnd : 0
        let refill = min(options.partSize, stream.window / 2)
        guard ahead + refill <= stream.window, next.requestedUpTo < fileSize else {
            return ReadDecision(sequential: true, demand: demand, prefetch: nil, stream: next)
        }
        if stream.growing { next.window = min(stream.window * 2, options.maxWindow) }
        next.growing = true
        let start = next.requestedUpTo
        // A window of whole parts ends on a part boundary, so every request is a whole part.
        let target = readEnd + next.window
        let aligned = next.window >= options.partSize ? alignDown(target, options.partSize) : alignUp(target, unit)
        let end = min(aligned, fileSize)
        guard start < end else { return ReadDecision(sequential: true, demand: demand, prefetch: nil, stream: next) }
        next.requestedUpTo = end
        return ReadDecision(sequential: true, demand: demand, prefetch: start..<end, stream: next)
    }

    /// The stream made ranged (a thumbnailer's or sniffer's reads, from now on): its window starts
    /// at one unit.
    public static func ranged(_ stream: ReadStream, options: ReaderOptions) -> ReadStream {
        guard !stream.ranged else { return stream }
        var next = stream
        next.ranged = true
        next.window = min(stream.window, options.unitSize)
        return next
    }

    /// Files up to this size are fetched whole for the stream, and every read waits for their
    /// content_hash check: `options.wholeFileLimit`, none for a ranged stream.
    public static func wholeFileLimit(_ stream: ReadStream, options: ReaderOptions) -> UInt64 {
        stream.ranged ? 0 : options.wholeFileLimit
    }

    /// `range` cut at the multiples of `maxPart` into requests of at most `maxPart` bytes.
    public static func parts(of range: Range<UInt64>, maxPart: UInt64) -> [Range<UInt64>] {
        precondition(maxPart > 0)
        var parts: [Range<UInt64>] = []
        var start = range.lowerBound
        while start < range.upperBound {
            let end = min(alignDown(start, maxPart) + maxPart, range.upperBound)
            parts.append(start..<end)
            start = end
        }
        return parts
    }

    /// The request size for a file: small files are split into `wholeFileParts` parallel requests
    /// of whole units, larger files use `partSize`.
    public static func partSize(fileSize: UInt64, options: ReaderOptions) -> UInt64 {
        guard fileSize <= options.wholeFileLimit else { return options.partSize }
        let share = (fileSize + options.wholeFileParts - 1) / options.wholeFileParts
        return min(max(alignUp(share, options.unitSize), options.unitSize), options.partSize)
    }

    static func alignDown(_ value: UInt64, _ unit: UInt64) -> UInt64 { value - value % unit }

    static func alignUp(_ value: UInt64, _ unit: UInt64) -> UInt64 {
        let rest = value % unit
        return rest == 0 ? value : value + (unit - rest)
    }
}

// MARK: -
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

// MARK: -
// Which read buffers and which disk cache entries go first when space runs out, as pure functions
// of plain values (ReaderPolicyTests has the tables). Buffers: those a sequential reader has moved
// past (or that are safe on disk) first, those still waiting for the content_hash check last, and
// least recently used first within each group. Disk entries: least recently used first.

public enum EvictionOrder {
    /// A downloaded buffer that may be dropped.
    public struct Buffer: Sendable, Equatable {
        public var id: UInt64
        public var bytes: UInt64
        /// A sequential reader has read past it, or its bytes are also in the disk cache.
        public var consumed: Bool
        /// Its bytes have not gone through the content_hash check yet (dropping it costs a download).
        public var unhashed: Bool
        /// A tick of the reader's use clock; smaller is older.
        public var lastUsed: UInt64

        public init(id: UInt64, bytes: UInt64, consumed: Bool, unhashed: Bool, lastUsed: UInt64) {
            self.id = id
            self.bytes = bytes
            self.consumed = consumed
            self.unhashed = unhashed
            self.lastUsed = lastUsed
        }
    }

    /// The ids of the buffers to drop, in order, until at least `needed` bytes are freed (all of
    /// them when that is not enough).
    public static func buffersToEvict(_ buffers: [Buffer], needed: UInt64) -> [UInt64] {
        guard needed > 0 else { return [] }
        let ordered = buffers.sorted { a, b in
            if a.unhashed != b.unhashed { return !a.unhashed }
            if a.consumed != b.consumed { return a.consumed }
            if a.lastUsed != b.lastUsed { return a.lastUsed < b.lastUsed }
            return a.id < b.id
        }
        var freed: UInt64 = 0
        var victims: [UInt64] = []
        for buffer in ordered where freed < needed {
            victims.append(buffer.id)
            freed += buffer.bytes
        }
        return victims
    }

    /// A complete entry of the disk cache.
    public struct CacheEntry: Sendable, Equatable {
        public var key: String
        public var size: UInt64
        /// When it was last used (nanoseconds since the epoch, from the file's mtime).
        public var lastUsed: Int64

        public init(key: String, size: UInt64, lastUsed: Int64) {
            self.key = key
            self.size = size
            self.lastUsed = lastUsed
        }
    }

    /// The keys of the entries to delete, oldest first, so that `reserved` (downloads in progress,
    /// which cannot be evicted) plus the remaining entries plus `incoming` fit in `capacity`; nil
    /// when `incoming` cannot fit even in an otherwise empty cache.
    public static func cacheEntriesToEvict(
        _ entries: [CacheEntry], reserved: UInt64, incoming: UInt64, capacity: UInt64
    ) -> [String]? {
        guard reserved <= capacity, incoming <= capacity - reserved else { return nil }
        var used = reserved + entries.reduce(0) { $0 + $1.size }
        let ordered = entries.sorted { a, b in
            a.lastUsed != b.lastUsed ? a.lastUsed < b.lastUsed : a.key < b.key
        }
        var victims: [String] = []
        for entry in ordered where used + incoming > capacity {
            victims.append(entry.key)
            used -= entry.size
        }
        return victims
    }
}
