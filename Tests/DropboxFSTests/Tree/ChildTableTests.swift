// A folder's child table (Tree/ChildTable.swift), which stores indices and hashes but no keys, and
// the tree's use of it: random inserts and removals against a dictionary with hashes forced to
// collide (long probe runs that wrap around the table end, the cases backward-shift deletion must
// get right), the key check that avoids folding ASCII names, children whose Dropbox key is not our
// folding (OddKeys), and the node's size, which sets the memory per entry.

import DropboxAPI
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct ChildTableTests {
        /// A tiny deterministic generator (the test must replay the same operations).
        struct Steps {
            var state: UInt64
            mutating func next(_ bound: Int) -> Int {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Int((state >> 33) % UInt64(bound))
            }
        }

        @Test(arguments: [1, 3, 17, 1 << 20])
        func randomInsertsAndRemovalsMatchADictionary(hashRange: Int) {
            var table = ChildTable()
            var expected: [UInt32: UInt32] = [:]  // child -> hash
            var steps = Steps(state: UInt64(hashRange))
            // Hashes near the top of the range land at the table's end, so runs wrap to slot 0.
            func hash(of child: UInt32) -> UInt32 { UInt32.max - UInt32(Int(child) % hashRange) }
            for step in 0..<4000 {
                let child = UInt32(1 + steps.next(300))
                if expected[child] == nil, steps.next(3) != 0 {
                    table.insert(child, hash: hash(of: child))
                    expected[child] = hash(of: child)
                } else if expected[child] != nil {
                    let removed = table.remove(child, hash: hash(of: child))
                    #expect(removed)
                    expected[child] = nil
                } else {
                    let removed = table.remove(child, hash: hash(of: child))
                    #expect(!removed, "step \(step): removing an absent child")
                }
                if step % 50 == 0 || hashRange <= 3 {
                    #expect(Int(table.count) == expected.count)
                    #expect(Set(table.children) == Set(expected.keys))
                    for candidate in UInt32(1)...300 {
                        let found = table.find(hash: hash(of: candidate)) { $0 == candidate }
                        #expect(found == (expected[candidate] != nil ? candidate : nil), "step \(step), child \(candidate)")
                    }
                }
            }
            for (child, hash) in table.entries { #expect(expected[child] == hash) }
        }

        @Test func emptiedTableHoldsNoStorageAndReservesAtOnce() {
            var table = ChildTable()
            table.reserveCapacity(1000)
            for child in UInt32(1)...1000 { table.insert(child, hash: child &* 2_654_435_761) }
            #expect(table.count == 1000)
            for child in UInt32(1)...1000 {
                let removed = table.remove(child, hash: child &* 2_654_435_761)
                #expect(removed)
            }
            #expect(table.isEmpty && table.children.isEmpty && table.entries.isEmpty)
            #expect(table.find(hash: 2_654_435_761) { _ in true } == nil)
        }

        @Test(arguments: [
            "readme.txt", "README.TXT", "ReadMe.Txt", "IMG_0001.JPG", "a", "Z", "", "file 1 (copy).md",
            "Café.txt", "café.txt", "cafe\u{301}.txt", "CAFE\u{301}.TXT", "ΣΣΣ.txt", "Straße", "İstanbul",
            "写真", "😀 emoji", "A\u{7F}b", "x" + String(repeating: "Y", count: 200),
            // An ASCII letter composing with the mark after it, the length unchanged by the fold.
            "a\u{308}\u{130}", "A\u{308}",
        ])
        func foldsAgreesWithFoldKey(name: String) {
            let candidates = [
                FoldKey(name).folded, name, name.lowercased(), name.uppercased(), "readme.txt", "café.txt", "σσσ.txt",
                FoldKey(name).folded + "x", String(FoldKey(name).folded.dropLast()), "ä", "äi\u{307}",
            ]
            for candidate in candidates {
                let key = FoldKey(alreadyFolded: Substring(candidate))
                #expect(FoldKey.folds(name, to: key) == (FoldKey(name) == key), "\(name) against \(candidate)")
            }
        }

        /// Listings sort names by their bytes with memcmp; the order is the UTF-8 byte order.
        @Test func namesSortByTheirBytes() {
            let names = [
                "", "a", "A", "ab", "a b", "abc", "b", "Z", "é", "e\u{301}", "写真", "😀", "\u{7F}", "a\u{0}", "aa",
                String(repeating: "x", count: 300), String(repeating: "x", count: 299) + "y",
            ]
            for a in names {
                for b in names {
                    #expect(precedesUTF8(a, b) == a.utf8.lexicographicallyPrecedes(b.utf8), "\(a) < \(b)")
                }
            }
        }

        static let time = DropboxTimestamp(secondsSinceEpoch: 1_600_000_000)

        static func file(_ name: String) -> Metadata {
            .file(
                FileMetadata(
                    name: name, id: "id:\(name)", pathLower: "/\(name)", pathDisplay: "/\(name)",
                    clientModified: time, serverModified: time, rev: "0123456789", size: 1))
        }

        /// Children keyed by Dropbox otherwise than we fold them (final sigma, a key that is no
        /// folding at all) are found by name and by key, keep their key through a rename, and leave
        /// nothing behind when removed; their plain neighbours are unaffected.
        @Test func childrenWithOddKeys() {
            var tree = MetadataTree(folderTime: 0)
            var invalidations: [Invalidation] = []
            let root = MetadataTree.rootIndex
            let entries: [(key: String, name: String)] = [
                ("σσς.txt", "ΣΣΣ.txt"), ("weird-key", "Plain.txt"), ("plain.txt", "PLAIN.TXT"), ("notes", "notes"),
            ]
            var indices: [String: UInt32] = [:]
            for (key, name) in entries {
                let index = tree.upsert(
                    parent: root, key: FoldKey(alreadyFolded: Substring(key)), name: NodeName(name)!,
                    metadata: Self.file(name), invalidations: &invalidations)
                indices[key] = index
            }
            #expect(Set(tree.folders[Int(tree.nodes[Int(root)].folderSlot)].children.children) == Set(indices.values))
            for (key, name) in entries {
                let index = indices[key]!
                #expect(tree.lookup(parent: root, key: FoldKey(alreadyFolded: Substring(key))) == .found(index))
                #expect(tree.lookup(parent: root, name: name, fold: FoldKey(name)) == .found(index), "\(name)")
                #expect(tree.key(of: index)?.folded == key)
            }
            // "Plain.txt" is filed under "weird-key": its folding finds "PLAIN.TXT"'s key instead,
            // whose name differs, so a lookup by the folding alone must not answer it.
            #expect(tree.lookup(parent: root, key: FoldKey("Plain.txt")) == .found(indices["plain.txt"]!))
            #expect(tree.lookup(parent: root, name: "plain.txt", fold: FoldKey("plain.txt")) == .unknown)

            // A rename of the odd child keeps its key and moves its by-name record.
            tree.upsert(
                parent: root, key: FoldKey(alreadyFolded: "weird-key"), name: NodeName("Other.txt")!,
                metadata: Self.file("Other.txt"), invalidations: &invalidations)
            #expect(tree.lookup(parent: root, name: "Other.txt", fold: FoldKey("Other.txt")) == .found(indices["weird-key"]!))
            #expect(tree.lookup(parent: root, name: "Plain.txt", fold: FoldKey("Plain.txt")) == .unknown)
            #expect(tree.key(of: indices["weird-key"]!)?.folded == "weird-key")

            // Removing the odd ones leaves the plain ones found, and no odd record behind.
            tree.remove(parent: root, key: FoldKey(alreadyFolded: "weird-key"), invalidations: &invalidations)
            tree.remove(indices["σσς.txt"]!, invalidations: &invalidations)
            #expect(tree.lookup(parent: root, key: FoldKey(alreadyFolded: "weird-key")) == .unknown)
            #expect(tree.lookup(parent: root, name: "ΣΣΣ.txt", fold: FoldKey("ΣΣΣ.txt")) == .unknown)
            #expect(tree.folders[Int(tree.nodes[Int(root)].folderSlot)].odd == nil)
            #expect(tree.lookup(parent: root, name: "PLAIN.TXT", fold: FoldKey("PLAIN.TXT")) == .found(indices["plain.txt"]!))
            #expect(tree.lookup(parent: root, name: "notes", fold: FoldKey("notes")) == .found(indices["notes"]!))
        }

        /// Folders with non-ASCII names are found by key without folding their names (their own key
        /// is kept); one with an odd key answers that key.
        @Test func foldersWithNonASCIINames() {
            var tree = MetadataTree(folderTime: 0)
            var invalidations: [Invalidation] = []
            let root = MetadataTree.rootIndex
            func folder(_ key: String, _ name: String) -> UInt32? {
                tree.upsert(
                    parent: root, key: FoldKey(alreadyFolded: Substring(key)), name: NodeName(name)!,
                    metadata: .folder(FolderMetadata(name: name, id: "id:\(key)", pathLower: "/\(key)", pathDisplay: "/\(name)")),
                    invalidations: &invalidations)
            }
            let donnees = folder("données", "Données")!
            let odd = folder("odd-key", "Été")!
            let plain = folder("plain", "Plain")!
            #expect(tree.lookup(parent: root, key: FoldKey(alreadyFolded: "données")) == .found(donnees))
            #expect(tree.lookup(parent: root, key: FoldKey("DONNÉES")) == .found(donnees))
            #expect(tree.lookup(parent: root, key: FoldKey(alreadyFolded: "odd-key")) == .found(odd))
            #expect(tree.lookup(parent: root, key: FoldKey(alreadyFolded: "été")) == .unknown)
            #expect(tree.lookup(parent: root, name: "Données", fold: FoldKey("Données")) == .found(donnees))
            #expect(tree.key(of: donnees)?.folded == "données")
            #expect(tree.key(of: odd)?.folded == "odd-key")
            #expect(tree.key(of: plain)?.folded == "plain")
            #expect(tree.folder(atKeyPath: "/données") == donnees)
            // Renamed (same key, another spelling): still found by its key and its new name.
            _ = folder("données", "DONNÉES")
            #expect(tree.lookup(parent: root, key: FoldKey(alreadyFolded: "données")) == .found(donnees))
            #expect(tree.lookup(parent: root, name: "DONNÉES", fold: FoldKey("DONNÉES")) == .found(donnees))
        }

        /// A relisted complete folder that shows a case-only (or normalisation-only) rename
        /// invalidates the new spelling as well as the old: the kernel may hold a "no such name"
        /// for it, answered from the complete folder before the rename. It used to invalidate only
        /// the old name, so the new one stayed ENOENT for the negative timeout while `ls` showed it.
        @Test func aRenameInACompleteFolderInvalidatesTheNewName() {
            var tree = MetadataTree(folderTime: 0)
            var invalidations: [Invalidation] = []
            let root = MetadataTree.rootIndex
            tree.setComplete(root, true, at: 0)
            let index = tree.upsert(
                parent: root, key: FoldKey("report.txt"), name: NodeName("report.txt")!,
                metadata: Self.file("report.txt"), invalidations: &invalidations)
            invalidations = []
            let renamed = tree.upsert(
                parent: root, key: FoldKey("report.txt"), name: NodeName("Report.TXT")!,
                metadata: Self.file("Report.TXT"), invalidations: &invalidations)
            #expect(renamed == index)
            #expect(invalidations.contains(.entry(parent: UInt64(root), name: "report.txt")))
            #expect(invalidations.contains(.entry(parent: UInt64(root), name: "Report.TXT")))
        }

        /// After a cursor reset without prefetch every folder is marked incomplete and listed
        /// again when next needed; the kernel may still hold "no such name" answers the folder gave
        /// while it was complete, so names that listing finds new are invalidated. They used to
        /// be skipped (only complete folders invalidate new names), and a file created while the
        /// cursor was lost stayed ENOENT for the negative timeout although `ls` showed it.
        @Test func aFolderListedAgainAfterAResetInvalidatesItsNewNames() {
            var t = LiveTree.State(tree: MetadataTree(folderTime: 0))
            var invalidations: [Invalidation] = []
            let root = MetadataTree.rootIndex
            t.replaceChildren(of: root, with: [Self.file("old.txt")], snapshot: 1, at: 1, invalidations: &invalidations)
            t.tree.markAllIncomplete()
            invalidations = []
            t.replaceChildren(
                of: root, with: [Self.file("old.txt"), Self.file("new.txt")], snapshot: 2, at: 2, invalidations: &invalidations)
            #expect(invalidations.contains(.entry(parent: UInt64(root), name: "new.txt")))
            #expect(
                !invalidations.contains(.entry(parent: UInt64(root), name: "old.txt")),
                "unchanged names are not invalidated")
        }

        /// A stored tree whose odd-key flag is wrong (a damaged file): an ASCII name is checked at
        /// load, so its child is found by its key; a non-ASCII one is trusted, and removing it still
        /// takes its index out of the folder's table (no released index left behind).
        @Test func restoredKeysWithAWrongFlag() throws {
            var tree = MetadataTree(folderTime: 0)
            var scan = RestoreScan()
            let records: [(name: String, key: String?)] = [("Plain.txt", "weird"), ("Été", "odd"), ("b.txt", nil)]
            for (offset, record) in records.enumerated() {
                try tree.restore(
                    Node(parent: MetadataTree.rootIndex, name: record.name, kind: .file), at: UInt32(2 + offset),
                    key: record.key, oddKey: false, symlinkTarget: nil, scan: &scan)
            }
            try tree.finishRestore(scan, at: 0)
            let root = MetadataTree.rootIndex
            #expect(tree.lookup(parent: root, key: FoldKey(alreadyFolded: "weird")) == .found(2))
            #expect(tree.lookup(parent: root, name: "Plain.txt", fold: FoldKey("Plain.txt")) == .found(2))
            #expect(tree.key(of: 2)?.folded == "weird")
            #expect(tree.lookup(parent: root, key: FoldKey(alreadyFolded: "b.txt")) == .found(4))
            var invalidations: [Invalidation] = []
            tree.remove(3, invalidations: &invalidations)
            #expect(Set(tree.folders[Int(tree.nodes[Int(root)].folderSlot)].children.children) == [2, 4])
            #expect(tree.node(3) == nil)
        }

        /// The node is what a million entries cost most: 120 bytes (136 with 64-bit generation
        /// and lookup count, 128 with 64-bit times). Growing it is a decision for
        /// docs/PERFORMANCE.md, not an accident.
        @Test func nodeSize() {
            #expect(MemoryLayout<Node>.stride <= 120)
            #expect(MemoryLayout<ChildTable>.size <= 12)
        }

        @Test func lookupCountsSaturateAndForgetReleases() {
            var tree = MetadataTree(folderTime: 0)
            var invalidations: [Invalidation] = []
            let index = tree.upsert(
                parent: MetadataTree.rootIndex, key: FoldKey("a"), name: NodeName("a")!, metadata: Self.file("a"),
                invalidations: &invalidations)!
            tree.addLookup(index, count: UInt64(UInt32.max) + 5)
            #expect(tree.nodes[Int(index)].lookups == UInt32.max)
            tree.forget(index, count: 7)
            #expect(tree.nodes[Int(index)].lookups == UInt32.max - 7)
            tree.forget(index, count: UInt64.max)
            #expect(tree.nodes[Int(index)].lookups == 0)
        }

        /// A forget of a node the kernel holds no reference to (released already, or never looked
        /// up: a kernel forgetting more than it looked up) changes nothing. It used to release the
        /// node again, putting its index on the free list twice, so that two new entries were
        /// later given one inode number.
        @Test func aForgetOfAReleasedNodeFreesItsIndexOnlyOnce() {
            var tree = MetadataTree(folderTime: 0)
            var invalidations: [Invalidation] = []
            func add(_ name: String) -> UInt32 {
                tree.upsert(
                    parent: MetadataTree.rootIndex, key: FoldKey(name), name: NodeName(name)!,
                    metadata: Self.file(name), invalidations: &invalidations)!
            }
            let held = add("held")
            let unheld = add("unheld")
            tree.addLookup(held)
            tree.remove(held, invalidations: &invalidations)  // kept: the kernel holds it
            tree.remove(unheld, invalidations: &invalidations)  // released at once
            tree.forget(held, count: 2)  // one more than held: released
            tree.forget(held, count: 1)
            tree.forget(unheld, count: 1)
            #expect(tree.freeList.sorted() == [held, unheld].sorted())
            let added = ["a", "b", "c", "d"].map(add)
            #expect(Set(added).count == added.count, "one inode number for two entries: \(added)")
        }

        @Test func generationsWrapPastZero() {
            var tree = MetadataTree(folderTime: 0)
            tree.nextGeneration = UInt32.max
            #expect(tree.takeGeneration() == UInt32.max)
            #expect(tree.takeGeneration() == 1)
        }
    }
}
