// The units of one file (UnitGrid: how its bytes are cut), and a set of unit indexes as a bitmap
// (UnitSet): which units have arrived at least once, and which are written to a disk cache entry
// in progress. A 1 GiB file of 256 KiB units needs 512 bytes. The bitmap's words are kept in a
// dictionary, allocated as units arrive: a file's size is the server's word (up to
// ServerLimits.maxFileSize, 2^53 bytes), and a dense bitmap of such a file would take gigabytes at
// `open`. Plain values: they live in ContentState, behind FileReader's lock.

struct UnitSet: Sendable, Equatable {
    /// Number of units the set can hold (indexes 0..<capacity).
    let capacity: Int
    /// Word index -> 64 units; absent words are empty.
    private var words: [Int: UInt64] = [:]
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 0)
    }

    var isFull: Bool { count == capacity }

    func contains(_ unit: Int) -> Bool {
        guard unit >= 0, unit < capacity, let word = words[unit >> 6] else { return false }
        return word & (1 << UInt64(unit & 63)) != 0
    }

    mutating func insert(_ units: Range<Int>) {
        for unit in units.clamped(to: 0..<capacity) where !contains(unit) {
            words[unit >> 6, default: 0] |= 1 << UInt64(unit & 63)
            count += 1
        }
    }

    /// The first unit at or after `start` that is not in the set (`capacity` when there is none).
    func firstMissing(from start: Int) -> Int {
        var unit = max(0, start)
        while unit < capacity, contains(unit) { unit += 1 }
        return unit
    }
}

/// How a file of `size` bytes is cut into units of `unitSize` bytes (the last one may be shorter).
struct UnitGrid: Sendable, Equatable {
    let size: UInt64
    let unitSize: UInt64

    /// How many units the file has.
    var count: Int { Int(size / unitSize + (size % unitSize == 0 ? 0 : 1)) }

    /// The units that hold bytes of `range`.
    func units(_ range: Range<UInt64>) -> Range<Int> {
        Int(range.lowerBound / unitSize)..<Int((range.upperBound + unitSize - 1) / unitSize)
    }

    /// The bytes of `units`.
    func unitRange(_ units: Range<Int>) -> Range<UInt64> {
        UInt64(units.lowerBound) * unitSize..<min(UInt64(units.upperBound) * unitSize, size)
    }

    /// The unit holding the byte at `offset`.
    func unit(at offset: UInt64) -> Int { Int(offset / unitSize) }
}
