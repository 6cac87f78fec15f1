// A set of unit indexes of one file as a bitmap: which units have arrived at least once, and which
// are written to a disk cache entry in progress. A 1 GiB file of 256 KiB units needs 512 bytes.

struct UnitSet: Sendable, Equatable {
    /// Number of units the set can hold (indexes 0..<capacity).
    let capacity: Int
    private var words: [UInt64]
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = capacity
        words = Array(repeating: 0, count: (capacity + 63) / 64)
    }

    var isFull: Bool { count == capacity }

    func contains(_ unit: Int) -> Bool {
        guard unit >= 0, unit < capacity else { return false }
        return words[unit >> 6] & (1 << UInt64(unit & 63)) != 0
    }

    mutating func insert(_ units: Range<Int>) {
        for unit in units.clamped(to: 0..<capacity) where !contains(unit) {
            words[unit >> 6] |= 1 << UInt64(unit & 63)
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
