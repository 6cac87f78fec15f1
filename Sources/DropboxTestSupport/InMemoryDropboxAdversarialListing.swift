// list_folder in the in-memory Dropbox's adversarial modes: the listing is laid out once, when it is
// snapshotted, from the seed and the snapshot's number, so every page a cursor asks for replays.
// Order: a random half of the folders after their subtree (lateParents), bogus entries of the other
// kind before the real ones (replace), `deleted` entries for paths that never existed
// (ghostDeletes); then pages of irregular size (pages), each shuffled (shuffle) and starting with
// the previous page's last entries (repeats); then re-cased ancestors in path_display (caseDrift).
// Applying the pages in order with the contract's rules (docs/DROPBOX-API.md, "Delta semantics")
// still gives the tree.

import DropboxAPI

extension InMemoryDropboxStore {
    /// The modes that change what list_folder serves (`fold` changes the keys, not the listing).
    static let listingModes: AdversarialModes = AdversarialModes.all.subtracting(.fold)

    /// One entry of an adversarial listing.
    private struct Listed {
        var metadata: Metadata
        /// For a bogus entry, the key of the real entry it stands in front of: it must come before
        /// every real entry at or below that key, and it is never repeated.
        var bogusFor: String?
    }

    /// Snapshots the listing `start` describes, laid out adversarially, and serves its first page;
    /// `deleted` (include_deleted) come after the live entries, before any mode moves them.
    mutating func adversarialListing(_ start: ListingCursor, deleted: [Metadata]) -> ListFolderResult {
        let id = nextSnapshot
        nextSnapshot += 1
        var random = adversarialRandom(0x4C49_5354, UInt64(id))
        var (items, blockStart, folders) = listingOrder(start, &random)
        items += deleted.map { Listed(metadata: $0) }
        if adversarial.contains(.replace) {
            items = withBogusEntries(items, blockStart: blockStart, start, &random)
        }
        if adversarial.contains(.ghostDeletes) {
            items = withGhostDeletes(items, folders: folders, start, &random)
        }
        let pages = laidOut(items, limit: start.limit, &random)
        var snapshot = ListingSnapshot(entries: [], pageStarts: [])
        snapshot.entries.reserveCapacity(items.count)
        let drifts = adversarial.contains(.caseDrift)
        for page in pages {
            snapshot.pageStarts?.append(snapshot.entries.count)
            for item in page {
                snapshot.entries.append(drifts ? Self.caseDrifted(item.metadata, &random) : item.metadata)
            }
        }
        var cursor = start
        if pages.count > 1 {
            snapshots[id] = snapshot
            snapshots.removeValue(forKey: id - Self.keptSnapshots)
            cursor.snapshot = id
        }
        return page(of: snapshot, at: cursor)
    }

    /// The listed entries with each folder's block (itself and its subtree) contiguous: pre-order,
    /// except that with lateParents a random half of the folders come after their subtree. Also
    /// where each entry's block starts, and the listed folders (the scope included, as a key and a
    /// display path) for ghost deletes.
    private func listingOrder(
        _ cursor: ListingCursor, _ random: inout SplitMix
    )
        -> (items: [Listed], blockStart: [String: Int], folders: [(key: String, display: String)])
    {
        enum Step {
            case enter(String)
            case emit(String)
        }
        var items = [Listed]()
        var blockStart = [String: Int]()
        var folders = [(key: cursor.scope, display: displayPath(of: cursor.scope))]
        let late = cursor.recursive && adversarial.contains(.lateParents)
        var stack: [Step]
        if cursor.recursive, !cursor.scope.isEmpty {
            stack = [.enter(cursor.scope)]
        } else {
            stack = sortedChildren(of: cursor.scope).reversed().map { .enter($0) }
        }
        while let step = stack.popLast() {
            switch step {
            case .emit(let key):
                if let metadata = entries[key]?.metadata { items.append(Listed(metadata: metadata)) }
            case .enter(let key):
                guard let entry = entries[key] else { continue }
                if cursor.hidesNonDownloadable, Self.isNonDownloadable(entry.metadata) { continue }
                blockStart[key] = items.count
                guard entry.isFolder else {
                    items.append(Listed(metadata: entry.metadata))
                    continue
                }
                if key != cursor.scope, let display = entry.metadata.pathDisplay { folders.append((key, display)) }
                let children = cursor.recursive ? sortedChildren(of: key).reversed().map { Step.enter($0) } : []
                if late, Bool.random(using: &random) {
                    stack.append(.emit(key))
                    stack.append(contentsOf: children)
                } else {
                    items.append(Listed(metadata: entry.metadata))
                    stack.append(contentsOf: children)
                }
            }
        }
        return (items, blockStart, folders)
    }

    /// `items` with bogus entries for about one in 25 of them (not the listed folder itself): a file
    /// where a folder really is, or a folder (with, in a recursive listing, a bogus file inside it)
    /// where a file really is, each somewhat before the real entry's block.
    private func withBogusEntries(
        _ items: [Listed], blockStart: [String: Int], _ cursor: ListingCursor, _ random: inout SplitMix
    ) -> [Listed] {
        let candidates = items.indices.filter { items[$0].metadata.pathLower != cursor.scope }
        guard !candidates.isEmpty else { return items }
        var chosen = Set<Int>()
        for _ in 0..<max(1, candidates.count / 25) {
            chosen.insert(candidates.randomElement(using: &random) ?? 0)
        }
        var inserts = [(position: Int, entries: [Listed])]()
        for index in chosen.sorted() {
            let real = items[index].metadata
            guard let key = real.pathLower, let display = real.pathDisplay, let start = blockStart[key] else {
                continue
            }
            let bogus = Self.bogusEntries(for: real, key: key, display: display, withChild: cursor.recursive, &random)
            let position = Int.random(in: max(0, start - 2 * cursor.limit)...start, using: &random)
            inserts.append((position, bogus.map { Listed(metadata: $0, bogusFor: key) }))
        }
        return Self.merged(items, inserts)
    }

