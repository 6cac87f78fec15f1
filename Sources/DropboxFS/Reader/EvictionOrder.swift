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
