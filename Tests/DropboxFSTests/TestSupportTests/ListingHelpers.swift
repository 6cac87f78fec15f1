// Helpers for the DropboxTestSupport tests: drain a listing or a delta to the end, and describe
// entries as short strings ("file:/a/b.txt") so delta sequences read as one comparison.

import DropboxAPI
import DropboxTestSupport

struct Drained {
    var entries: [Metadata]
    var cursor: String
    var pages: [ListFolderResult]
}

/// Calls list_folder and then continue until has_more is false.
func listAll(_ client: some DropboxClient, _ arg: ListFolderArg) async throws -> Drained {
    var page = try await client.listFolder(arg)
    var drained = Drained(entries: page.entries, cursor: page.cursor, pages: [page])
    while page.hasMore {
        page = try await client.listFolderContinue(cursor: page.cursor)
        drained.entries += page.entries
        drained.cursor = page.cursor
        drained.pages.append(page)
    }
    return drained
}

/// Calls continue from `cursor` until has_more is false.
func continueAll(_ client: some DropboxClient, from cursor: String) async throws -> Drained {
    var drained = Drained(entries: [], cursor: cursor, pages: [])
    repeat {
        let page = try await client.listFolderContinue(cursor: drained.cursor)
        drained.entries += page.entries
        drained.cursor = page.cursor
        drained.pages.append(page)
    } while drained.pages.last?.hasMore == true
    return drained
}

/// "file:/A/b.txt", "folder:/A", "deleted:/A/c" (display paths).
func describe(_ entry: Metadata) -> String {
    switch entry {
    case .file(let f): return "file:" + (f.pathDisplay ?? "?")
    case .folder(let f): return "folder:" + (f.pathDisplay ?? "?")
    case .deleted(let d): return "deleted:" + (d.pathDisplay ?? "?")
    }
}

extension Metadata {
    var fileMetadata: FileMetadata? {
        if case .file(let f) = self { return f }
        return nil
    }

    var id: String? {
        switch self {
        case .file(let f): return f.id
        case .folder(let f): return f.id
        case .deleted: return nil
        }
    }
}

/// A fake with a small tree: /A (folder) holding b.txt and Sub/c.txt, and /top.txt.
func smallTree() -> InMemoryDropbox {
    let fake = InMemoryDropbox()
    fake.addFile("/A/b.txt", contents: Array("hello".utf8))
    fake.addFile("/A/Sub/c.txt", contents: Array("world!".utf8))
    fake.addFile("/top.txt", contents: [1, 2, 3])
    return fake
}
