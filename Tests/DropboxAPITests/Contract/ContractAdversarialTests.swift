// The contract under every adversarial mode (AdversarialModes.swift; the HTTP fake's
// --adversarial), for both fakes: whatever order, page sizes, repeats, re-cased ancestors, foldings,
// ghost deletes and bogus entries a mode serves, the pages applied in order with the documented
// rules (docs/SEMANTICS.md, "Listing order and shapes") give the account exactly, nothing lost and
// nothing left over, for listings, for deltas after changes, and for a listing during which the
// account changes.

import DropboxAPI
import DropboxTestSupport
import Testing

/// A mode set to run and the seed of its randomness.
struct ModeCase: Sendable, CustomTestStringConvertible {
    var modes: AdversarialModes
    var seed: UInt64

    var testDescription: String { "\(modes.description.isEmpty ? "none" : modes.description) seed \(seed)" }

    /// Each mode alone, then all of them with a few seeds.
    static let all: [ModeCase] =
        [AdversarialModes.shuffle, .lateParents, .pages, .repeats, .caseDrift, .fold, .ghostDeletes, .replace].map {
            ModeCase(modes: $0, seed: 1)
        } + (1...3).map { ModeCase(modes: .all, seed: $0) }
}

@Suite struct ContractAdversarialTests {
    @Test(arguments: FakeKind.allCases, ModeCase.all)
    func listingsAndDeltasGiveTheAccount(kind: FakeKind, mode: ModeCase) async throws {
        let fake = try await kind.make(adversarial: mode.modes, seed: mode.seed)
        defer { fake.stop() }
        try await buildContractTree(fake)
        let context = "\(kind) \(mode.testDescription)"
        let scopes: [(String, Bool, UInt32)] = [
            ("", true, 5), ("", true, 2000), ("/r", true, 3), ("/r", false, 2), ("/r/a", true, 1),
        ]
        var states: [(scope: String, recursive: Bool, folded: FoldedTree, cursor: String)] = []
        for (scope, recursive, limit) in scopes {
            let (folded, cursor) = try await expectListingGivesAccount(
                fake, scope: scope, recursive: recursive, limit: limit,
                "\(context): listing \(scope.isEmpty ? "root" : scope) recursive \(recursive) limit \(limit)")
            states.append((scope, recursive, folded, cursor))
        }

        try await expectModesShow(fake, mode.modes, context)

        try await makeContractChanges(fake)
        let account = try await fake.account()
        for var state in states {
            let where_ = "\(context): delta \(state.scope.isEmpty ? "root" : state.scope) recursive \(state.recursive)"
            let delta = try await changePages(fake.client, since: state.cursor)
            state.folded.apply(delta.pages)
            expectSameTree(
                state.folded.nodes, expectedNodes(account, scope: state.scope, recursive: state.recursive), where_)
            #expect(state.folded.unconfirmedParents(scope: state.scope).isEmpty, "\(where_)")
            // A second round finds nothing real (a ghost delete changes nothing).
            let again = try await changePages(fake.client, since: delta.cursor)
            var settled = state.folded
            settled.apply(again.pages)
            #expect(settled.nodes == state.folded.nodes, "\(where_): a second round changed the tree")
        }
    }

    @Test(
        arguments: FakeKind.allCases,
        [ModeCase(modes: [], seed: 1), ModeCase(modes: .all, seed: 4), ModeCase(modes: .all, seed: 5)])
    func aListingDuringChangesThenItsDeltaGivesTheAccount(kind: FakeKind, mode: ModeCase) async throws {
        let fake = try await kind.make(adversarial: mode.modes, seed: mode.seed)
        defer { fake.stop() }
        try await buildContractTree(fake)
        let context = "\(kind) \(mode.testDescription)"
        var folded = FoldedTree()
        var page = try await fake.client.listFolder(ListFolderArg(path: "", recursive: true, limit: 4))
        folded.apply(page.entries)
        var pages = 1
        var changed = false
        while page.hasMore {
            if pages == 3 {
                try await makeContractChanges(fake)
                changed = true
            }
            page = try await fake.client.listFolderContinue(cursor: page.cursor)
            folded.apply(page.entries)
            pages += 1
            try #require(pages < maxPages)
        }
        #expect(changed, "\(context): the listing ended before the changes")
        folded.apply(try await changePages(fake.client, since: page.cursor).pages)
        expectSameTree(folded.nodes, expectedNodes(try await fake.account(), scope: "", recursive: true), context)
        #expect(folded.unconfirmedParents(scope: "").isEmpty, "\(context)")
    }
}

/// Checks that each mode in `modes` really changes what the fake serves, so the scenarios above
/// test what they claim: on a recursive listing of the root in pages of 5, and on the one-page
/// listing of /r/many (20 files, sorted when nothing shuffles them).
func expectModesShow(_ fake: any FakeUnderTest, _ modes: AdversarialModes, _ context: String) async throws {
    let listing = try await listPages(fake.client, ListFolderArg(path: "", recursive: true, limit: 5))
    let entries = listing.entries
    let accountIds = Set(try await fake.account().map(\.id))
    let ids = entries.compactMap { fileMetadata($0)?.id ?? folderMetadata($0)?.id }
    if modes.contains(.ghostDeletes) {
        #expect(entries.contains { if case .deleted = $0 { true } else { false } }, "\(context): no ghost delete")
    }
    if modes.contains(.repeats) {
        #expect(Set(ids).count < ids.count, "\(context): nothing repeated")
    }
    if modes.contains(.replace) {
        #expect(!Set(ids).isSubset(of: accountIds), "\(context): no bogus entry")
    }
    if modes.contains(.pages) {
        #expect(listing.pages.dropLast().contains { $0.entries.count != 5 }, "\(context): every page full")
    }
    if modes.contains(.lateParents) {
        let keys = entries.compactMap(\.pathLower)
        let late = keys.enumerated().contains { index, key in keys[index...].contains(parentKey(key)) }
        #expect(late, "\(context): every parent came before its children")
    }
    if modes.contains(.caseDrift) {
        #expect(entries.contains { $0.pathDisplay?.hasPrefix("/R/") == true }, "\(context): no ancestor re-cased")
    }
    if modes.contains(.fold) {
        #expect(entries.contains { $0.pathLower == "/r/strasse" }, "\(context): path_lower folded as the client does")
    }
    if modes.contains(.shuffle) {
        // The real files in the order they first came (other modes add repeats, ghosts, bogus entries).
        var names: [String] = []
        for entry in try await listPages(fake.client, ListFolderArg(path: "/r/many")).entries {
            guard let file = fileMetadata(entry), accountIds.contains(file.id), !names.contains(file.name) else {
                continue
            }
            names.append(file.name)
        }
        #expect(names.count == 20 && names != names.sorted(), "\(context): the listing came sorted")
    }
}
