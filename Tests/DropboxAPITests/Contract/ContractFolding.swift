// What the contract scenarios compare: the pages of a listing and of its deltas, folded with the
// rules Dropbox documents for clients (docs/SEMANTICS.md), against the account the fake holds.
// Entries are applied in order: `file` replaces whatever is at its path, subtree included; `folder`
// keeps the children already there and replaces a file; `deleted` removes the path and its subtree
// and is ignored when nothing is there; a missing parent is made up from the path until its own
// entry arrives, replacing a file that stands where it must be. Trees are compared by id, name,
// kind, revision, size, content_hash and parent's id, so a fake whose path_lower folds otherwise
// than the client (the `fold` mode) or re-cases ancestors (`case-drift`) is compared fairly.

import DropboxAPI
import Testing

/// One entry of a tree as compared: everything but its paths, plus its parent's id.
struct TreeNode: Sendable, Hashable, CustomStringConvertible {
    var id: String
    var isFolder: Bool
    var name: String
    /// nil for an entry directly in the compared scope.
    var parentId: String?
    var rev: String?
    var size: UInt64?
    var contentHash: ContentHash?

    var description: String {
        isFolder
            ? "folder \(name) (\(id), in \(parentId ?? "scope"))"
            : "file \(name) (\(id), in \(parentId ?? "scope"), rev \(rev ?? "-"), \(size ?? 0) B)"
    }
}

/// The key of the folder holding `key` ("" for a top-level entry).
func parentKey(_ key: String) -> String {
    guard let slash = key.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
    return String(key[..<slash])
}

/// The client's state after applying listing and delta pages in order.
struct FoldedTree {
    private(set) var entries: [String: Metadata] = [:]
    /// Parents made up from paths whose own entry has not come yet.
    private(set) var placeholders: Set<String> = []
    /// Entries that came without a path_lower (never expected from a fake).
    private(set) var pathless = 0

    mutating func apply(_ pages: [ListFolderResult]) {
        for page in pages { apply(page.entries) }
    }

    mutating func apply(_ page: [Metadata]) {
        for entry in page { apply(entry) }
    }

    mutating func apply(_ entry: Metadata) {
        guard let key = entry.pathLower, !key.isEmpty else {
            pathless += 1
            return
        }
        switch entry {
        case .deleted:
            removeSubtree(key)
        case .file:
            removeSubtree(key)
            makeParents(of: key)
            entries[key] = entry
        case .folder:
            if case .file = entries[key] { entries[key] = nil }
            makeParents(of: key)
            entries[key] = entry
            placeholders.remove(key)
        }
    }

    private mutating func makeParents(of key: String) {
        var parent = parentKey(key)
        while !parent.isEmpty {
            if case .file = entries[parent] { entries[parent] = nil }
            if entries[parent] == nil { placeholders.insert(parent) }
            parent = parentKey(parent)
        }
    }

    private mutating func removeSubtree(_ key: String) {
        let prefix = key + "/"
        entries[key] = nil
        for other in entries.keys where other.hasPrefix(prefix) { entries[other] = nil }
        placeholders.remove(key)
        placeholders = placeholders.filter { !$0.hasPrefix(prefix) }
    }

    /// Made-up parents still waiting for their entry, not counting the listed folder `scope` and its
    /// ancestors (which no listing of `scope` confirms).
    func unconfirmedParents(scope: String) -> Set<String> {
        placeholders.filter { p in p != scope && !scope.hasPrefix(p + "/") }
    }

    var nodes: Set<TreeNode> {
        var out = Set<TreeNode>()
        for (key, entry) in entries {
            var parentId: String?
            switch entries[parentKey(key)] {
            case .folder(let parent): parentId = parent.id
            default: parentId = nil
            }
            switch entry {
            case .file(let f):
                out.insert(
                    TreeNode(
                        id: f.id, isFolder: false, name: f.name, parentId: parentId, rev: f.rev, size: f.size,
                        contentHash: f.contentHash))
            case .folder(let f):
                out.insert(TreeNode(id: f.id, isFolder: true, name: f.name, parentId: parentId))
            case .deleted:
                break
            }
        }
        return out
    }
}

