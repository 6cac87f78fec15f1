// list_folder/continue past a listing (change pages) in the in-memory Dropbox's adversarial modes.
// Changes must be applied in order, so only what keeps their meaning varies: irregular page sizes
// with empty pages (pages), entries on unrelated paths swapped (shuffle), the previous page's last
// change again when nothing since touched its branch (repeats), `deleted` entries for paths that
// never existed (ghostDeletes), re-cased ancestors in path_display (caseDrift). Every choice
// derives from the seed, the cursor's journal position and its turn, so a cursor replays.

import DropboxAPI

extension InMemoryDropboxStore {
    /// The modes that change what continue serves past a listing (lateParents, fold and replace
    /// act when changes are journalled).
    static let changePageModes: AdversarialModes = [.shuffle, .pages, .repeats, .caseDrift, .ghostDeletes]

    /// The next change page for `cursor`, from `changes`, the journal after its position.
    func adversarialChangePage(_ changes: ArraySlice<Metadata>, cursor: ListingCursor) -> ListFolderResult {
        let turn = cursor.turn ?? 0
        var random = adversarialRandom(
            0x4348_414E, UInt64(cursor.seq), UInt64(turn), FileContent.seed(for: cursor.scope),
            cursor.recursive ? 1 : 0)
        var budget = cursor.limit
        if adversarial.contains(.pages) {
            // Empty pages only on even turns, never two in a row, so a chain of continue calls moves on.
            budget = Self.irregularPageSize(limit: cursor.limit, allowEmpty: turn % 2 == 0, &random)
        }
        var repeated: Metadata?
        if adversarial.contains(.repeats), budget >= 2, Bool.random(using: &random), let lastSeq = cursor.lastSeq {
            repeated = repeatable(at: lastSeq, upTo: cursor.seq)
            if repeated != nil { budget -= 1 }
        }
        var ghosts = 0
        if adversarial.contains(.ghostDeletes), budget >= 2, Int.random(in: 0..<3, using: &random) == 0 {
            ghosts = Int.random(in: 1...min(2, budget - 1), using: &random)
            budget -= ghosts
        }

        var fresh = [(seq: Int, change: Metadata)]()
        var hasMore = false
        // Entries outside the scope are passed over too, so the cursor moves past them.
        var examined = 0
        for change in changes {
            if Self.belongs(change, to: cursor) {
                if fresh.count == budget {
                    hasMore = true
                    break
                }
                fresh.append((cursor.seq + examined + 1, change))
            }
            examined += 1
        }
        if adversarial.contains(.shuffle) { Self.swapUnrelated(&fresh, &random) }

        var out = fresh.map(\.change)
        if !fresh.isEmpty {
            for _ in 0..<ghosts {
                guard let ghost = ghostDelete(near: out, cursor, &random) else { continue }
                out.insert(ghost, at: Int.random(in: 0...out.count, using: &random))
            }
            if let repeated { out.insert(repeated, at: 0) }
        }
        if adversarial.contains(.caseDrift) {
            out = out.map { Self.caseDrifted($0, &random) }
        }
        var next = cursor
        next.seq = cursor.seq + examined
        next.turn = turn + 1
        next.lastSeq = fresh.last?.seq
        return ListFolderResult(entries: out, cursor: next.encoded, hasMore: hasMore)
    }

    /// The journal entry at `seq` when repeating it after everything up to `current` changes
    /// nothing: no entry in between lies on its branch.
    private func repeatable(at seq: Int, upTo current: Int) -> Metadata? {
        guard let later = changes(after: seq - 1), let entry = later.first, let key = entry.pathLower else {
            return nil
        }
        for change in later.dropFirst().prefix(current - seq) {
            guard let other = change.pathLower, !Self.related(key, other) else { return nil }
        }
        return entry
    }

    /// Reorders changes at random, moving each one earlier only past changes on unrelated paths,
    /// so any two changes on one branch keep their order.
    private static func swapUnrelated(_ changes: inout [(seq: Int, change: Metadata)], _ random: inout SplitMix) {
        var out = [(seq: Int, change: Metadata)]()
        out.reserveCapacity(changes.count)
        for item in changes {
            let key = item.change.pathLower ?? ""
            var position = out.count
            var steps = Int.random(in: 0...out.count, using: &random)
            while steps > 0, position > 0, !related(out[position - 1].change.pathLower ?? "", key) {
                position -= 1
                steps -= 1
            }
            out.insert(item, at: position)
        }
        changes = out
    }

    /// A ghost delete within the cursor's scope: in its folder, in the live folder holding one of
    /// `page`'s changes, or (recursive cursors) in a folder that does not exist.
    private func ghostDelete(near page: [Metadata], _ cursor: ListingCursor, _ random: inout SplitMix) -> Metadata? {
        var parent = (key: cursor.scope, display: displayPath(of: cursor.scope))
        if cursor.recursive {
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                let near = DropboxPath.parent(of: page.randomElement(using: &random)?.pathLower ?? "")
                if DropboxPath.isWithin(near, cursor.scope), entries[near]?.isFolder == true {
                    parent = (near, displayPath(of: near))
                }
            case 1:
                parent = ghostFolder(below: cursor.scope, &random)
            default:
                break
            }
        }
        return ghostDelete(in: parent.key, display: parent.display, &random)
    }
}
