// Names: what NodeName accepts and rejects (the kernel's limits), how FoldKey folds case and Unicode
// normalization for the tree's keys while comparing bytes, and how a listing holding names the
// kernel cannot carry hides exactly those entries with one warning each.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct NodeNameTests {
        @Test(arguments: [
            ("", NodeName.Rejection.empty),
            (".", .dot),
            ("..", .dotDot),
            ("a/b", .containsSlash),
            ("/", .containsSlash),
            ("trailing/", .containsSlash),
            ("a\u{0}b", .containsNUL),
            ("\u{0}", .containsNUL),
            (String(repeating: "x", count: 256), .tooLong(bytes: 256)),
            (String(repeating: "日", count: 86), .tooLong(bytes: 258)),
            (String(repeating: "é", count: 128), .tooLong(bytes: 256)),
        ])
        func rejects(raw: String, why: NodeName.Rejection) {
            #expect(NodeName.parse(raw) == .failure(why))
            #expect(NodeName(raw) == nil)
        }

        @Test(arguments: [
            String(repeating: "x", count: 255),
            String(repeating: "日", count: 85),  // 255 bytes of 3-byte characters
            String(repeating: "é", count: 127) + "a",  // 2-byte characters, 255 bytes
            String(repeating: "😀", count: 63) + "abc",  // 4-byte characters, 255 bytes
            "line\nbreak", "back\\slash", " leading", "trailing ", "  ", "...", ".hidden", "a.", "tab\there",
            "\u{7F}", "\r", "-rf", "*?[]", "$(x)", "é", "e\u{301}", "\u{FEFF}bom", "\u{301}combining first",
        ])
        func acceptsHostileButLegalNames(raw: String) throws {
            #expect(raw.utf8.count <= 255)
            let name = try #require(NodeName(raw))
            #expect(Array(name.string.utf8) == Array(raw.utf8))
            #expect(name.description == raw)
        }

        @Test func nfcAndNfdSpellingsAreDistinctNames() throws {
            let nfc = try #require(NodeName("caf\u{E9}"))
            let nfd = try #require(NodeName("cafe\u{301}"))
            #expect(nfc.string == nfd.string, "Swift's String == merges them")
            #expect(nfc != nfd, "names compare as bytes")
            #expect(Set([nfc, nfd]).count == 2)
            #expect(Array(nfc.string.utf8) == [0x63, 0x61, 0x66, 0xC3, 0xA9])
            #expect(Array(nfd.string.utf8) == [0x63, 0x61, 0x66, 0x65, 0xCC, 0x81])
        }

        @Test func maxBytesIs255() {
            #expect(NodeName.maxBytes == 255)
        }
    }

    @Suite struct FoldKeyTests {
        @Test(arguments: [
            ("README.md", "readme.md"),
            ("ABC", "abc"),
            ("caf\u{E9}", "CAF\u{C9}"),
            ("cafe\u{301}", "caf\u{E9}"),  // NFD vs NFC
            ("CAFE\u{301}", "caf\u{E9}"),  // NFD upper vs NFC lower
            ("\u{C5}ngstr\u{F6}m", "a\u{30A}ngstro\u{308}m"),
            ("\u{212B}", "\u{E5}"),  // ANGSTROM SIGN folds like Å
            ("\u{212A}elvin", "kelvin"),  // KELVIN SIGN
            ("\u{395}\u{39B}\u{39B}\u{391}\u{3A3}", "\u{3B5}\u{3BB}\u{3BB}\u{3B1}\u{3C3}"),
            ("\u{130}", "i\u{307}"),  // İ lowercases to i + combining dot
        ])
        func foldsCaseAndNormalization(a: String, b: String) {
            #expect(FoldKey(a) == FoldKey(b))
            #expect(FoldKey(a).hashValue == FoldKey(b).hashValue)
            #expect(Set([FoldKey(a), FoldKey(b)]).count == 1)
        }

        @Test(arguments: [
            ("a", "b"), ("a ", "a"), ("\u{3C3}", "\u{3C2}"), ("e", "\u{E9}"), ("ss", "\u{DF}"), ("a.txt", "a.TXT ")
        ])
        func keepsDifferentNamesApart(a: String, b: String) {
            #expect(FoldKey(a) != FoldKey(b))
        }

        @Test func foldedFormIsLowercaseNFCBytes() {
            #expect(FoldKey("MiXeD.TXT").folded == "mixed.txt")
            #expect(Array(FoldKey("CAFE\u{301}").folded.utf8) == Array("caf\u{E9}".utf8))
            #expect(FoldKey(alreadyFolded: "caf\u{E9}"[...]) == FoldKey("Cafe\u{301}"))
            #expect(FoldKey("plain-ascii_1").folded == "plain-ascii_1")
        }

        @Test func equalityAndHashingFollowTheFoldedBytes() {
            var generator = SplitMix(seed: 7)
            let pieces = ["a", "A", "\u{E9}", "e\u{301}", "\u{C9}", "E\u{301}", "\u{DF}", "\u{3A3}", "\u{3C3}", "k", "\u{212A}", " "]
            let names = (0..<300).map { _ in
                (0..<Int.random(in: 1...3, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            }
            for a in names {
                for b in names.prefix(40) {
                    let sameBytes = Array(FoldKey(a).folded.utf8) == Array(FoldKey(b).folded.utf8)
                    #expect((FoldKey(a) == FoldKey(b)) == sameBytes, "\(a.debugDescription) vs \(b.debugDescription)")
                    if sameBytes { #expect(FoldKey(a).hashValue == FoldKey(b).hashValue) }
                }
            }
        }
    }

    /// Listings that contain names the kernel cannot carry. Warnings are read from the test
    /// module's shared LogCapture (one global log sink), filtered by paths only these tests use.
    @Suite struct HiddenNameTests {
        /// Names the fake can hold, and markers for names it cannot build (served renamed).
        static let rejectedInFake = [".", "..", "nul\u{0}byte", String(repeating: "L", count: 256)]
        static let renames = ["zz-empty": "", "zz-slash": "a/b", "zz-slashes": "//"]
        static let rejected = rejectedInFake + renames.keys.sorted()
        static let accepted = [
            "ok.txt", "line\nbreak", "back\\slash", " lead", "trail ", "caf\u{E9}", String(repeating: "M", count: 255),
        ]

        /// `/<top>/mixed` holds every name above; `/<top>/rN` holds only rejected name N, so each
        /// warning can be told apart by its folder whatever the log line's format.
        static func makeClient(top: String) -> (InMemoryDropbox, RenamingClient) {
            let fake = InMemoryDropbox()
            for name in rejected + accepted { fake.addFile("/\(top)/mixed/\(name)", contents: Array(name.utf8)) }
            for (n, name) in rejected.enumerated() { fake.addFile("/\(top)/r\(n)/\(name)", size: 1) }
            return (fake, RenamingClient(fake, renames: renames))
        }

        static let acceptedSorted = accepted.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }

        @Test func aListingHidesExactlyTheRejectedNamesWithOneWarningEach() async throws {
            LogCapture.start()
            let top = "core-hidden-lazy"
            let (fake, client) = Self.makeClient(top: top)
            let clock = ManualClock()
            let fs = Filesystem(client: client, options: options(folderListingTTL: 10, pageLimit: 3, clock: clock))
            let mixed = try await inode(fs, "/\(top)/mixed")
            #expect(try await names(fs, mixed) == Self.acceptedSorted)
            for name in Self.rejectedInFake + ["zz-empty", "zz-slash"] {
                // A name over 255 bytes can be no entry's: it is too long before it is missing.
                let expected = name.utf8.count > NodeName.maxBytes ? FilesystemError.nameTooLong : .notFound
                await #expect(throws: expected) { try await fs.lookup(parent: mixed, name: name) }
            }
            for n in Self.rejected.indices {
                #expect(try await names(fs, inode(fs, "/\(top)/r\(n)")) == [], "r\(n)")
            }
            #expect(fs.entryCount == 1 + 1 + 1 + Self.accepted.count + Self.rejected.count)

            // Listed a second time (the TTL expired): still hidden, and no second warning.
            clock.advance(by: 11)
            let listings = fake.callCount(.listFolder)
            #expect(try await names(fs, mixed) == Self.acceptedSorted)
            for n in Self.rejected.indices { #expect(try await names(fs, inode(fs, "/\(top)/r\(n)")) == []) }
            #expect(fake.callCount(.listFolder) == listings + 1 + Self.rejected.count, "mixed and each rN again")

            #expect(LogCapture.lines(containing: "/\(top)/mixed/").count == Self.rejected.count)
            for (n, name) in Self.rejected.enumerated() {
                let lines = LogCapture.lines(containing: "/\(top)/r\(n)/")
                #expect(lines.count == 1, "\(name.debugDescription): \(lines)")
            }
            for name in Self.accepted where !name.contains("\n") && !name.contains("\\") {
                #expect(LogCapture.lines(containing: "/\(top)/mixed/\(name)").isEmpty)
            }
        }

        @Test func aRecursiveListingHidesTheSameNamesAndWhatIsBelowThem() async throws {
            LogCapture.start()
            let top = "core-hidden-prefetch"
            let (fake, client) = Self.makeClient(top: top)
            fake.addFile("/\(top)/ok-dir/visible.txt", size: 3)
            fake.addFile("/\(top)/hid-nul/nul\u{0}dir/below-nul.txt", size: 3)
            fake.addFile("/\(top)/hid-dotdot/../below-dotdot.txt", size: 3)  // a folder named ".."
            fake.addFile("/\(top)/hid-dot/./below-dot/deeper.txt", size: 3)  // a folder named "."
            let fs = Filesystem(client: client, options: options(pageLimit: 4, prefetch: true))
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the whole-tree listing completed") { try rootIsComplete(fs) }
            let requests = fake.calls

            #expect(try await names(fs, inode(fs, "/\(top)/mixed")) == Self.acceptedSorted)
            #expect(try await names(fs, inode(fs, "/\(top)/ok-dir")) == ["visible.txt"])
            for folder in ["hid-nul", "hid-dotdot", "hid-dot"] + Self.rejected.indices.map({ "r\($0)" }) {
                #expect(try await names(fs, inode(fs, "/\(top)/\(folder)")) == [], "\(folder)")
            }
            #expect(fake.calls == requests, "the fill completed every folder")
            #expect(LogCapture.lines(containing: "/\(top)/mixed/").count == Self.rejected.count)
            for n in Self.rejected.indices { #expect(LogCapture.lines(containing: "/\(top)/r\(n)/").count == 1) }
            for folder in ["hid-nul", "hid-dotdot", "hid-dot"] {
                #expect(LogCapture.lines(containing: "/\(top)/\(folder)/").count == 1, "\(folder)")
            }
            #expect(LogCapture.lines(containing: "below-").isEmpty, "entries below a hidden folder are skipped silently")
        }

        /// SEMANTICS.md: entries whose JSON could not be decoded are dropped with a warning; the
        /// listing itself succeeds.
        @Test func undecodableEntriesAreCountedInAWarningAndTheListingSucceeds() async throws {
            LogCapture.start()
            let fake = InMemoryDropbox()
            for name in ["a", "b", "c"] { fake.addFile("/core-undecodable/\(name)", size: 1) }
            let folderId = try #require(id(of: fake.entry("/core-undecodable")))
            let client = RenamingClient(fake, renames: [:], undecodablePerPage: 2)
            let fs = Filesystem(client: client, options: options(pageLimit: 2))
            #expect(try await names(fs, inode(fs, "/core-undecodable")) == ["a", "b", "c"])
            let lines = LogCapture.lines(containing: folderId).filter { $0.contains("undecodable") }
            #expect(!lines.isEmpty, "no warning about the undecodable entries")
        }

        /// The memory of hidden names forgets an entry Dropbox deleted, so a mount that runs for
        /// weeks beside an app that keeps making and removing files with names over 255 bytes (a
        /// download's ".part" renamed away, long titles) stays level instead of keeping every such
        /// path until unmount.
        @Test func hiddenNamesOfDeletedEntriesAreForgotten() {
            var t = LiveTree.State(tree: MetadataTree(folderTime: 0))
            var invalidations: [Invalidation] = []
            t.tree.setComplete(MetadataTree.rootIndex, true, at: 0)
            let long = String(repeating: "\u{9577}", count: 90)  // 270 bytes
            for i in 0..<50 {
                let path = "/\(long)-\(i).part"
                for entry in [ListingOrderTests.file(path, path), ListingOrderTests.deleted(path, path)] {
                    t.apply([entry], as: .changes, changeEpoch: 0, invalidations: &invalidations)
                }
            }
            #expect(t.hiddenPaths.isEmpty, "\(t.hiddenPaths.count) hidden paths kept")
            #expect(t.tree.liveCount == 1)
        }

        /// SEMANTICS.md: if the server ever sent two siblings with the same folded name, the later
        /// one in listing order wins.
        @Test(arguments: [false, true])
        func twoSiblingsWithOneFoldedNameKeepTheLaterOne(prefetch: Bool) async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/d/a-one", size: 1)
            fake.addFile("/d/zz-dup", size: 2)
            let client = RenamingClient(fake, renames: ["zz-dup": "A-One"])
            let fs = Filesystem(client: client, options: options(prefetch: prefetch))
            fs.startSync()
            defer { fs.stop() }
            if prefetch { try await waitUntil("the whole-tree listing completed") { try rootIsComplete(fs) } }
            let d = try await inode(fs, "/d")
            #expect(try await names(fs, d) == ["A-One"])
            #expect(try await fs.lookup(parent: d, name: "A-One").size == 2)
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: d, name: "a-one") }
        }
    }
}