/// True when `key` is `scope` or lies below it ("" is the root and holds everything).
func isWithin(_ key: String, _ scope: String) -> Bool {
    scope.isEmpty || key == scope || key.hasPrefix(scope + "/")
}

/// The account's entries a listing of `scope` covers (recursive: the scope folder itself unless it
/// is the root, and everything below; otherwise the direct children), as compared nodes.
func expectedNodes(_ account: [AccountEntry], scope: String, recursive: Bool) -> Set<TreeNode> {
    let selected = account.filter { entry in
        recursive ? isWithin(entry.pathLower, scope) : parentKey(entry.pathLower) == scope
    }
    var byKey: [String: AccountEntry] = [:]
    for entry in selected { byKey[entry.pathLower] = entry }
    return Set(
        selected.map { entry in
            let parent = byKey[parentKey(entry.pathLower)]
            return TreeNode(
                id: entry.id, isFolder: entry.isFolder, name: entry.name,
                parentId: parent?.isFolder == true ? parent?.id : nil, rev: entry.rev, size: entry.size,
                contentHash: entry.contentHash)
        })
}

/// Records what one tree has and the other lacks.
func expectSameTree(
    _ got: Set<TreeNode>, _ want: Set<TreeNode>, _ context: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    let missing = want.subtracting(got).map(\.description).sorted()
    let extra = got.subtracting(want).map(\.description).sorted()
    #expect(
        missing.isEmpty && extra.isEmpty, "\(context): missing \(missing), extra \(extra)",
        sourceLocation: sourceLocation)
}

/// The pages of a listing: list_folder, then continue until has_more is false.
struct Pages {
    var pages: [ListFolderResult]
    var cursor: String { pages.last?.cursor ?? "" }
    var entries: [Metadata] { pages.flatMap(\.entries) }
}

/// No listing in these scenarios needs anywhere near this many pages; a fake that keeps answering
/// has_more would otherwise hang the test.
let maxPages = 5_000

struct EndlessListing: Error, CustomStringConvertible {
    var description: String { "more than \(maxPages) pages with has_more" }
}

func listPages(_ client: any DropboxClient, _ arg: ListFolderArg) async throws -> Pages {
    var page = try await client.listFolder(arg)
    var pages = [page]
    while page.hasMore {
        guard pages.count < maxPages else { throw EndlessListing() }
        page = try await client.listFolderContinue(cursor: page.cursor)
        pages.append(page)
    }
    return Pages(pages: pages)
}

/// Every change since `cursor`: continue until has_more is false.
func changePages(_ client: any DropboxClient, since cursor: String) async throws -> Pages {
    var pages: [ListFolderResult] = []
    var cursor = cursor
    while true {
        guard pages.count < maxPages else { throw EndlessListing() }
        let page = try await client.listFolderContinue(cursor: cursor)
        pages.append(page)
        cursor = page.cursor
        if !page.hasMore { return Pages(pages: pages) }
    }
}

/// Lists `scope`, folds the pages, and checks they give the account's entries there exactly.
@discardableResult
func expectListingGivesAccount(
    _ fake: any FakeUnderTest, scope: String, recursive: Bool, limit: UInt32?, _ context: String,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> (folded: FoldedTree, cursor: String) {
    let listing = try await listPages(fake.client, ListFolderArg(path: scope, recursive: recursive, limit: limit))
    var folded = FoldedTree()
    folded.apply(listing.pages)
    let want = expectedNodes(try await fake.account(), scope: scope, recursive: recursive)
    expectSameTree(folded.nodes, want, context, sourceLocation: sourceLocation)
    #expect(
        folded.unconfirmedParents(scope: scope).isEmpty, "\(context): parents never listed",
        sourceLocation: sourceLocation)
    #expect(folded.pathless == 0, sourceLocation: sourceLocation)
    return (folded, listing.cursor)
}
