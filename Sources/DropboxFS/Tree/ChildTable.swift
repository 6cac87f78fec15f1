// A folder's children by Dropbox's key for them, holding node indices only. A Swift dictionary
// keyed by FoldKey stored a 16-byte String per child (and a heap copy of every key that is not the
// name itself), at about 36 bytes per entry with its load factor; this table stores 8 bytes per
// slot: the key's 32-bit hash and the child's index. The key itself is not stored: it is the
// child's name folded (FoldKey), or for the few children Dropbox keys otherwise, the folder's
// OddKeys record, and the caller says whether a candidate is the one it looks for
// (MetadataTree.child(inSlot:key:hash:)). The hash tag makes a wrong candidate nearly always rejected without
// looking at its name. Hashes come from Swift's Hasher, seeded per process, so names chosen by a
// hostile server cannot be made to collide. Open addressing with linear probing and backward-shift
// deletion (no tombstones); at most 3/4 full. Guarded by whatever guards the tree (LiveTree.state).

struct ChildTable {
    /// Each slot: the key's hash in the high 32 bits, the child's node index in the low 32; 0 is
    /// empty (index 0 is never a child). Empty until the first child (no allocation).
    private var slots: [UInt64] = []
    private(set) var count: UInt32 = 0

    var isEmpty: Bool { count == 0 }

    /// The hash a key is filed under.
    static func hash(_ key: FoldKey) -> UInt32 {
        var hasher = Hasher()
        hashUTF8(key.folded, into: &hasher)
        let full = UInt64(UInt(bitPattern: hasher.finalize()))
        return UInt32(truncatingIfNeeded: full ^ (full >> 32))
    }

    /// The child filed under `hash` for which `matches` holds.
    @inline(__always)
    func find(hash: UInt32, where matches: (UInt32) -> Bool) -> UInt32? {
        guard count > 0 else { return nil }
        let mask = slots.count - 1
        var i = Int(hash) & mask
        while true {
            let slot = slots[i]
            if slot == 0 { return nil }
            if UInt32(truncatingIfNeeded: slot >> 32) == hash, matches(UInt32(truncatingIfNeeded: slot)) {
                return UInt32(truncatingIfNeeded: slot)
            }
            i = (i + 1) & mask
        }
    }

    /// Files `child` under `hash`. The caller has checked that no child has its key.
    mutating func insert(_ child: UInt32, hash: UInt32) {
        precondition(child != 0, "index 0 is never a child")
        if Int(count + 1) * 4 > slots.count * 3 { grow(toHold: Int(count) + 1) }
        place(UInt64(hash) << 32 | UInt64(child))
        count += 1
    }

    /// Removes `child`, filed under `hash`; false when it is not there.
    @discardableResult
    mutating func remove(_ child: UInt32, hash: UInt32) -> Bool {
        guard count > 0 else { return false }
        let wanted = UInt64(hash) << 32 | UInt64(child)
        let mask = slots.count - 1
        var i = Int(hash) & mask
        while slots[i] != wanted {
            if slots[i] == 0 { return false }
            i = (i + 1) & mask
        }
        vacate(i)
        return true
    }

    /// Removes `child` wherever it is filed, looking at every slot: the fallback when the hash it
    /// was filed under is not known (MetadataTree.detach). False when it is not there.
    @discardableResult
    mutating func remove(_ child: UInt32) -> Bool {
        guard let i = slots.firstIndex(where: { $0 != 0 && UInt32(truncatingIfNeeded: $0) == child }) else { return false }
        vacate(i)
        return true
    }

    /// Empties slot `i`, moving up each later entry of its run that may live there (backward
    /// shift, so no tombstones are needed).
    private mutating func vacate(_ i: Int) {
        let mask = slots.count - 1
        var hole = i
        var j = i
        while true {
            j = (j + 1) & mask
            let slot = slots[j]
            if slot == 0 { break }
            let home = Int(truncatingIfNeeded: slot >> 32) & mask
            // The entry at j may move to the hole unless its home lies cyclically in (hole, j].
            let stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j)
            if !stays {
                slots[hole] = slot
                hole = j
            }
        }
        slots[hole] = 0
        count -= 1
        if count == 0 { slots = [] }
    }

    /// Sizes the table for `capacity` children at once (the load of a stored tree knows each count).
    mutating func reserveCapacity(_ capacity: Int) {
        if capacity * 4 > slots.count * 3 { grow(toHold: capacity) }
    }

    /// Every child with the hash it is filed under, in no particular order.
    var entries: [(child: UInt32, hash: UInt32)] {
        slots.compactMap { $0 == 0 ? nil : (UInt32(truncatingIfNeeded: $0), UInt32(truncatingIfNeeded: $0 >> 32)) }
    }

    /// Every child, in no particular order.
    var children: [UInt32] {
        var out: [UInt32] = []
        out.reserveCapacity(Int(count))
        for slot in slots where slot != 0 { out.append(UInt32(truncatingIfNeeded: slot)) }
        return out
    }

    /// Calls `body` with every child, in no particular order.
    func forEachChild(_ body: (UInt32) -> Void) {
        for slot in slots where slot != 0 { body(UInt32(truncatingIfNeeded: slot)) }
    }

    private mutating func grow(toHold wanted: Int) {
        var capacity = max(4, slots.count)
        while wanted * 4 > capacity * 3 { capacity *= 2 }
        let old = slots
        slots = [UInt64](repeating: 0, count: capacity)
        for slot in old where slot != 0 { place(slot) }
    }

    private mutating func place(_ slot: UInt64) {
        let mask = slots.count - 1
        var i = Int(truncatingIfNeeded: slot >> 32) & mask
        while slots[i] != 0 { i = (i + 1) & mask }
        slots[i] = slot
    }
}
