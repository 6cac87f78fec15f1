// Tests of the in-memory Dropbox's adversarial modes: for each mode and for all of them, over
// several seeds, a listing and then change pages, applied with nothing but the contract's rules
// (ReferenceTree), give exactly the fake's own tree; each mode visibly does what it promises, so a
// client test that turns it on really meets that unkindness; and a seed replays.

import DropboxAPI
import DropboxTestSupport
import Testing

extension TestSupportTests {
    @Suite struct InMemoryDropboxAdversarialTests {
        static let singleModes: [AdversarialModes] = [
            .shuffle, .lateParents, .pages, .repeats, .caseDrift, .fold, .ghostDeletes, .replace,
        ]
        static let modes = singleModes + [.all]
        static let seeds: [UInt64] = [1, 7, 2024]

        // MARK: Listings

        @Test(arguments: modes, seeds)
        func listingAppliedByTheRulesIsTheTree(modes: AdversarialModes, seed: UInt64) async throws {
            let fake = Self.tree(modes, seed: seed)
            let listing = try await listAll(fake, ListFolderArg(path: "", recursive: true, limit: 37))
            var applied = ReferenceTree()
            applied.apply(listing.entries)
            #expect(Self.differences(applied, fake) == [])
            Self.expectHonest(listing, limit: 37, fake)
            Self.expectVisibleInListing(modes, listing, fake)
        }

        @Test(arguments: seeds)
        func scopedListingsHoldTheirFolderOnly(seed: UInt64) async throws {
            let fake = Self.tree(.all, seed: seed, entries: 300)
            let scope = try #require(fake.entry("/ΕΛΛΑΣ/Straße")?.pathLower)
            let recursive = try await listAll(fake, ListFolderArg(path: "/ΕΛΛΑΣ/Straße", recursive: true, limit: 3))
            var applied = ReferenceTree()
            applied.apply(recursive.entries)
            #expect(applied.contents.filter { isWithin($0.key, scope) } == Self.live(fake) { isWithin($0, scope) })

            fake.addFile("/ΕΛΛΑΣ/Straße/more.txt", size: 1)
            fake.addFolder("/ΕΛΛΑΣ/Straße/Sub/Deeper")
            let direct = try await listAll(fake, ListFolderArg(path: "/ελλας/strasse", limit: 2))
            var children = ReferenceTree()
            children.apply(direct.entries)
            let isChild = { (key: String) in ReferenceTree.parent(of: key) == scope }
            #expect(children.contents.filter { isChild($0.key) } == Self.live(fake, isChild))
            #expect(direct.entries.allSatisfy { ReferenceTree.parent(of: $0.pathLower ?? "") == scope })
        }

        @Test func aSingleFullPageStillVaries() async throws {
            let fake = InMemoryDropbox(adversarial: .shuffle)
            for i in 0..<20 { fake.addFile("/f\(i)", size: 1) }
            var orders = Set<[String]>()
            for _ in 0..<10 {
                let page = try await fake.listFolder(ListFolderArg(path: "", limit: 2000))
                #expect(!page.hasMore)
                orders.insert(page.entries.map(describe))
            }
            #expect(orders.count > 1)
        }

        @Test func onlyRecentPagedListingsCanBeContinued() async throws {
            let fake = InMemoryDropbox(adversarial: .all)
            for i in 0..<6 { fake.addFile("/d/f\(i)", size: 1) }
            let arg = ListFolderArg(path: "", recursive: true, limit: 1)
            let oldest = try await fake.listFolder(arg)
            for _ in 0..<256 { _ = try await fake.listFolder(arg) }
            let newest = try await fake.listFolder(arg)
            await #expect(throws: DropboxError.cursorReset) { try await fake.listFolderContinue(cursor: oldest.cursor) }
            var applied = ReferenceTree()
            applied.apply(newest.entries + (try await continueAll(fake, from: newest.cursor)).entries)
            #expect(Self.differences(applied, fake) == [])
        }

        // MARK: Changes

