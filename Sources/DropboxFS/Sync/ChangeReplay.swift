// Listings and the change watcher must never undo each other. A listing is a snapshot taken when
// Dropbox served it; a change batch the watcher applies while that listing is in flight may be newer
// than the snapshot (a deletion the snapshot still shows, a file it does not have yet). So each
// listing notes the change sequence when it starts, and when it applies its result it applies again,
// in order, every change batch recorded since: for the paths those batches touch the newer truth
// wins, every other path takes the listing's. Batches are kept only while a listing is in flight.
// Guarded by SyncEngine.state.

import DropboxAPI

struct ChangeReplay {
    /// Change batches applied so far.
    private(set) var sequence: UInt64 = 0
    /// Batches applied while a listing was in flight, with their sequence numbers.
    private var batches: [(sequence: UInt64, entries: [Metadata])] = []
    /// Listings in flight by the sequence they started at (several may share one).
    private var open: [UInt64: Int] = [:]

    /// A listing starts; returns its ticket for `batches(since:)` and `end`.
    mutating func begin() -> UInt64 {
        open[sequence, default: 0] += 1
        return sequence
    }

    /// The listing of `ticket` has ended (applied, failed or cancelled).
    mutating func end(_ ticket: UInt64) {
        guard let count = open[ticket] else { return }
        open[ticket] = count > 1 ? count - 1 : nil
        guard let oldest = open.keys.min() else {
            batches = []
            return
        }
        batches.removeAll { $0.sequence <= oldest }
    }

    /// A change batch was applied.
    mutating func record(_ entries: [Metadata]) {
        sequence += 1
        if !open.isEmpty && !entries.isEmpty { batches.append((sequence, entries)) }
    }

    /// The batches applied since the listing of `ticket` started, oldest first.
    func batches(since ticket: UInt64) -> [[Metadata]] {
        batches.filter { $0.sequence > ticket }.map(\.entries)
    }
}