    /// A bogus entry of the other kind at `real`'s path: a file for a folder, a folder (and
    /// optionally a file inside it) for a file. Ids and revs cannot clash with real ones.
    private static func bogusEntries(
        for real: Metadata, key: String, display: String, withChild: Bool, _ random: inout SplitMix
    ) -> [Metadata] {
        let id = "id:bogus" + String(random.next() % 1_000_000_000_000)
        switch real {
        case .folder:
            return [.file(bogusFile(name: real.name, key: key, display: display, id: id, &random))]
        case .file:
            var bogus: [Metadata] = [
                .folder(FolderMetadata(name: real.name, id: id, pathLower: key, pathDisplay: display))
            ]
            if withChild {
                let name = "bogus-\(random.next() % 1_000_000_000).tmp"
                let child = bogusFile(
                    name: name, key: key + "/" + name, display: display + "/" + name, id: id + "c", &random)
                bogus.append(.file(child))
            }
            return bogus
        case .deleted:
            return []
        }
    }

    private static func bogusFile(
        name: String, key: String, display: String, id: String, _ random: inout SplitMix
    )
        -> FileMetadata
    {
        let time = DropboxTimestamp(secondsSinceEpoch: 1_600_000_000)
        let rev = "b" + String(random.next() % (1 << 60), radix: 16)
        return FileMetadata(
            name: name, id: id, pathLower: key, pathDisplay: display, clientModified: time, serverModified: time,
            rev: rev.count >= 9 ? rev : rev + String(repeating: "0", count: 9 - rev.count),
            size: random.next() % 1000)
    }

    /// `items` with about one ghost delete per 30 entries (at least one) at random places: in a
    /// listed folder, or (recursive listings only) in a folder that does not exist.
    private func withGhostDeletes(
        _ items: [Listed], folders: [(key: String, display: String)], _ cursor: ListingCursor,
        _ random: inout SplitMix
    ) -> [Listed] {
        var inserts = [(position: Int, entries: [Listed])]()
        for _ in 0..<max(1, items.count / 30) {
            var parent = (key: cursor.scope, display: displayPath(of: cursor.scope))
            if cursor.recursive {
                parent = folders.randomElement(using: &random) ?? parent
                if Bool.random(using: &random) { parent = ghostFolder(below: parent.key, &random) }
            }
            guard let ghost = ghostDelete(in: parent.key, display: parent.display, &random) else { continue }
            inserts.append((Int.random(in: 0...items.count, using: &random), [Listed(metadata: ghost)]))
        }
        return Self.merged(items, inserts)
    }

    /// `items` with each insert's entries placed before the item at its position (at the end for
    /// `items.count`); inserts at one position keep their order.
    private static func merged(_ items: [Listed], _ inserts: [(position: Int, entries: [Listed])]) -> [Listed] {
        var byPosition = [Int: [Listed]]()
        for insert in inserts { byPosition[insert.position, default: []] += insert.entries }
        var out = [Listed]()
        out.reserveCapacity(items.count + inserts.count * 2)
        for (index, item) in items.enumerated() {
            out += byPosition[index] ?? []
            out.append(item)
        }
        out += byPosition[items.count] ?? []
        return out
    }

    /// The pages: `limit` entries each, or irregular sizes (pages); each page's new entries
    /// shuffled (shuffle), with the previous page's last 1-3 entries in front (repeats). A page
    /// never holds more than `limit` entries, and every page but an empty one brings a new entry,
    /// so the listing ends.
    private func laidOut(_ items: [Listed], limit: Int, _ random: inout SplitMix) -> [[Listed]] {
        var pages = [[Listed]]()
        var next = 0
        repeat {
            var size = limit
            if adversarial.contains(.pages) {
                size = Self.irregularPageSize(limit: limit, allowEmpty: true, &random)
            }
            var page = [Listed]()
            if adversarial.contains(.repeats), size >= 2, let previous = pages.last {
                var repeatable = previous.suffix(min(Int.random(in: 1...3, using: &random), size - 1))
                if let bogus = repeatable.lastIndex(where: { $0.bogusFor != nil }) {
                    repeatable = repeatable[(bogus + 1)...]
                }
                page += repeatable
                size -= repeatable.count
            }
            var fresh = Array(items[next..<min(next + size, items.count)])
            next += fresh.count
            if adversarial.contains(.shuffle) {
                fresh.shuffle(using: &random)
                Self.putBogusFirst(&fresh)
            }
            page += fresh
            pages.append(page)
        } while next < items.count
        return pages
    }

    /// Moves each bogus entry that a shuffle put after a real entry at or below its path to just
    /// before the first such entry. Bogus entries need nothing before them, so moving one earlier
    /// breaks no other rule.
    private static func putBogusFirst(_ page: inout [Listed]) {
        var index = 0
        while index < page.count {
            if let key = page[index].bogusFor,
                let first = page[..<index].firstIndex(where: {
                    $0.bogusFor == nil && $0.metadata.isEntry && DropboxPath.isWithin($0.metadata.pathLower ?? "", key)
                })
            {
                let bogus = page.remove(at: index)
                page.insert(bogus, at: first)
            }
            index += 1
        }
    }
}

extension Metadata {
    /// A file or folder (not a `deleted` entry).
    fileprivate var isEntry: Bool {
        if case .deleted = self { return false }
        return true
    }
}