        @Test(arguments: modes, seeds)
        func changePagesAppliedOnTheListingAreTheChangedTree(modes: AdversarialModes, seed: UInt64) async throws {
            let fake = Self.tree(modes, seed: seed, entries: 300)
            let listing = try await listAll(fake, ListFolderArg(path: "", recursive: true, limit: 7))
            var applied = ReferenceTree()
            applied.apply(listing.entries)
            var cursor = listing.cursor
            var changes = [Metadata]()
            var pages = [ListFolderResult]()
            for round in 1...2 {
                Self.change(fake, seed: seed, round: round)
                let drained = try await continueAll(fake, from: cursor)
                applied.apply(drained.entries)
                #expect(Self.differences(applied, fake) == [], "after round \(round)")
                (cursor, changes, pages) = (drained.cursor, changes + drained.entries, pages + drained.pages)
            }
            #expect(pages.allSatisfy { $0.entries.count <= 7 })
            Self.expectVisibleInChanges(modes, changes, fake)
        }

        @Test(arguments: seeds)
        func changePagesComeInIrregularSizesWithEmptyOnes(seed: UInt64) async throws {
            let fake = InMemoryDropbox(adversarial: .pages, adversarialSeed: seed)
            fake.addFile("/top.txt", size: 1)
            let start = try await listAll(fake, ListFolderArg(path: "", recursive: true, limit: 5)).cursor
            for i in 0..<300 { fake.addFile("/n/\(i)", size: 1) }
            let drained = try await continueAll(fake, from: start)
            #expect(drained.entries.map(describe) == ["folder:/n"] + (0..<300).map { "file:/n/\($0)" })
            #expect(drained.pages.contains { $0.entries.isEmpty && $0.hasMore })
            #expect(drained.pages.dropLast().contains { (1..<5).contains($0.entries.count) })
            #expect(drained.pages.allSatisfy { $0.entries.count <= 5 })
        }

        @Test(arguments: seeds)
        func shuffledChangesKeepTheOrderOnEachBranch(seed: UInt64) async throws {
            let plain = Self.tree([], seed: seed, entries: 200)
            let shuffled = Self.tree(.shuffle, seed: seed, entries: 200)
            let plainStart = try await listAll(plain, ListFolderArg(path: "", recursive: true)).cursor
            let shuffledStart = try await listAll(shuffled, ListFolderArg(path: "", recursive: true)).cursor
            Self.change(plain, seed: seed, round: 1)
            Self.change(shuffled, seed: seed, round: 1)
            let journal = try await continueAll(plain, from: plainStart).entries
            let served = try await continueAll(shuffled, from: shuffledStart).entries
            #expect(served != journal)
            // Each served entry as its position in the journal (same changes, so same entries).
            var positions = [String: [Int]]()
            for (index, entry) in journal.enumerated() { positions[Self.identity(entry), default: []].append(index) }
            var order = [Int]()
            for entry in served {
                let position = try #require(
                    positions[Self.identity(entry)]?.first, "\(describe(entry)) not in the journal")
                positions[Self.identity(entry)]?.removeFirst()
                order.append(position)
            }
            #expect(order.sorted() == Array(journal.indices))
            for (i, a) in order.enumerated() {
                for b in order[(i + 1)...] where b < a {
                    let (x, y) = (journal[a].pathLower ?? "", journal[b].pathLower ?? "")
                    #expect(
                        !isWithin(x, y) && !isWithin(y, x),
                        "\(describe(journal[b])) moved after \(describe(journal[a]))")
                }
            }
        }

        @Test func lateParentsJournalsSubtreesChildrenFirst() async throws {
            let fake = InMemoryDropbox(adversarial: .lateParents)
            fake.addFile("/A/b.txt", size: 1)
            fake.addFile("/A/Sub/c.txt", size: 1)
            let start = try await listAll(fake, ListFolderArg(path: "", recursive: true)).cursor
            fake.addFile("/New/Deeper/n.txt", size: 1)
            fake.addFolder("/Only/Folders")
            fake.move(from: "/A", to: "/Z/Y")
            #expect(
                try await continueAll(fake, from: start).entries.map(describe) == [
                    "file:/New/Deeper/n.txt", "folder:/New/Deeper", "folder:/New",
                    "folder:/Only/Folders", "folder:/Only",
                    "deleted:/A", "file:/Z/Y/Sub/c.txt", "folder:/Z/Y/Sub", "file:/Z/Y/b.txt", "folder:/Z/Y",
                    "folder:/Z",
                ])
        }

        @Test func replacingJournalsOnlyTheNewEntry() async throws {
            let fake = InMemoryDropbox(adversarial: .replace)
            fake.addFile("/A/b.txt", size: 1)
            fake.addFile("/top.txt", size: 1)
            let start = try await listAll(fake, ListFolderArg(path: "", recursive: true)).cursor
            fake.addFile("/A", size: 2)
            fake.addFolder("/top.txt")
            #expect(try await continueAll(fake, from: start).entries.map(describe) == ["file:/A", "folder:/top.txt"])
        }

        // MARK: Folding, seeds and names

        @Test func foldingIsTheFakesOwnEverywhere() async throws {
            let fake = Self.tree(.fold, seed: 3, entries: 300)
            let expected = [
                "/ΕΛΛΑΣ": "/ελλας", "/ΕΛΛΑΣ/Σ.txt": "/ελλας/σ.txt", "/ΕΛΛΑΣ/Straße": "/ελλας/strasse",
                "/ΕΛΛΑΣ/Straße/İstanbul/ﬁle": "/ελλας/strasse/istanbul/file", "/ΕΛΛΑΣ/ΟΔΟΣ/ΦΩΣ": "/ελλας/οδος/φως",
                "/ΕΛΛΑΣ/ΟΔΟΣ/ΦΩΣ/ﬂow.md": "/ελλας/οδος/φως/flow.md", "/ΕΛΛΑΣ/ΟΔΟΣ.txt": "/ελλας/οδοσ.txt",
            ]
            for (path, key) in expected {
                #expect(fake.entry(path)?.pathLower == key, "\(path)")
                #expect(fake.entry(key)?.pathLower == key, "\(key) names the same entry")
            }
            // Folding a path_lower again changes nothing, whatever the names.
            for entry in fake.entries {
                let key = try #require(entry.pathLower)
                #expect(fake.entry(key)?.pathLower == key)
            }
            let byPath = try await listAll(fake, ListFolderArg(path: "/ελλας/strasse")).entries
            #expect(byPath.map(describe) == ["folder:/ΕΛΛΑΣ/Straße/İstanbul"])
            // The client's own folding of the same path need not resolve, and here it does not.
            await #expect(throws: DropboxError.lookup(.notFound)) { try await fake.getMetadata(path: "/ελλασ/straße") }
            let id = try #require(fake.entry("/ΕΛΛΑΣ")?.id)
            #expect(try await fake.getMetadata(path: id + "/STRASSE/İstanbul").name == "İstanbul")
            #expect(try await listAll(fake, ListFolderArg(path: id)).entries.count == 4)
            #expect(InMemoryDropbox().addFolder("/ΕΛΛΑΣ").pathLower == "/ελλασ", "the default folds like the client")
        }

        @Test func aSeedReplaysAndAnotherSeedDiffers() async throws {
            func run(_ seed: UInt64) async throws -> [[String]] {
                let fake = Self.tree(.all, seed: 9, entries: 200, adversarialSeed: seed)
                let listing = try await listAll(fake, ListFolderArg(path: "", recursive: true, limit: 11))
                Self.change(fake, seed: 9, round: 1)
                let changes = try await continueAll(fake, from: listing.cursor)
                return (listing.pages + changes.pages).map { $0.entries.map(describe) + ["\($0.hasMore)"] }
            }
            let first = try await run(1)
            #expect(try await run(1) == first)
            #expect(try await run(2) != first)
        }

        @Test func modesParseFromTheirNames() {
            #expect(AdversarialModes(names: "shuffle,late-parents") == [.shuffle, .lateParents])
            #expect(AdversarialModes(names: " pages , repeat ") == [.pages, .repeats])
            #expect(
                AdversarialModes(names: "case-drift,fold,ghost-deletes,replace") == [
                    .caseDrift, .fold, .ghostDeletes, .replace,
                ])
            #expect(AdversarialModes(names: "all") == .all)
            #expect(AdversarialModes(names: "") == [])
            #expect(AdversarialModes(names: "shuffle,sideways") == nil)
            #expect(
                AdversarialModes.all.description
                    == "shuffle,late-parents,pages,repeat,case-drift,fold,ghost-deletes,replace")
            for mode in Self.singleModes {
                #expect(AdversarialModes(names: mode.description) == mode)
            }
            #expect(AdversarialModes.all == AdversarialModes(Self.singleModes))
            #expect(InMemoryDropbox(adversarial: .all).adversarial == .all)
        }

        // MARK: Trees and changes

        /// A tree of about `entries` random names (nasty ones included) plus names whose folding
        /// differs between the client and the `fold` mode, and a wide folder.
        static func tree(
            _ modes: AdversarialModes, seed: UInt64, entries: Int = 600, adversarialSeed: UInt64? = nil
        )
            -> InMemoryDropbox
        {
            let fake = InMemoryDropbox(adversarial: modes, adversarialSeed: adversarialSeed ?? seed)
            fake.addFile("/ΕΛΛΑΣ/Σ.txt", size: 3)
            fake.addFile("/ΕΛΛΑΣ/ΟΔΟΣ.txt", size: 3)
            fake.addFile("/ΕΛΛΑΣ/Straße/İstanbul/ﬁle", size: 5)
            fake.addFolder("/ΕΛΛΑΣ/ΟΔΟΣ/ΦΩΣ")
            fake.addFile("/ΕΛΛΑΣ/ΟΔΟΣ/ΦΩΣ/ﬂow.md", size: 1)
            for i in 0..<30 { fake.addFile("/Wide/W\(i % 5)/f\(i).txt", size: UInt64(i)) }
            var builder = CoreTests.TreeBuilder(fake, seed: seed, nasty: true)
            builder.add(entries: entries)
            return fake
        }

        /// Changes of every kind, chosen from `seed` and `round`: adds (several missing parents
        /// among them), folder moves with their subtrees, a folder replaced by a file and a file by
        /// a folder, deletes and modified files. Never a case-only rename (Dropbox reports none).
        static func change(_ fake: InMemoryDropbox, seed: UInt64, round: Int) {
            var random = SplitMix(seed: seed &* 31 &+ UInt64(round))
            var builder = CoreTests.TreeBuilder(fake, seed: seed &+ 1000 &* UInt64(round), nasty: true)
            func live(_ folders: Bool) -> [String] {
                fake.entries.filter { ($0.id != nil) && (Node.isFolder($0) == folders) }.compactMap(\.pathDisplay)
            }
            builder.folders = [""] + live(true)
            builder.add(entries: 30)
            fake.addFile("/New\(round)/ΝΕΟΣ/Deep/f.txt", size: 9)
            fake.addFolder("/New\(round)/Only/Folders")
            for index in 0..<3 {
                let from =
                    index == 0 && fake.entry("/Wide/W\(round)") != nil
                    ? "/Wide/W\(round)" : live(true).randomElement(using: &random)
                if let from { fake.move(from: from, to: "/Moved\(round)-\(index)/Into") }
            }
            if let folder = live(true).randomElement(using: &random) { fake.addFile(folder, size: 4) }
            if let file = live(false).randomElement(using: &random) {
                fake.addFolder(file)
                fake.addFile(file + "/inside.txt", size: 2)
            }
            for _ in 0..<8 {
                if let victim = fake.entries.randomElement(using: &random)?.pathDisplay { fake.delete(victim) }
            }
            for file in live(false).shuffled(using: &random).prefix(5) {
                fake.modifyFile(file, contents: [UInt8(round)])
            }
            builder.folders = [""] + live(true)
            builder.add(entries: 20)
        }

        // MARK: Checks

        /// What `applied` holds that the fake does not, and what it lacks (the first ten).
        static func differences(_ applied: ReferenceTree, _ fake: InMemoryDropbox) -> [String] {
            let live = Self.live(fake) { _ in true }
            let extra = applied.contents.subtracting(live).map { "extra \($0)" }
            let missing = live.subtracting(applied.contents).map { "missing \($0)" }
            return Array((extra + missing).sorted().prefix(10))
        }

        static func live(_ fake: InMemoryDropbox, _ keep: (String) -> Bool) -> Set<ReferenceTree.Node> {
            Set(fake.entries.compactMap(ReferenceTree.Node.init).filter { keep($0.key) })
        }

        /// What every mode keeps: pages within the limit, names equal to the last display
        /// component, and `deleted` entries in a listing only for paths that do not exist.
        static func expectHonest(_ listing: Drained, limit: Int, _ fake: InMemoryDropbox) {
            #expect(listing.pages.allSatisfy { $0.entries.count <= limit })
            #expect(listing.pages.last?.hasMore == false)
            for entry in listing.entries {
                #expect(ReferenceTree.components(entry.pathDisplay ?? "").last == entry.name, "\(describe(entry))")
                if case .deleted = entry {
                    #expect(liveEntry(fake, entry.pathLower) == nil, "\(describe(entry)) exists")
                }
            }
        }

        static func expectVisibleInListing(_ modes: AdversarialModes, _ listing: Drained, _ fake: InMemoryDropbox) {
            let live = Dictionary(fake.entries.map { ($0.pathLower ?? "", $0) }, uniquingKeysWith: { a, _ in a })
            let realIndex = Dictionary(
                fake.entries.enumerated().map { ($1.pathLower ?? "", $0) }, uniquingKeysWith: { a, _ in a })
            let entries = listing.entries
            let isReal = { (entry: Metadata) in live[entry.pathLower ?? ""].map { Node.sameKind($0, entry) } ?? false }
            // Where each real entry first comes.
            var first = [String: Int]()
            for (index, entry) in entries.enumerated() where isReal(entry) {
                if first[entry.pathLower ?? ""] == nil { first[entry.pathLower ?? ""] = index }
            }
            if modes.contains(.shuffle) {
                #expect(
                    listing.pages.contains { page in
                        let order = page.entries.filter(isReal).compactMap { realIndex[$0.pathLower ?? ""] }
                        return order != order.sorted()
                    }, "a page out of order")
            }
            let childBeforeParent = entries.enumerated().contains { index, entry in
                let parent = ReferenceTree.parent(of: entry.pathLower ?? "")
                return isReal(entry) && !parent.isEmpty && (first[parent] ?? -1) > index
            }
            if modes.contains(.lateParents) || modes.contains(.shuffle) {
                #expect(childBeforeParent, "a child before its parent")
            } else {
                #expect(!childBeforeParent)
            }
            if modes.contains(.pages) {
                #expect(listing.pages.contains { $0.entries.isEmpty && $0.hasMore }, "an empty page with has_more")
                #expect(listing.pages.dropLast().contains { (1..<37).contains($0.entries.count) }, "a short page")
            }
            if modes.contains(.repeats) {
                #expect(
                    zip(listing.pages, listing.pages.dropFirst()).contains { previous, page in
                        guard let head = page.entries.first else { return false }
                        return previous.entries.suffix(3).contains { identity($0) == identity(head) }
                    }, "a page starting with the previous page's last entries")
            }
            if modes.contains(.caseDrift) {
                #expect(
                    entries.contains { entry in
                        let parent = ReferenceTree.parent(of: entry.pathLower ?? "")
                        guard let real = live[parent]?.pathDisplay, let display = entry.pathDisplay else {
                            return false
                        }
                        return ReferenceTree.parent(of: display) != real
                    }, "an ancestor re-cased")
            } else {
                for entry in entries where isReal(entry) {
                    let parent = ReferenceTree.parent(of: entry.pathLower ?? "")
                    guard let real = live[parent]?.pathDisplay else { continue }
                    #expect(ReferenceTree.parent(of: entry.pathDisplay ?? "") == real)
                }
            }
            #expect(first["/ελλας"] != nil || !modes.contains(.fold), "ΕΛΛΑΣ folds with a final sigma")
            #expect(first["/ελλασ"] != nil || modes.contains(.fold), "ΕΛΛΑΣ folds like the client")
            let ghosts = entries.filter { if case .deleted = $0 { return true } else { return false } }
            if modes.contains(.ghostDeletes) {
                #expect(
                    ghosts.contains { live[ReferenceTree.parent(of: $0.pathLower ?? "")] != nil }, "a ghost in a folder"
                )
                #expect(
                    ghosts.contains { entry in
                        let parent = ReferenceTree.parent(of: entry.pathLower ?? "")
                        return !parent.isEmpty && live[parent] == nil
                    }, "a ghost in a missing folder")
            } else {
                #expect(ghosts.isEmpty)
            }
            let bogus = entries.enumerated().filter { index, entry in
                guard let real = live[entry.pathLower ?? ""], !Node.sameKind(real, entry) else { return false }
                return (first[entry.pathLower ?? ""] ?? -1) > index
            }
            #expect(bogus.isEmpty != modes.contains(.replace), "a bogus entry of the other kind before the real one")
        }

        static func expectVisibleInChanges(_ modes: AdversarialModes, _ changes: [Metadata], _ fake: InMemoryDropbox) {
            let deep = changes.firstIndex { $0.name == "f.txt" && ($0.pathLower ?? "").hasPrefix("/new1/") }
            let parent = changes.firstIndex { $0.name == "Deep" && ($0.pathLower ?? "").hasPrefix("/new1/") }
            #expect(deep != nil && parent != nil)
            if let deep, let parent {
                #expect((deep < parent) == modes.contains(.lateParents), "a file and its new parent")
            }
            let ghosts = changes.filter {
                if case .deleted = $0 { return $0.name.hasPrefix("ghost-") } else { return false }
            }
            #expect(ghosts.isEmpty != modes.contains(.ghostDeletes), "ghost deletes")
            for ghost in ghosts { #expect(liveEntry(fake, ghost.pathLower) == nil) }
            let identities = changes.map(identity)
            #expect((Set(identities).count < identities.count) == modes.contains(.repeats), "a change twice")
            let newKey = changes.first { $0.name == "ΝΕΟΣ" }?.pathLower
            #expect(newKey == (modes.contains(.fold) ? "/new1/νεος" : "/new1/νεοσ"))
            for change in changes {
                #expect(ReferenceTree.components(change.pathDisplay ?? "").last == change.name)
            }
            let drifted = changes.contains { change in
                guard let display = change.pathDisplay, let key = change.pathLower,
                    let real = liveEntry(fake, ReferenceTree.parent(of: key))?.pathDisplay
                else { return false }
                return ReferenceTree.parent(of: display) != real
            }
            if modes.contains(.caseDrift) { #expect(drifted, "an ancestor re-cased") }
        }

        /// The live entry at a key; nil for the root or nothing.
        static func liveEntry(_ fake: InMemoryDropbox, _ key: String?) -> Metadata? {
            guard let key, !key.isEmpty else { return nil }
            return fake.entry(key)
        }

        /// An entry as the same change would look again: kind, path_lower, and a file's rev.
        static func identity(_ entry: Metadata) -> String {
            switch entry {
            case .file(let file): return "file:\(file.pathLower ?? "") \(file.rev)"
            case .folder(let folder): return "folder:\(folder.pathLower ?? "") \(folder.id)"
            case .deleted(let deleted): return "deleted:\(deleted.pathLower ?? "")"
            }
        }

        enum Node {
            static func isFolder(_ entry: Metadata) -> Bool {
                if case .folder = entry { return true }
                return false
            }

            static func sameKind(_ a: Metadata, _ b: Metadata) -> Bool {
                switch (a, b) {
                case (.file, .file), (.folder, .folder), (.deleted, .deleted): return true
                default: return false
                }
            }
        }
    }
}

/// Whether `key` is `ancestor` or lies below it.
private func isWithin(_ key: String, _ ancestor: String) -> Bool {
    ancestor.isEmpty || key == ancestor || key.hasPrefix(ancestor + "/")
}
